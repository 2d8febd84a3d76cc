"""The op table: every tensor op the term language knows, as data.

One row per op drives lowering (fx_bridge looks up torch targets by these names), raising (the row
says which torch callable rebuilds it) and the cost model (the category says what Inductor does with
it). The engine itself never imports torch: targets are plain names resolved in ``fx_bridge``.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Category(str, Enum):
    VIEW = "view"            # free: a new stride/offset over the same storage
    POINTWISE = "pointwise"  # fuses with producers and consumers into one kernel
    REDUCTION = "reduction"  # fuses its pointwise producers; ends a fusion group
    MATMUL = "matmul"        # extern kernel (cuBLAS / mkldnn): one launch each, never fused
    COPY = "copy"            # a real copy kernel unless Inductor writes inputs in place (cat)
    NORM = "norm"            # layer_norm / softmax: a reduction kernel (or two)
    SOURCE = "source"        # inputs, parameters, scalars: no kernel
    OPAQUE = "opaque"        # unknown to us: assumed one kernel, never rewritten


@dataclass(frozen=True)
class Op:
    """One op: the term constructor that carries it and the torch spelling that rebuilds it.

    ``torch`` names a function in the ``torch`` namespace; ``aten`` an overload packet in
    ``torch.ops.aten``. ``ctor`` is the egglog constructor (pointwise ops share ``Unary`` /
    ``Binary`` / ``Ternary`` with the op name as first argument).
    """

    name: str
    ctor: str
    category: Category
    torch: str | None = None
    aten: str | None = None


def _pointwise(ctor: str, names: str) -> list[Op]:
    return [Op(n, ctor, Category.POINTWISE, torch=n, aten=n) for n in names.split()]


UNARY = _pointwise(
    "Unary",
    "relu gelu silu sigmoid tanh exp exp2 expm1 log log1p log2 log10 neg abs sqrt rsqrt reciprocal sin cos"
    " erf floor ceil round trunc sign logical_not bitwise_not isnan isinf isfinite square"
    " nan_to_num clamp hardtanh hardsigmoid hardswish leaky_relu elu selu celu mish softplus relu6"
    " logit sgn frac to_dtype",
)
BINARY = _pointwise(
    "Binary",
    "add sub mul div pow maximum minimum fmod remainder atan2 eq ne lt le gt ge logical_and"
    " logical_or logical_xor bitwise_and bitwise_or bitwise_xor floor_divide true_divide rsub",
)
TERNARY = _pointwise("Ternary", "where addcmul addcdiv lerp")

REDUCTIONS = [
    Op(n, "Reduce", Category.REDUCTION, torch=n, aten=n)
    for n in "sum mean amax amin prod".split()
]

STRUCTURAL = [
    Op("input", "Input", Category.SOURCE),
    Op("param", "Param", Category.SOURCE),
    Op("scalar", "Scalar", Category.SOURCE),
    Op("none", "NoneT", Category.SOURCE),
    Op("narrow", "Narrow", Category.VIEW, torch="narrow", aten="slice"),
    Op("view", "View", Category.VIEW, torch="reshape", aten="view"),
    Op("permute", "Permute", Category.VIEW, torch="permute", aten="permute"),
    Op("expand", "Expand", Category.VIEW, torch="expand", aten="expand"),
    Op("unsqueeze", "Unsqueeze", Category.VIEW, torch="unsqueeze", aten="unsqueeze"),
    Op("squeeze", "Squeeze", Category.VIEW, torch="squeeze", aten="squeeze"),
    Op("getitem", "Get", Category.VIEW),
    Op("split", "Split", Category.VIEW, torch="split", aten="split_with_sizes"),
    Op("contiguous", "Contiguous", Category.COPY, torch="contiguous", aten="clone"),
    Op("cat", "Cat", Category.COPY, torch="cat", aten="cat"),
    Op("stack", "Stack", Category.COPY, torch="stack", aten="stack"),
    Op("linear", "Linear", Category.MATMUL, torch="nn.functional.linear", aten="addmm"),
    Op("mm", "Mm", Category.MATMUL, torch="mm", aten="mm"),
    Op("bmm", "Bmm", Category.MATMUL, torch="bmm", aten="bmm"),
    Op("matmul", "Matmul", Category.MATMUL, torch="matmul", aten="matmul"),
    Op("addmm", "Addmm", Category.MATMUL, torch="addmm", aten="addmm"),
    Op("baddbmm", "Baddbmm", Category.MATMUL, torch="baddbmm", aten="baddbmm"),
    Op("layer_norm", "LayerNorm", Category.NORM, torch="nn.functional.layer_norm"),
    Op("softmax", "Softmax", Category.NORM, torch="softmax", aten="_softmax"),
    Op("log_softmax", "Softmax", Category.NORM, torch="log_softmax", aten="_log_softmax"),
    Op("opaque", "Opaque", Category.OPAQUE),
]

ALL_OPS: list[Op] = UNARY + BINARY + TERNARY + REDUCTIONS + STRUCTURAL

# Constructor → category, for the cost model and extraction (pointwise constructors map here too).
CTOR_CATEGORY: dict[str, Category] = {}
for _op in ALL_OPS:
    CTOR_CATEGORY.setdefault(_op.ctor, _op.category)
CTOR_CATEGORY.update({"TCons": Category.SOURCE, "TNil": Category.SOURCE})


def op_name_of_key(key: str) -> str:
    """A pointwise/reduction key is ``name`` or ``name(attrs)``: the table row is the name part."""
    return key.split("(", 1)[0].split("#", 1)[0]
