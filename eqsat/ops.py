"""The op registry: every op of the tensor term language, one row each, and the tables derived from it.

A row says everything the rest of the code needs to know about an op:
- its egglog constructor and argument sorts (``eqsat.schema`` generates the datatype from the rows),
- its DSL builder name (``eqsat_rules.dsl`` generates its signatures from the rows),
- its shape (``shape``: a function of the constructor's arguments, written with the DSL, that
  ``eqsat_rules.shape`` compiles into the analysis rule) and dtype (``dtype``: the facts ``KeepsDtype`` /
  ``KeepsIntDtype`` / ``BoolResult`` of keyed ops, or ``SAME`` as its first tensor operand),
- its category (what Inductor does with it: the cost model's only input about an op),
- where slicing commutes with it (``slices``: ``eqsat_rules.algebra`` derives narrow/split/cat rules),
- how lowering reads it: its Torch-IR spellings (``spellings``: function/method names), the Aten-IR
  overloads (``aten_spellings``), and how the FX call's arguments become the term's: declaratively
  (``call``) or by a named converter of ``eqsat_torch.lowering.lower`` (``lower``),
- how raising writes it: the Torch callable (``torch``) and the Aten-IR overload (``aten``),
- how the rule checker evaluates it: ``call`` again, or a named evaluator of ``eqsat_rules.checker``
  (``evaluate``).
The engine never imports torch: targets are qualified names (``"torch.narrow"``, ``"Tensor.expand"``,
``"mm.default"``) that ``eqsat_torch.lowering.targets`` resolves, and the torch-side tables (``eqsat_torch.lowering.lower``'s
handlers, ``eqsat_torch.raising.aten_spelling``, the checker's evaluators) are derived from the rows there.
Adding an op is one row (see ``docs/architecture.md``); ``register`` adds one at runtime.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Callable, Iterable

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
    """What an op does to its operands' dtype (the analysis derives dtypes from it)."""

    FLOAT = "float"  # keyed ops: keeps a floating dtype (an integer input may promote: exp, sigmoid, …)
    ANY = "any"      # keyed ops: keeps every non-bool dtype, integers included (relu, add, …)
    BOOL = "bool"    # keyed ops: always bool (comparisons, isnan, any, …)
    SAME = "same"    # the dtype of its first tensor operand, whatever it is (views, copies, matmuls)


@dataclass(frozen=True)
class Arg:
    """One argument of an op's torch call, in the term's order: read by position or by ``name``.
    ``kind`` says how lowering reads it, and what the checker samples for it: ``tensor``, or
    ``sizes``: one count ≥ 1 per dim of the first tensor (``x.repeat(2, 3)``, ``x.repeat((2, 3))``)."""

    name: str
    kind: str = "tensor"


# A shape function: (k, *constructor args) → the result's shape, or [(guards, shape), …] cases; ``k``
# is the DSL (``eqsat_rules.dsl``, which the engine cannot import): ``lambda k, x, d: k.insert(x.shape, d, 1)``.
# A tuple-valued op's function also takes the piece index: ``Get(op(args…), i)`` has that shape.
ShapeFn = Callable[..., Any]
# Where slicing commutes with an op: (k, *constructor args, d) → [(case, guards, input dim), …]: slicing
# the op's result along d is the op of its first tensor operand sliced along the input dim.
SlicesFn = Callable[..., list]


