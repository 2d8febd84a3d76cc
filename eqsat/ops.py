"""The op registry: every op of the tensor term language, one row each, and the tables derived from it.

A row says everything the rest of the code needs to know about an op:
- its egglog constructor and argument sorts (``eqsat.schema`` generates the datatype from the rows),
- its DSL builder name (``rules.dsl`` generates its signatures from the rows),
- what it does to dtypes (``dtype``: the analysis facts ``KeepsDtype`` / ``KeepsIntDtype`` /
  ``BoolResult`` are generated from it) — shapes follow from the constructor's analysis rules,
- its category (what Inductor does with it: the cost model's only input about an op),
- its Torch-IR spellings (``spellings``: function/method names lowering reads as this op), the Torch
  callable raising emits (``torch``) and the Aten-IR overloads it is read from (``aten_spellings``)
  and written as (``aten``).
The engine never imports torch: targets are qualified names (``"torch.narrow"``, ``"Tensor.expand"``,
``"mm.default"``) that ``fx_bridge.targets`` resolves. Adding a pointwise op is one row in
``UNARY`` / ``BINARY`` / ``TERNARY`` (see ``docs/architecture.md``); ``register`` adds one at runtime.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import Iterable

TENSOR, TTUPLE, TLIST, INT, IVEC, STRING = "Tensor", "TTuple", "TList", "i64", "IVec", "String"


class Category(str, Enum):
    VIEW = "view"            # free: a new stride/offset over the same storage
    POINTWISE = "pointwise"  # fuses with producers and consumers into one kernel
    REDUCTION = "reduction"  # fuses its pointwise producers; ends a fusion group
    MATMUL = "matmul"        # extern kernel (cuBLAS / mkldnn): one launch each, never fused
    COPY = "copy"            # a real copy kernel unless Inductor writes inputs in place (cat)
    NORM = "norm"            # layer_norm / softmax: a reduction kernel (or two)
    SOURCE = "source"        # inputs, parameters, scalars: no kernel
    OPAQUE = "opaque"        # unknown to us: assumed one kernel, never rewritten


class Dtype(str, Enum):
    """What a pointwise op does to its operands' dtype (the analysis derives dtypes from it)."""

    FLOAT = "float"  # keeps a floating dtype (an integer input may promote: exp, sigmoid, …)
    ANY = "any"      # keeps every non-bool dtype, integers included (relu, add, …)
    BOOL = "bool"    # always bool (comparisons, isnan, …)


@dataclass(frozen=True)
class Op:
    """One op. Pointwise, reduction and softmax ops share a constructor whose first argument is the
    op key (``(Unary "relu" x)``), so one rule covers all of them; ``args`` are the egglog sorts of
    the constructor's arguments, that key included."""

    name: str
    ctor: str
    category: Category
    args: tuple[str, ...] = ()
    sort: str = TENSOR
    dsl: str | None = None                 # rules.dsl builder (ops with their own constructor)
    dtype: Dtype | None = None             # pointwise only
    params: tuple[str, ...] = ()           # pointwise: non-tensor parameters in positional order
    torch: str | None = None               # Torch-IR callable raising emits ("Tensor.x": a method)
    aten: str | None = None                # Aten-IR overload raising emits ("packet.overload")
    spellings: tuple[str, ...] = ()        # more Torch-IR names lowering reads as this op
    aten_spellings: tuple[str, ...] = ()   # Aten-IR overloads lowering reads as this op

    @property
    def arity(self) -> int:
        """Tensor operands of a pointwise op."""
        return sum(1 for a in self.args if a == TENSOR)


_KEYED = {"Unary": (STRING, TENSOR), "Binary": (STRING, TENSOR, TENSOR),
          "Ternary": (STRING, TENSOR, TENSOR, TENSOR)}
KEYED_POINTWISE = frozenset(_KEYED)  # constructors keyed by a pointwise op; pad has its own


def pointwise_rows(ctor: str, names: str, dtype: Dtype | None = None) -> list[Op]:
    """Rows of pointwise ops sharing constructor ``ctor`` (``Unary``, ``Binary``, ``Ternary``)."""
    return [Op(n, ctor, Category.POINTWISE, _KEYED[ctor], dtype=dtype) for n in names.split()]


