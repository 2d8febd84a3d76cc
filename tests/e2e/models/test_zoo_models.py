"""The zoo of `python -m bench zoo`: every model builds from its config at size tiny (no download)
and runs an eager forward and a sum-loss backward on CPU, with the architecture the zoo promises."""
import importlib.util

import pytest
import torch

from bench.models import ZOO
from bench.models.split_cat import SplitCatTwoStage
from bench.runner import make_step, training_inputs


# The third-party libraries the zoo's library models come from; transformers is every one's last resort.
OPTIONAL = {"transformers", "timm", "torchvision"}


def _build(name: str):
    """The model at size tiny; skipped only when the third-party library it needs is not installed, so
    a broken import of our own code (or a library that is installed but fails) is a failure."""
    try:
        return ZOO[name]("tiny")
    except ModuleNotFoundError as err:
        missing = (err.name or "").split(".")[0]  # the zoo names the library it misses (name=...)
        if missing in OPTIONAL and importlib.util.find_spec(missing) is None:
            pytest.skip(f"{name}: {err}")
        raise


@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_model_runs_forward_and_backward(name):
    model, inputs = _build(name)
    inputs = training_inputs(inputs)
    out = make_step(model, model, inputs, "train")()
    assert isinstance(out, torch.Tensor) and torch.isfinite(out).all()
    missing = [name for name, p in model.named_parameters() if p.grad is None]
    assert not missing, f"parameters off the path to the output: {missing}"
    assert all(torch.isfinite(p.grad).all() for p in model.parameters())


def test_zoo_covers_the_architectures_of_issue_29():
    """Whole library models, our recommendation models and the two split-cat programs."""
    assert {"gpt2", "bert", "t5", "llama", "qwen2", "mixtral", "phi3", "bart", "vit", "resnet18"} <= set(ZOO)
    assert {"dhen", "wukong", "interformer", "dlrm", "recsys_tower", "split_cat_two_stage",
            "ten_unequal_linears"} <= set(ZOO)


def test_transformer_models_are_whole_and_say_what_they_are():
    """Qwen2 has grouped-query attention, Mixtral 8 experts with 2 per token, attention is SDPA where
    the class has it; and ``source`` records library, class and attention for the report."""
    qwen, _ = _build("qwen2")
    cfg = qwen.model.config
    assert cfg.num_key_value_heads < cfg.num_attention_heads
    assert "Qwen2Model" in qwen.source and "attention sdpa" in qwen.source
    mixtral, _ = _build("mixtral")
    assert (mixtral.model.config.num_local_experts, mixtral.model.config.num_experts_per_tok) == (8, 2)
    assert "experts" in mixtral.source
    bart, (ids, decoder_ids) = _build("bart")
    assert ids.shape == decoder_ids.shape and len(bart.model.decoder.layers) >= 1
    assert "transformers" in ZOO["gpt2"]("tiny")[0].source


def test_split_cat_two_stage_piece_count_is_a_parameter():
    model, (x,) = ZOO["split_cat_two_stage"](8)
    assert model.pieces == 8 and x.shape[1] == 8
    expected = torch.tanh(torch.sigmoid(x) * 2) + 1  # both stages are elementwise: the cats put it back
    torch.testing.assert_close(model(x), expected)
    with pytest.raises(ValueError, match="multiple of 4"):
        SplitCatTwoStage(6)


def test_ten_unequal_linears_are_optimus_test_module():
    model, (x,) = ZOO["ten_unequal_linears"]("tiny")
    widths = [linear.out_features for linear in model.first]
    assert widths == [10, 9, 8, 7, 6, 10, 9, 8, 7, 6] and all(linear.bias is not None for linear in model.first)
    assert model(x).shape == (x.shape[0] * sum(widths) // 10, sum(widths))