# A Torch-IR name of an op under another name: read as the op's name (``"clip"``), or as one of its
# spellings, which lowering reads with that spelling's arguments (``("swapaxes", "transpose")``).
Alias = str | tuple[str, str]


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
    dsl: str | None = None                 # eqsat_rules.dsl builder (ops with their own constructor)
    dtype: Dtype | None = None             # pointwise only
    params: tuple[str, ...] = ()           # pointwise: non-tensor parameters in positional order
    torch: str | None = None               # Torch-IR callable raising emits ("Tensor.x": a method)
    aten: str | None = None                # Aten-IR overload raising emits ("packet.overload")
    spellings: tuple[str, ...] = ()        # more Torch-IR names lowering reads as this op
    aten_spellings: tuple[str, ...] = ()   # Aten-IR overloads lowering reads as this op
    call: tuple[Arg, ...] = ()             # the torch call's arguments in term order (declarative)
    lower: str | None = None               # else: the eqsat_torch.lowering.lower converter of its spellings
    evaluate: str | None = None            # else: the eqsat_rules.checker evaluator of its constructor
    shape: ShapeFn | None = None           # the shape analysis (shared by the rows of a constructor)
    slices: SlicesFn | None = None         # narrow/split commute with it there (eqsat_rules.algebra)
    concat: bool = False                   # and cat does (its results agree in shape where its inputs do)
    one_dim: bool = False                  # a reduction over one int dim (prod)
    batch: str | None = None               # pointwise: its own batch rule (eqsat_rules.batch), else the generic one
    defaults: tuple[tuple[str, Any], ...] = ()  # pointwise: (param, default) pairs lowering leaves out of the key
    aliases: tuple[Alias, ...] = ()        # Torch-IR names of the op under another name (``ALIASES``)
    exact_tie: bool = False                # its value or its backward tests values for exact equality
    total_on: tuple[str, ...] = ()         # unary: dtype classes ("float", "int") it maps onto themselves,
                                           # defined on every tensor of them (the mender may speculate it)

    @property
    def arity(self) -> int:
        """Tensor operands of a pointwise op."""
        return sum(1 for a in self.args if a == TENSOR)


# -- shape functions (written with the DSL ``k``; ranks 0–6 unrolled where a shape is per entry) -------
MAX_RANK = 6
_RANKS = range(MAX_RANK + 1)


def _broadcast(k, *operands):
    """NumPy broadcasting of (tensor, rank) operands, entry by entry (missing leading dims are 1)."""
    out = max(r for _, r in operands)
    entries = []
    for j in range(out):
        vals = [x.shape[j - (out - r)] if j >= out - r else 1 for x, r in operands]
        entry = vals[0]
        for v in vals[1:]:
            entry = k.imax(entry, v)
        entries.append(entry)
    return k.vec(*entries)


def _binary_shape(k, f, x, y):
    return [([x.ndim == a, y.ndim == b], _broadcast(k, (x, a), (y, b))) for a in _RANKS for b in _RANKS
            if max(a, b) > 0] + [([x.ndim == 0, y.ndim == 0], k.vec())]


def _ternary_shape(k, f, c, x, y):
    return [([c.ndim == r, x.ndim == r, y.ndim == r], _broadcast(k, (c, r), (x, r), (y, r)))
            for r in range(1, MAX_RANK + 1)] + [([x.shape == c.shape, y.shape == c.shape], c.shape)]


def _permute_shape(k, x, p):
    return [([p.len() == n], k.vec(*(x.shape[p[i]] for i in range(n)))) for n in range(1, MAX_RANK + 1)]


def _pad_shape(k, x, p):
    """Zero padding of the last m dims of a rank-r tensor (pads last dim first, as torch)."""
    def entry(r, m, j):
        back = r - 1 - j
        return x.shape[j] + (p[2 * back] + p[2 * back + 1]) if back < m else x.shape[j]
    return [([x.ndim == r, p.len() == 2 * m], k.vec(*(entry(r, m, j) for j in range(r))))
            for r in range(1, MAX_RANK + 1) for m in range(1, r + 1)]


def _repeat_shape(k, x, r):
    return [([x.ndim == n, r.len() == n], k.vec(*(x.shape[j] * r[j] for j in range(n)))) for n in range(1, MAX_RANK + 1)]


def _list_head(k, l):
    """The guard that binds ``h``, the first tensor of list ``l``."""
    h = k.Var("h", k.TENSOR)
    return h, l == k.cons(h, k.Var("r", k.TLIST))


def _cat_shape(k, l, d):
    h, first = _list_head(k, l)
    return [([first], h.shape.set(d, k.cat_extent(l, d)))]


def _stack_shape(k, l, d):
    h, first = _list_head(k, l)
    return [([first], k.insert(h.shape, d, k.list_len(l)))]


def _matmul_shape(k, a, b):
    """ND·2D, or equal-rank batched."""
    return [([a.ndim >= 2, b.ndim == 2], a.shape.set(a.ndim - 1, b.shape[1])),
            ([a.ndim > 2, a.ndim == b.ndim], a.shape.set(a.ndim - 1, b.shape[b.ndim - 1]))]