def _with(rows: list[Op], **per_name: dict) -> list[Op]:
    """Rows with some fields set per op name: ``_with(rows, params={"add": ("alpha",)})``."""
    out = []
    for r in rows:
        changes = {field: table[r.name] for field, table in per_name.items() if r.name in table}
        out.append(replace(r, **changes))
    return out


F, A, B = Dtype.FLOAT, Dtype.ANY, Dtype.BOOL
# Non-tensor parameters of pointwise ops in positional order (lowering keys them by name).
PARAMS = {
    "add": ("alpha",), "sub": ("alpha",), "rsub": ("alpha",), "div": ("rounding_mode",),
    "clamp": ("min", "max"), "hardtanh": ("min_val", "max_val", "inplace"),
    "leaky_relu": ("negative_slope", "inplace"), "elu": ("alpha", "inplace"), "celu": ("alpha", "inplace"),
    "selu": ("inplace",), "gelu": ("approximate",), "softplus": ("beta", "threshold"),
    "nan_to_num": ("nan", "posinf", "neginf"), "round": ("decimals",), "logit": ("eps",),
    "relu": ("inplace",), "relu6": ("inplace",), "silu": ("inplace",), "mish": ("inplace",),
    "hardsigmoid": ("inplace",), "hardswish": ("inplace",), "addcmul": ("value",), "addcdiv": ("value",),
}
_DTYPE_CASTS = "to type type_as float half double bfloat16 int long bool".split()

UNARY = _with(
    pointwise_rows("Unary", "relu", A)
    + pointwise_rows("Unary", "gelu silu sigmoid tanh exp exp2 expm1 log log1p log2 log10", F)
    + pointwise_rows("Unary", "neg abs", A) + pointwise_rows("Unary", "sqrt rsqrt reciprocal sin cos erf", F)
    + pointwise_rows("Unary", "floor ceil round trunc sign", A)
    + pointwise_rows("Unary", "logical_not", B) + pointwise_rows("Unary", "bitwise_not")
    + pointwise_rows("Unary", "isnan isinf isfinite", B) + pointwise_rows("Unary", "square", A)
    + pointwise_rows("Unary", "nan_to_num clamp hardtanh hardsigmoid hardswish leaky_relu elu selu celu mish"
                               " softplus relu6 logit sgn frac", F)
    + pointwise_rows("Unary", "to_dtype"),
    params=PARAMS, spellings={"to_dtype": tuple(_DTYPE_CASTS)}, aten_spellings={"to_dtype": ("_to_copy.default",)},
)
BINARY = _with(
    pointwise_rows("Binary", "add sub mul", A) + pointwise_rows("Binary", "div pow", F)
    + pointwise_rows("Binary", "maximum minimum", A) + pointwise_rows("Binary", "fmod", F)
    + pointwise_rows("Binary", "remainder", A) + pointwise_rows("Binary", "atan2", F)
    + pointwise_rows("Binary", "eq ne lt le gt ge logical_and logical_or logical_xor", B)
    + pointwise_rows("Binary", "bitwise_and bitwise_or bitwise_xor floor_divide true_divide")
    + pointwise_rows("Binary", "rsub", A),
    params=PARAMS,
)
TERNARY = _with(pointwise_rows("Ternary", "where", A) + pointwise_rows("Ternary", "addcmul addcdiv lerp"),
                params=PARAMS)

_REDUCE_ARGS = (STRING, TENSOR, IVEC, INT)  # key, input, sorted dims, keepdim
REDUCTIONS = [
    Op("sum", "Reduce", Category.REDUCTION, _REDUCE_ARGS, torch="torch.sum", aten="sum.dim_IntList",
       aten_spellings=("sum.dim_IntList", "sum.default")),
    Op("mean", "Reduce", Category.REDUCTION, _REDUCE_ARGS, torch="torch.mean", aten="mean.dim",
       aten_spellings=("mean.dim", "mean.default")),
    Op("amax", "Reduce", Category.REDUCTION, _REDUCE_ARGS, torch="torch.amax", aten="amax.default",
       aten_spellings=("amax.default",)),
    Op("amin", "Reduce", Category.REDUCTION, _REDUCE_ARGS, torch="torch.amin", aten="amin.default",
       aten_spellings=("amin.default",)),
    Op("prod", "Reduce", Category.REDUCTION, _REDUCE_ARGS, torch="torch.prod", aten="prod.dim_int",
       aten_spellings=("prod.dim_int",)),
]

