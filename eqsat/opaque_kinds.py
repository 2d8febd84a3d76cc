"""What Inductor makes of the ops with no row in the registry (lowering keeps them ``Opaque``): the
cost model's table, read by the fusion model (``eqsat.fusion``) to price an opaque call as the kernel
Inductor generates for it instead of an extern call.

The ops Inductor generates code for are listed by what that code is: a lowering in
``torch/_inductor/lowering.py`` (no fallback), so the op fuses like a pointwise op or a reduction of
ours instead of costing an extern call. ``scatter``: Inductor's ``Scatter``, a generated kernel of
its own that fuses with nothing, writing in place into a clone of its first input (a fusible
pointwise kernel); the values are computed inside it. ``view``: a no-op alias, or a call that makes
no kernel at all. ``source``: a buffer allocated, not computed.
Opaque ops not listed here are extern calls (fallbacks: ``_embedding_bag``, SDPA, convolutions, ...).
Aten names are what post-grad graphs hold; Torch-IR functions and methods (``torch.arange``,
``torch.nn.functional.embedding``, ``x.new_ones``) are looked up by their last name, which stays the
same across torch versions (Dynamo records ``torch.embedding`` in one, the functional in another):
whole transformers models (zoo, transformers 5.17) price their embeddings, position ids, masks and
rotary tables as the kernels Inductor fuses them into.
"""
from __future__ import annotations

from .ops import DECOMPOSED_ATTENTION, OPAQUE_KEY_PREFIX, SDPA_NAME, op_name_of_key

TORCH_IR_KINDS: dict[str, str] = {
    SDPA_NAME + DECOMPOSED_ATTENTION: "attention",
    "embedding_bag": "embedding_bag",  # offsets and flattened ids first (``eqsat.fusion``)
    "sort": "sort", "index_assign": "index_assign",  # Triton: a kernel when small, a scatter (``eqsat.fusion``)
    **dict.fromkeys(["embedding", "arange", "gather", "where", "diff", "zeros", "ones", "full", "zeros_like",
                     "ones_like", "full_like", "new_zeros", "new_ones", "new_full", "masked_fill", "getitem",
                     "max_pool2d"], "pointwise"),
    **dict.fromkeys(["cumsum"], "reduction"),
    **dict.fromkeys(["empty", "empty_like", "new_empty"], "source"),
    **dict.fromkeys(["_log_api_usage_once"], "view"),
}
OPAQUE_KINDS: dict[str, str] = {
    **dict.fromkeys(["aten.var_mean.correction", "aten.var.correction", "aten.any.dims", "aten.any.dim",
                     "aten.any.default", "aten.max.dim", "aten.min.dim", "aten.argmax.default",
                     "aten.argmin.default"], "reduction"),
    **dict.fromkeys(["aten.full.default", "aten.scalar_tensor.default", "prims.iota.default",
                     "aten.embedding.default", "aten.index.Tensor", "aten._unsafe_index.Tensor",
                     "aten._unsafe_masked_index.default", "aten.gather.default", "aten.arange.start_step",
                     "aten.clamp_min.default", "aten.clamp_max.default", "prims.fma.default",
                     "prims.convert_element_type.default", "aten.slice_scatter.default",
                     "aten.select_scatter.default"], "pointwise"),
    **dict.fromkeys(["aten.index_put.default", "aten._unsafe_index_put.default", "aten.scatter_add.default",
                     "aten._unsafe_masked_index_put_accumulate.default"], "scatter"),
    **dict.fromkeys(["aten.alias.default"], "view"),
    **dict.fromkeys(["aten.sort.default", "aten.sort.stable"], "sort"),
}

def opaque_kind(key: str) -> str:
    """What Inductor makes of the opaque op keyed ``key``: an ``OPAQUE_KINDS`` kind for an Aten op, a
    ``TORCH_IR_KINDS`` kind for a Torch-IR one, else ``extern``."""
    label = op_name_of_key(key).removeprefix(OPAQUE_KEY_PREFIX).removeprefix("torch._ops.")
    if label.startswith(("aten.", "prims.")):
        return OPAQUE_KINDS.get(label, "extern")
    return TORCH_IR_KINDS.get(label.rsplit(".", 1)[-1], "extern")