def _reduce_slices(k, f, x, dims, keep, d):
    """A reduction over one dim commutes with slicing another: keepdim keeps the dims where they are,
    otherwise a dim after the reduced one is the next one of the input."""
    one = dims.len() == 1
    return [("keepdim", [one, keep == 1, dims[0] != d], d), ("before", [one, keep == 0, d < dims[0]], d),
            ("after", [one, keep == 0, d >= dims[0]], d + 1)]


_KEYED = {"Unary": (STRING, TENSOR), "Binary": (STRING, TENSOR, TENSOR),
          "Ternary": (STRING, TENSOR, TENSOR, TENSOR)}
_KEYED_SHAPE = {"Unary": lambda k, f, x: x.shape, "Binary": _binary_shape, "Ternary": _ternary_shape}
KEYED_POINTWISE = frozenset(_KEYED)  # constructors keyed by a pointwise op; pad has its own


def pointwise_rows(ctor: str, names: str, dtype: Dtype | None = None) -> list[Op]:
    """Rows of pointwise ops sharing constructor ``ctor`` (``Unary``, ``Binary``, ``Ternary``)."""
    return [Op(n, ctor, Category.POINTWISE, _KEYED[ctor], dtype=dtype, shape=_KEYED_SHAPE[ctor],
               evaluate=ctor.lower()) for n in names.split()]


def _with(rows: list[Op], **per_name: dict) -> list[Op]:
    """Rows with some fields set per op name: ``_with(rows, params={"add": ("alpha",)})``."""
    out = []
    for r in rows:
        changes = {field: table[r.name] for field, table in per_name.items() if r.name in table}
        out.append(replace(r, **changes))
    return out


F, A, B = Dtype.FLOAT, Dtype.ANY, Dtype.BOOL
# Default values of those parameters: an attribute equal to its default (value and type: ``alpha=1.0``
# on integer tensors is an error where ``alpha=1`` is not) is left out of the op's key, so both
# spellings are one term.
_INPLACE = (("inplace", False),)
DEFAULTS = {
    "add": (("alpha", 1),), "sub": (("alpha", 1),), "rsub": (("alpha", 1),), "div": (("rounding_mode", None),),
    "clamp": (("min", None), ("max", None)), "hardtanh": _INPLACE,
    "leaky_relu": (("negative_slope", 0.01), *_INPLACE), "elu": (("alpha", 1), *_INPLACE),
    "celu": (("alpha", 1), *_INPLACE), "selu": _INPLACE, "gelu": (("approximate", "none"),),
    "softplus": (("beta", 1.0), ("threshold", 20.0)), "round": (("decimals", 0),), "logit": (("eps", None),),
    "relu": _INPLACE, "relu6": _INPLACE, "silu": _INPLACE, "mish": _INPLACE, "hardsigmoid": _INPLACE,
    "hardswish": _INPLACE, "addcmul": (("value", 1),), "addcdiv": (("value", 1),),
}
ALIASED = {
    "clamp": ("clip", ("clamp_min", "clamp_min")), "abs": ("absolute",), "neg": ("negative",),
    "mul": ("multiply",), "sub": ("subtract",), "div": ("divide", "true_divide"), "gt": ("greater",),
    "ge": ("greater_equal",), "lt": ("less",), "le": ("less_equal",), "ne": ("not_equal",),
    "atan2": ("arctan2",), "trunc": ("fix",), "sigmoid": ("special_expit", "expit"),
}
# Ops whose value (or whose backward's tie mask, ``grad * (x == amax(x)) / count``) tests floats for
# exact equality (``eqsat_torch.inductor.workarounds``).
TIES = {n: True for n in ("amax", "amin", "maximum", "minimum", "eq", "ne")}
TOTAL = {**{n: ("float",) for n in "exp log log1p expm1 sqrt rsqrt sigmoid tanh sin cos floor ceil round trunc"
            " reciprocal exp2 log2 erf".split()},
         **{n: ("float", "int") for n in "abs neg relu square".split()}}
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
    params=PARAMS, defaults=DEFAULTS, aliases=ALIASED, total_on=TOTAL, spellings={"to_dtype": tuple(_DTYPE_CASTS)}, aten_spellings={"to_dtype": ("_to_copy.default",)},
    lower={"to_dtype": "to_dtype"},
    batch={n: f"batch_{n}" for n in ("tanh", "sigmoid", "relu", "nan_to_num", "clamp")},
)
BINARY = _with(
    pointwise_rows("Binary", "add sub mul", A) + pointwise_rows("Binary", "div pow", F)
    + pointwise_rows("Binary", "maximum minimum", A) + pointwise_rows("Binary", "fmod", F)
    + pointwise_rows("Binary", "remainder", A) + pointwise_rows("Binary", "atan2", F)
    + pointwise_rows("Binary", "eq ne lt le gt ge logical_and logical_or logical_xor", B)
    + pointwise_rows("Binary", "bitwise_and bitwise_or bitwise_xor floor_divide true_divide")
    + pointwise_rows("Binary", "rsub", A),
    params=PARAMS, defaults=DEFAULTS, aliases=ALIASED, exact_tie=TIES,
    batch={n: f"batch_{n}" for n in ("add", "sub", "mul", "div")},
)
TERNARY = _with(pointwise_rows("Ternary", "where", A) + pointwise_rows("Ternary", "addcmul addcdiv lerp"),
                params=PARAMS, defaults=DEFAULTS)