T = TENSOR
# The other constructors, in the order the egglog datatype declares them.
STRUCTURAL = [
    Op("input", "Input", Category.SOURCE, (STRING,)),
    Op("param", "Param", Category.SOURCE, (STRING,)),
    Op("scalar", "Scalar", Category.SOURCE, (STRING,)),
    Op("none", "NoneT", Category.SOURCE),
] + UNARY + BINARY + TERNARY + REDUCTIONS + [
    Op("softmax", "Softmax", Category.NORM, (STRING, T, INT), torch="torch.softmax", aten="_softmax.default",
       aten_spellings=("_softmax.default",)),
    Op("log_softmax", "Softmax", Category.NORM, (STRING, T, INT), torch="torch.log_softmax",
       aten="_log_softmax.default", aten_spellings=("_log_softmax.default",)),
    Op("layer_norm", "LayerNorm", Category.NORM, (T, IVEC, T, T, STRING), torch="torch.nn.functional.layer_norm",
       aten="native_layer_norm.default"),
    Op("linear", "Linear", Category.MATMUL, (T, T, T), dsl="linear", torch="torch.nn.functional.linear"),
    Op("mm", "Mm", Category.MATMUL, (T, T), dsl="mm", torch="torch.mm", aten="mm.default",
       aten_spellings=("mm.default",)),
    Op("bmm", "Bmm", Category.MATMUL, (T, T), dsl="bmm", torch="torch.bmm", aten="bmm.default",
       aten_spellings=("bmm.default",)),
    Op("matmul", "Matmul", Category.MATMUL, (T, T), dsl="matmul", torch="torch.matmul"),
    Op("addmm", "Addmm", Category.MATMUL, (T, T, T), dsl="addmm", torch="torch.addmm", aten="addmm.default",
       aten_spellings=("addmm.default",)),
    Op("baddbmm", "Baddbmm", Category.MATMUL, (T, T, T), dsl="baddbmm", torch="torch.baddbmm",
       aten="baddbmm.default", aten_spellings=("baddbmm.default",)),
    Op("narrow", "Narrow", Category.VIEW, (T, INT, INT, INT), dsl="narrow", torch="torch.narrow",
       aten="slice.Tensor", spellings=("select",),
       aten_spellings=("narrow.default", "slice.Tensor", "select.int")),
    Op("view", "View", Category.VIEW, (T, IVEC), dsl="reshape", torch="torch.reshape", aten="reshape.default",
       spellings=("reshape", "flatten", "unflatten", "view_as"),
       aten_spellings=("view.default", "_unsafe_view.default", "reshape.default")),
    Op("permute", "Permute", Category.VIEW, (T, IVEC), dsl="permute", torch="torch.permute",
       aten="permute.default", spellings=("transpose", "t", "movedim"),
       aten_spellings=("permute.default", "t.default", "transpose.int")),
    Op("expand", "Expand", Category.VIEW, (T, IVEC), dsl="expand", torch="Tensor.expand", aten="expand.default",
       spellings=("expand_as", "broadcast_to"), aten_spellings=("expand.default",)),
    Op("unsqueeze", "Unsqueeze", Category.VIEW, (T, INT), dsl="unsqueeze", torch="torch.unsqueeze",
       aten="unsqueeze.default", aten_spellings=("unsqueeze.default",)),
    Op("squeeze", "Squeeze", Category.VIEW, (T, INT), dsl="squeeze", torch="torch.squeeze", aten="squeeze.dim",
       aten_spellings=("squeeze.dim", "squeeze.dims", "squeeze.default")),
    Op("contiguous", "Contiguous", Category.COPY, (T,), dsl="contiguous", torch="Tensor.contiguous",
       aten="clone.default", spellings=("clone",), aten_spellings=("clone.default",)),
    # zero padding, pads in torch's order (last dim first); Inductor lowers it as a pointwise op
    Op("pad", "Pad", Category.POINTWISE, (T, IVEC), torch="torch.constant_pad_nd", aten="constant_pad_nd.default",
       spellings=("constant_pad_nd",), aten_spellings=("constant_pad_nd.default",)),
    Op("cat", "Cat", Category.COPY, (TLIST, INT), dsl="cat", torch="torch.cat", aten="cat.default",
       aten_spellings=("cat.default",)),
    Op("stack", "Stack", Category.COPY, (TLIST, INT), dsl="stack", torch="torch.stack",
       aten_spellings=("stack.default",)),
    Op("getitem", "Get", Category.VIEW, (TTUPLE, INT)),
    Op("split", "Split", Category.VIEW, (T, IVEC, INT), TTUPLE, dsl="split", torch="torch.split",
       aten="split_with_sizes.default", spellings=("split_with_sizes", "chunk", "unbind"),
       aten_spellings=("split.Tensor", "split_with_sizes.default", "unbind.int", "chunk.default")),
    Op("opaque", "Opaque", Category.OPAQUE, (STRING, TLIST), TTUPLE),
    Op("nil", "TNil", Category.SOURCE, (), TLIST),
    Op("cons", "TCons", Category.SOURCE, (T, TLIST), TLIST),
]

