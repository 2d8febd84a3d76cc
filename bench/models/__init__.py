"""Benchmark models: name → builder(size, device, dtype) -> (module, example inputs)."""

from bench.models import hf_blocks, parity, recsys, split_cat, zoo

REGISTRY = {
    "dhen": recsys.build_dhen,
    "wukong": recsys.build_wukong,
    "interformer": recsys.build_interformer,
    "dlrm": recsys.build_dlrm,
    "recsys_tower": recsys.build_recsys_tower,
    "wide_recsys": recsys.build_wide_recsys,
    "split_cat_64": split_cat.build_split_cat_64,
    "split_cat_mixed": split_cat.build_split_cat_mixed,
    "split_stack_unbind": split_cat.build_split_stack_unbind,
    "split_cat_two_stage": split_cat.build_split_cat_two_stage,
    "ten_unequal_linears": split_cat.build_ten_unequal_linears,
    "illustrative": split_cat.build_illustrative,
    "gpt2_block": hf_blocks.build_gpt2,
    "bert_layer": hf_blocks.build_bert,
    "t5_block": hf_blocks.build_t5,
    "llama": hf_blocks.build_llama,
    "bart": hf_blocks.build_bart,
    "vit": hf_blocks.build_vit,
    **parity.BUILDERS,
}

NEEDS_TRANSFORMERS = frozenset({"gpt2_block", "bert_layer", "t5_block", "llama", "bart", "vit"})
# issue 18's small programs: tested by tests/rules/test_split_cat_parity.py and tests/e2e/models/test_parity_models.py,
# not by the suites that sweep every model (some return tuples, one is random)
PARITY = frozenset(parity.BUILDERS)

# `python -m bench zoo`: whole library models (their own namespace: the zoo's "llama", "bart" and "vit"
# are whole models, embeddings to final norm, not the blocks above), our recommendation models and two
# split-cat programs
ZOO = {**zoo.MODELS, **{name: REGISTRY[name] for name in (
    "dhen", "wukong", "interformer", "dlrm", "recsys_tower", "split_cat_two_stage", "ten_unequal_linears")}}