_REDUCE_ARGS = (STRING, TENSOR, IVEC, INT)  # key, input, sorted dims, keepdim


def reduction(name: str, aten: str, aten_spellings: tuple[str, ...], dtype: Dtype = Dtype.FLOAT,
              one_dim: bool = False) -> Op:
    """A row of ``Reduce``: lowered, shaped, sliced, evaluated and raised like every reduction."""
    return Op(name, "Reduce", Category.REDUCTION, _REDUCE_ARGS, dtype=dtype, torch=f"torch.{name}", aten=aten,
              aten_spellings=aten_spellings, lower="reduce", evaluate="reduce", one_dim=one_dim,
              shape=lambda k, f, x, dims, keep: k.reduced(x.shape, dims, keep), slices=_reduce_slices)


REDUCTIONS = _with([
    reduction("sum", "sum.dim_IntList", ("sum.dim_IntList", "sum.default")),
    reduction("mean", "mean.dim", ("mean.dim", "mean.default")),
    reduction("amax", "amax.default", ("amax.default",)),
    reduction("amin", "amin.default", ("amin.default",)),
    reduction("prod", "prod.dim_int", ("prod.dim_int",), one_dim=True),
    reduction("any", "any.dims", ("any.dims", "any.dim", "any.default"), dtype=Dtype.BOOL),
], exact_tie=TIES)