# Ops with no row here (lowering keeps them ``Opaque``) that Inductor generates code for, by what
# that code is: a lowering in ``torch/_inductor/lowering.py`` (no fallback), so the op fuses like a
# pointwise op or a reduction of ours instead of costing an extern call. ``scatter``: Inductor's
# ``Scatter``, a generated kernel of its own that fuses with nothing, writing in place into a clone
# of its first input (a fusible pointwise kernel); the values are computed inside it. ``view``: a
# no-op alias, or a call that makes no kernel at all. ``source``: a buffer allocated, not computed.
# Opaque ops not listed here are extern calls (fallbacks: ``_embedding_bag``, SDPA, convolutions, ...).
# Aten names are what post-grad graphs hold; Torch-IR functions and methods (``torch.arange``,
# ``torch.nn.functional.embedding``, ``x.new_ones``) are looked up by their last name, which stays the
# same across torch versions (Dynamo records ``torch.embedding`` in one, the functional in another):
# whole transformers models (zoo, transformers 5.17) price their embeddings, position ids, masks and
# rotary tables as the kernels Inductor fuses them into.
TORCH_IR_KINDS: dict[str, str] = {
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
}
OPAQUE_KEY_PREFIX = "op:"  # lowering keys an opaque node ``op:<module>.<op>.<overload>`` (+ attributes)


def opaque_kind(key: str) -> str:
    """What Inductor makes of the opaque op keyed ``key``: an ``OPAQUE_KINDS`` kind for an Aten op, a
    ``TORCH_IR_KINDS`` kind for a Torch-IR one, else ``extern``."""
    label = op_name_of_key(key).removeprefix(OPAQUE_KEY_PREFIX).removeprefix("torch._ops.")
    if label.startswith(("aten.", "prims.")):
        return OPAQUE_KINDS.get(label, "extern")
    return TORCH_IR_KINDS.get(label.rsplit(".", 1)[-1], "extern")


# Torch-IR names lowering handles that are no op of their own: identities, folded sizes, detach.
NON_OP_SPELLINGS = ("detach", "dropout", "positive", "size", "dim", "numel")

# Unary keys that are values unchanged, only cut from autograd: a view to Inductor (no kernel, no
# bytes), and a pointwise op to the rules (it commutes with slices and cats like any other).
FREE_UNARIES = frozenset({"detach"})


def is_free_unary(ctor: str, args: Iterable) -> bool:
    """``(Unary "detach" x)``: no kernel of its own (``args`` as the serialized e-graph has them)."""
    first = next(iter(args), None)
    return ctor == "Unary" and first is not None and first[0] == "lit" and op_name_of_key(str(first[1])) in FREE_UNARIES