T, SAME = TENSOR, Dtype.SAME
# The other constructors, in the order the egglog datatype declares them.
STRUCTURAL = [
    Op("input", "Input", Category.SOURCE, (STRING,)),
    Op("param", "Param", Category.SOURCE, (STRING,)),
    Op("scalar", "Scalar", Category.SOURCE, (STRING,)),
    Op("none", "NoneT", Category.SOURCE),
] + UNARY + BINARY + TERNARY + REDUCTIONS + [
    Op("softmax", "Softmax", Category.NORM, (STRING, T, INT), dtype=SAME, torch="torch.softmax", aten="_softmax.default",
       aten_spellings=("_softmax.default",), lower="softmax", evaluate="softmax", shape=lambda k, f, x, d: x.shape),
    Op("log_softmax", "Softmax", Category.NORM, (STRING, T, INT), dtype=SAME, torch="torch.log_softmax",
       aten="_log_softmax.default", aten_spellings=("_log_softmax.default",), lower="softmax", evaluate="softmax",
       shape=lambda k, f, x, d: x.shape),
    Op("layer_norm", "LayerNorm", Category.NORM, (T, IVEC, T, T, STRING), dtype=SAME,
       torch="torch.nn.functional.layer_norm", aten="native_layer_norm.default", lower="layer_norm",
       shape=lambda k, x, n, w, b, eps: x.shape),
    Op("linear", "Linear", Category.MATMUL, (T, T, T), dsl="linear", dtype=SAME, torch="torch.nn.functional.linear",
       lower="matmul", evaluate="linear", shape=lambda k, x, w, b: x.shape.set(x.ndim - 1, w.shape[0])),
    Op("mm", "Mm", Category.MATMUL, (T, T), dsl="mm", dtype=SAME, torch="torch.mm", aten="mm.default",
       aten_spellings=("mm.default",), lower="matmul", evaluate="mm", shape=lambda k, a, b: k.vec(a.shape[0], b.shape[1])),
    Op("bmm", "Bmm", Category.MATMUL, (T, T), dsl="bmm", dtype=SAME, torch="torch.bmm", aten="bmm.default",
       aten_spellings=("bmm.default",), lower="matmul", evaluate="bmm",
       shape=lambda k, a, b: k.vec(a.shape[0], a.shape[1], b.shape[2])),
    Op("matmul", "Matmul", Category.MATMUL, (T, T), dsl="matmul", dtype=SAME, torch="torch.matmul", lower="matmul",
       shape=_matmul_shape),
    Op("addmm", "Addmm", Category.MATMUL, (T, T, T), dsl="addmm", dtype=SAME, torch="torch.addmm", aten="addmm.default",
       aten_spellings=("addmm.default",), lower="matmul", evaluate="addmm",
       shape=lambda k, c, a, b: k.vec(a.shape[0], b.shape[1])),
    Op("baddbmm", "Baddbmm", Category.MATMUL, (T, T, T), dsl="baddbmm", dtype=SAME, torch="torch.baddbmm",
       aten="baddbmm.default", aten_spellings=("baddbmm.default",), lower="matmul",
       shape=lambda k, c, a, b: k.vec(a.shape[0], a.shape[1], b.shape[2])),
    Op("narrow", "Narrow", Category.VIEW, (T, INT, INT, INT), dsl="narrow", dtype=SAME, torch="torch.narrow",
       aten="slice.Tensor", spellings=("select",), aten_spellings=("narrow.default", "slice.Tensor", "select.int"),
       lower="narrow", evaluate="narrow", shape=lambda k, x, d, start, n: x.shape.set(d, n)),
    Op("view", "View", Category.VIEW, (T, IVEC), dsl="reshape", dtype=SAME, torch="torch.reshape", aten="reshape.default",
       spellings=("reshape", "flatten", "unflatten", "view_as"), aliases=(("reshape_as", "view_as"),),
       aten_spellings=("view.default", "_unsafe_view.default", "reshape.default"), lower="view", evaluate="view",
       shape=lambda k, x, s: s),
    Op("permute", "Permute", Category.VIEW, (T, IVEC), dsl="permute", dtype=SAME, torch="torch.permute",
       aten="permute.default", spellings=("transpose", "t", "movedim"),
       aliases=(("swapaxes", "transpose"), ("swapdims", "transpose"), ("moveaxis", "movedim")),
       aten_spellings=("permute.default", "t.default", "transpose.int"), lower="permute", evaluate="permute",
       shape=_permute_shape),
    Op("expand", "Expand", Category.VIEW, (T, IVEC), dsl="expand", dtype=SAME, torch="Tensor.expand",
       aten="expand.default", spellings=("expand_as", "broadcast_to"), aten_spellings=("expand.default",),
       lower="expand", evaluate="expand", shape=lambda k, x, s: s),
    Op("unsqueeze", "Unsqueeze", Category.VIEW, (T, INT), dsl="unsqueeze", dtype=SAME, torch="torch.unsqueeze",
       aten="unsqueeze.default", aten_spellings=("unsqueeze.default",), lower="unsqueeze", evaluate="unsqueeze",
       shape=lambda k, x, d: k.insert(x.shape, d, 1)),
    Op("squeeze", "Squeeze", Category.VIEW, (T, INT), dsl="squeeze", dtype=SAME, torch="torch.squeeze",
       aten="squeeze.dim", aten_spellings=("squeeze.dim", "squeeze.dims", "squeeze.default"), lower="squeeze",
       evaluate="squeeze", shape=lambda k, x, d: [([x.shape[d] == 1], x.shape.remove(d))]),
    Op("contiguous", "Contiguous", Category.COPY, (T,), dsl="contiguous", dtype=SAME, torch="Tensor.contiguous",
       aten="clone.default", spellings=("clone",), aten_spellings=("clone.default",), lower="copy",
       evaluate="contiguous", shape=lambda k, x: x.shape),
    # zero padding, pads in torch's order (last dim first); Inductor lowers it as a pointwise op
    Op("pad", "Pad", Category.POINTWISE, (T, IVEC), dtype=SAME, torch="torch.constant_pad_nd",
       aten="constant_pad_nd.default", spellings=("constant_pad_nd",), aten_spellings=("constant_pad_nd.default",),
       lower="pad", shape=_pad_shape),
    # x.repeat(r) with one count per dim: Inductor lowers it as a pointwise op reading x modulo its sizes
    Op("repeat", "Repeat", Category.POINTWISE, (T, IVEC), dsl="tile", dtype=SAME, torch="Tensor.repeat",
       aten="repeat.default", spellings=("tile",), aten_spellings=("repeat.default",),
       call=(Arg("self"), Arg("repeats", "sizes")), shape=_repeat_shape,
       slices=lambda k, x, r, d: [("", [r[d] == 1], d)], concat=True),
    Op("cat", "Cat", Category.COPY, (TLIST, INT), dsl="cat", dtype=SAME, torch="torch.cat", aten="cat.default",
       aliases=("concat", "concatenate"),
       aten_spellings=("cat.default",), lower="cat", evaluate="cat", shape=_cat_shape),
    Op("stack", "Stack", Category.COPY, (TLIST, INT), dsl="stack", dtype=SAME, torch="torch.stack",
       aten_spellings=("stack.default",), lower="cat", evaluate="stack", shape=_stack_shape),
    Op("getitem", "Get", Category.VIEW, (TTUPLE, INT), lower="getitem", evaluate="get"),
    Op("split", "Split", Category.VIEW, (T, IVEC, INT), TTUPLE, dsl="split", dtype=SAME, torch="torch.split",
       aten="split_with_sizes.default", spellings=("split_with_sizes", "chunk", "unbind"),
       aten_spellings=("split.Tensor", "split_with_sizes.default", "unbind.int", "chunk.default"), lower="split",
       evaluate="split", shape=lambda k, x, sizes, d, i: x.shape.set(d, sizes[i])),
    Op("opaque", "Opaque", Category.OPAQUE, (STRING, TLIST), TTUPLE),
    Op("nil", "TNil", Category.SOURCE, (), TLIST),
    Op("cons", "TCons", Category.SOURCE, (T, TLIST), TLIST),
]

# Lowering's mark on a ``scaled_dot_product_attention`` call CUDA cannot run as one fused kernel
# (``eqsat_torch.lowering.attention.cuda_fuses``: a mask or head laid out with a last-dim stride other than 1): the
# GPU model plans it as its math decomposition (``eqsat.fusion``), the C++ one as one extern call.
SDPA_NAME = "scaled_dot_product_attention"  # the call lowering marks (eqsat_torch.lowering.lower)
DECOMPOSED_ATTENTION = ":decomposed_on_cuda"
OPAQUE_KEY_PREFIX = "op:"  # lowering keys an opaque node ``op:<module>.<op>.<overload>`` (+ attributes)


# Constructor names, for code that matches on one (the rows above spell them; ``tests/eqsat/
# test_constructor_strings.py`` keeps every other module of the engine, the rules and the bridge from
# spelling them as strings).
class Ctor:
    INPUT, PARAM, SCALAR, NONE = "Input", "Param", "Scalar", "NoneT"
    UNARY, BINARY, TERNARY, REDUCE, SOFTMAX, LAYER_NORM = "Unary", "Binary", "Ternary", "Reduce", "Softmax", "LayerNorm"
    LINEAR, MM, BMM, MATMUL, ADDMM, BADDBMM = "Linear", "Mm", "Bmm", "Matmul", "Addmm", "Baddbmm"
    NARROW, VIEW, PERMUTE, EXPAND, UNSQUEEZE, SQUEEZE = "Narrow", "View", "Permute", "Expand", "Unsqueeze", "Squeeze"
    CONTIGUOUS, PAD, REPEAT, CAT, STACK, GET, SPLIT = "Contiguous", "Pad", "Repeat", "Cat", "Stack", "Get", "Split"
    OPAQUE, NIL, CONS = "Opaque", "TNil", "TCons"