ALL_OPS: list[Op] = list(STRUCTURAL)


# -- derived tables (rebuilt by ``register``) -----------------------------------------------------------
BY_NAME: dict[str, Op] = {}
CTOR_CATEGORY: dict[str, Category] = {}   # constructor → category, for the cost model and extraction
_version = 0


def _rebuild() -> None:
    global _version
    BY_NAME.clear()
    CTOR_CATEGORY.clear()
    for op in ALL_OPS:
        BY_NAME.setdefault(op.name, op)
        CTOR_CATEGORY.setdefault(op.ctor, op.category)
    _version += 1


_rebuild()


def version() -> int:
    """Bumped by every ``register``: tables derived outside this module cache on it."""
    return _version


def register(*rows: Op) -> None:
    """Add rows at runtime (a plugin, a test); a pointwise row lowers, rewrites, raises and prices
    like the built-in ones from the next compile on."""
    for r in rows:
        if r.name in BY_NAME:
            raise ValueError(f"op {r.name!r} is already registered")
        sig = constructors().get(r.ctor)
        if sig is not None and sig != (r.args, r.sort):
            raise ValueError(f"op {r.name!r}: constructor {r.ctor} is {sig}, not {(r.args, r.sort)}")
    ALL_OPS.extend(rows)
    _rebuild()


def unregister(*names: str) -> None:
    """Remove rows added with ``register`` (tests)."""
    ALL_OPS[:] = [r for r in ALL_OPS if r.name not in names]
    _rebuild()


def pointwise(arity: int | None = None) -> list[Op]:
    """Pointwise rows spelled by key (of one arity)."""
    return [op for op in ALL_OPS if op.category is Category.POINTWISE and op.ctor in KEYED_POINTWISE
            and (arity is None or op.arity == arity)]


def pointwise_arity(name: str) -> int | None:
    """Operands of pointwise op ``name``, or None when it is no pointwise op spelled by key."""
    op = BY_NAME.get(name)
    return op.arity if op is not None and op.category is Category.POINTWISE and op.ctor in KEYED_POINTWISE else None


def keeps_dtype(name: str) -> bool:
    op = BY_NAME.get(name)
    return op is not None and op.dtype in (Dtype.FLOAT, Dtype.ANY)


def constructors() -> dict[str, tuple[tuple[str, ...], str]]:
    """Constructor → (argument sorts, result sort), in declaration order."""
    out: dict[str, tuple[tuple[str, ...], str]] = {}
    for op in ALL_OPS:
        sig = (op.args, op.sort)
        if out.setdefault(op.ctor, sig) != sig:
            raise ValueError(f"constructor {op.ctor} has two signatures: {out[op.ctor]} and {sig}")
    return out


def dtype_facts() -> dict[str, list[str]]:
    """Analysis relation → op keys it holds for, from the rows' ``dtype``."""
    facts: dict[str, list[str]] = {"KeepsDtype": [], "KeepsIntDtype": [], "BoolResult": []}
    for op in ALL_OPS:
        if op.dtype in (Dtype.FLOAT, Dtype.ANY):
            facts["KeepsDtype"].append(op.name)
        if op.dtype is Dtype.ANY:
            facts["KeepsIntDtype"].append(op.name)
        if op.dtype is Dtype.BOOL:
            facts["BoolResult"].append(op.name)
    return facts


def spellings(rows: Iterable[Op] | None = None) -> set[str]:
    """Every Torch-IR name lowering reads as some op (op names of non-source rows, their spellings)."""
    names = set(NON_OP_SPELLINGS)
    for op in rows if rows is not None else ALL_OPS:
        if op.category not in (Category.SOURCE, Category.OPAQUE) and op.ctor != "Get":
            names.add(op.name)
            names.update(op.spellings)
    return names


def op_name_of_key(key: str) -> str:
    """A pointwise/reduction key is ``name`` or ``name(attrs)``: the table row is the name part."""
    return key.split("(", 1)[0].split("#", 1)[0]