class Role:
    """Groups of constructors the cost model and the rules treat alike, as tinygrad's ``GroupOp`` beside
    its op enum. What Inductor does with an op (matmul-like, reduction, view, pointwise, copy, norm,
    opaque) is its row's ``category`` (``CTOR_CATEGORY``); these are the finer roles code matches on."""

    KEYED_POINTWISE = KEYED_POINTWISE                 # first argument: a pointwise op's key
    KEYED = KEYED_POINTWISE | {Ctor.SOFTMAX}          # … or softmax's
    CONCAT = frozenset({Ctor.CAT, Ctor.STACK})          # a buffer its inputs are written into
    BATCHED_MATMUL = frozenset({Ctor.BMM, Ctor.BADDBMM})  # Inductor's bmm: no M = 1 or N = 1 exception
    BIAS_FIRST = frozenset({Ctor.ADDMM, Ctor.BADDBMM})  # the bias, then the left operand
    SLICE = frozenset({Ctor.NARROW, Ctor.GET})          # a part of its buffer, not all of it
    LIST = frozenset({Ctor.NIL, Ctor.CONS})             # the cells of a tensor list


# Torch-IR names lowering handles that are no op of their own: identities, folded sizes, detach.
NON_OP_SPELLINGS = ("detach", "dropout", "positive", "size", "dim", "numel")

# Names with no row (opaque: ``torch.max`` with a dim, ``aten.max.dim``) whose value ties like ``amax``'s.
EXACT_TIES_WITHOUT_ROW = ("max", "min")

# Unary keys that are values unchanged, only cut from autograd: a view to Inductor (no kernel, no
# bytes), and a pointwise op to the rules (it commutes with slices and cats like any other).
FREE_UNARIES = frozenset({"detach"})


def is_free_unary(ctor: str, args: Iterable) -> bool:
    """``(Unary "detach" x)``: no kernel of its own (``args`` as the serialized e-graph has them)."""
    first = next(iter(args), None)
    return ctor == Ctor.UNARY and first is not None and first[0] == "lit" and op_name_of_key(str(first[1])) in FREE_UNARIES

ALL_OPS: list[Op] = list(STRUCTURAL)


# -- derived tables (rebuilt by ``register``) -----------------------------------------------------------
BY_NAME: dict[str, Op] = {}
CTOR_CATEGORY: dict[str, Category] = {}   # constructor → category, for the cost model and extraction
CTOR_SORT: dict[str, str] = {}            # constructor → the sort of its terms
ALIASES: dict[str, str] = {}              # Torch-IR name → the name or spelling it is read as (``Op.aliases``)
_version = 0


def _rebuild() -> None:
    global _version
    BY_NAME.clear()
    CTOR_CATEGORY.clear()
    CTOR_SORT.clear()
    ALIASES.clear()
    for op in ALL_OPS:
        for alias in op.aliases:
            name, spelled = (alias, op.name) if isinstance(alias, str) else alias
            ALIASES.setdefault(name, spelled)
        BY_NAME.setdefault(op.name, op)
        CTOR_CATEGORY.setdefault(op.ctor, op.category)
        CTOR_SORT.setdefault(op.ctor, op.sort)
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


def builder_name(op: Op) -> str | None:
    """The DSL builder of a row's constructor: its ``dsl`` name, or a keyed constructor's name in lower
    case (``unary``, ``reduce``); None for sources, lists and tuples read with ``Get``."""
    if op.dsl is not None:
        return op.dsl
    if op.args[:1] == (STRING,) and op.category is not Category.SOURCE and op.sort == TENSOR:
        return op.ctor.lower()
    return None


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
        if op.category not in (Category.SOURCE, Category.OPAQUE) and op.ctor != Ctor.GET:
            names.add(op.name)
            names.update(op.spellings)
    return names


def total_on(dtype_class: str) -> set[str]:
    """Unary ops defined on every tensor of ``dtype_class`` ("float", "int") that keep it."""
    return {op.name for op in ALL_OPS if dtype_class in op.total_on}


def exact_ties() -> set[str]:
    """Names of the ops whose value or backward tests for exact equality (rows and ``EXACT_TIES_WITHOUT_ROW``)."""
    return {op.name for op in ALL_OPS if op.exact_tie} | set(EXACT_TIES_WITHOUT_ROW)


def op_name_of_key(key: str) -> str:
    """A pointwise/reduction key is ``name`` or ``name(attrs)``: the table row is the name part."""
    return key.split("(", 1)[0].split("#", 1)[0]
