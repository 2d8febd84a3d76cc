"""The per-op converters of lowering: (lowerer, node, name, args, kwargs) → a term, or
``NotImplemented`` for an opaque node; :func:`handlers` maps each spelling to its converter, read from
the registry rows (``eqsat.ops``)."""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch

from eqsat import ops
from eqsat.terms import IVec, Ref, Term, TList
from eqsat_torch.inductor import compat
from eqsat_torch.lowering.lowered import TupleVal, Unsupported, _norm_dim, dtype_name
from eqsat_torch.lowering.node_values import _arg, _varargs
from eqsat_torch.lowering.symbolic import SymScalar
from eqsat.ops import Ctor

if TYPE_CHECKING:
    from eqsat_torch.lowering.lower import _Lowerer


def _out_meta(lw: "_Lowerer", n: torch.fx.Node) -> tuple[tuple, str]:
    val = compat.node_value(n)
    return lw.sizes_of(val.shape), dtype_name(val.dtype)


# -- handlers: (lowerer, node, name, args, kwargs) → value; NotImplemented → opaque ----------------
def _lower_pointwise(lw: _Lowerer, n, name, args, kwargs):
    arity = ops.pointwise_arity(name)
    if len(args) < arity:
        operands = list(args) + [kwargs.pop(k) for k in ("other", "exponent", "end", "weight") if k in kwargs]
        operands += [kwargs.pop(k) for k in ("input", "self") if k in kwargs]
        if len(operands) < arity:
            return NotImplemented
        args, rest = tuple(operands[:arity]), ()
    else:
        args, rest = tuple(args[:arity]), tuple(args[arity:])
    row = ops.BY_NAME[name]
    params = row.params
    if len(rest) > len(params):
        return NotImplemented
    attrs = dict(zip(params, rest))
    attrs.update({k: v for k, v in kwargs.items() if k not in ("input", "self")})
    defaults = dict(row.defaults)  # an attribute at its default is no part of the key
    attrs = {k: v for k, v in attrs.items() if not (k in defaults and v == defaults[k] and type(v) is type(defaults[k]))}
    if any(isinstance(v, (Ref, TupleVal, torch.fx.Node, SymScalar)) for v in attrs.values()):
        return NotImplemented  # tensor-valued attributes (clamp(min=t)) stay opaque
    if not any(isinstance(a, Ref) for a in args):
        return NotImplemented
    try:
        operands = tuple(lw.operand(a) for a in args)
    except Unsupported:
        return NotImplemented
    ctor = {1: Ctor.UNARY, 2: Ctor.BINARY, 3: Ctor.TERNARY}[arity]
    key = lw.out.keys.key(name, attrs)
    if key != name and ops.keeps_dtype(name) and key not in lw.float_keys:
        lw.float_keys.add(key)  # the analysis only knows plain names: this key keeps a float dtype too
        lw.out.program.keeps_dtype(key)
    return lw.emit(Term(ctor, (key,) + operands))


def _to_dtype(lw: _Lowerer, n, name, args, kwargs):
    x = args[0]
    if not isinstance(x, Ref):
        return NotImplemented
    val = compat.node_value(n)
    src = lw.out.dtypes.get(x.let)
    in_val = compat.node_value(n.args[0])
    if not isinstance(val, torch.Tensor) or getattr(in_val, "device", None) != val.device:
        return NotImplemented
    if kwargs.get("memory_format") is not None or kwargs.get("copy"):
        return NotImplemented
    if dtype_name(val.dtype) == src:
        return x
    return lw.emit(Term(Ctor.UNARY, (lw.out.keys.key("to_dtype", {"dtype": val.dtype}), x)))


def _identity_unless_random(lw, n, name, args, kwargs):
    return args[0] if isinstance(args[0], Ref) else NotImplemented


def _detach(lw, n, name, args, kwargs):
    return lw.emit(Term(Ctor.UNARY, ("detach", args[0])))


def _copy(lw, n, name, args, kwargs):
    if kwargs.get("memory_format") not in (None, torch.contiguous_format) or not isinstance(args[0], Ref):
        return NotImplemented
    return lw.emit(Term(Ctor.CONTIGUOUS, (args[0],)))


def _view_like(lw, n, name, args, kwargs):
    x = args[0]
    if not isinstance(x, Ref) or any(isinstance(a, torch.dtype) for a in list(args[1:]) + list(kwargs.values())):
        return NotImplemented  # x.view(dtype) reinterprets bits
    shape, dtype = _out_meta(lw, n)
    if shape == lw.shape(x):
        return x
    return lw.emit(Term(Ctor.VIEW, (x, IVec(shape))))


def _expand(lw, n, name, args, kwargs):
    x = args[0]
    if not isinstance(x, Ref):
        return NotImplemented
    shape, _ = _out_meta(lw, n)
    if shape == lw.shape(x):
        return x
    return lw.emit(Term(Ctor.EXPAND, (x, IVec(shape))))


def _permute_of(lw, x: Ref, perm: Sequence[int]) -> Ref:
    rank = len(lw.shape(x))
    perm = tuple(_norm_dim(int(p), rank) for p in perm)
    if sorted(perm) != list(range(rank)):
        raise Unsupported(f"bad permutation {perm}")
    if perm == tuple(range(rank)):
        return x
    return lw.emit(Term(Ctor.PERMUTE, (x, IVec(perm))))


def _permute(lw, n, name, args, kwargs):
    x = args[0]
    rank = len(lw.shape(x))
    if name == "permute":
        perm = _varargs(args, 1) or list(kwargs.get("dims", ()))
    elif name == "t":
        perm = [1, 0] if rank == 2 else list(range(rank))
    elif name == "transpose":
        a = _norm_dim(_arg(args, kwargs, 1, "dim0"), rank)
        b = _norm_dim(_arg(args, kwargs, 2, "dim1"), rank)
        perm = list(range(rank))
        perm[a], perm[b] = perm[b], perm[a]
    else:  # movedim(x, source, destination)
        src, dst = _arg(args, kwargs, 1, "source"), _arg(args, kwargs, 2, "destination")
        src = [src] if isinstance(src, int) else list(src)
        dst = [dst] if isinstance(dst, int) else list(dst)
        src = [_norm_dim(s, rank) for s in src]
        dst = [_norm_dim(d, rank) for d in dst]
        perm = [-1] * rank
        for s, d in zip(src, dst):
            perm[d] = s
        rest = iter(i for i in range(rank) if i not in src)
        perm = [p if p >= 0 else next(rest) for p in perm]
    return _permute_of(lw, x, perm)


def _unsqueeze(lw, n, name, args, kwargs):
    x = args[0]
    d = _norm_dim(_arg(args, kwargs, 1, "dim"), len(lw.shape(x)) + 1)
    return lw.emit(Term(Ctor.UNSQUEEZE, (x, d)))


def _squeeze_dims(lw, x: Ref, dims: Sequence[int]) -> Ref:
    shape = list(lw.shape(x))
    dtype = lw.out.dtypes.get(x.let)
    for d in sorted({_norm_dim(d, len(shape)) for d in dims if shape}, reverse=True):
        if shape[d] == 1:
            shape.pop(d)
            x = lw.emit(Term(Ctor.SQUEEZE, (x, d)), shape, dtype)
    return x


def _squeeze(lw, n, name, args, kwargs):
    x = args[0]
    dims = _arg(args, kwargs, 1, "dim")
    rank = len(lw.shape(x))
    if dims is None:
        dims = range(rank)
    elif isinstance(dims, int):
        dims = [dims]
    return _squeeze_dims(lw, x, list(dims))


def _pad(lw, n, name, args, kwargs):
    """Zero padding by static amounts; other modes, values and negative pads (crops) stay opaque."""
    x, pads = args[0], list(_arg(args, kwargs, 1, "pad", ()))
    mode = "constant" if name == "constant_pad_nd" else _arg(args, kwargs, 2, "mode", "constant")
    value = _arg(args, kwargs, 2 if name == "constant_pad_nd" else 3, "value")
    if (not isinstance(x, Ref) or mode != "constant" or value not in (None, 0) or len(pads) % 2
            or len(pads) > 2 * len(lw.shape(x)) or not all(type(p) is int and p >= 0 for p in pads)):
        return NotImplemented
    return lw.emit(Term(Ctor.PAD, (x, IVec(tuple(lw.size(p) for p in pads)))))


def _narrow_ref(lw, x: Ref, d: int, start: int, length: int) -> Ref:
    shape = list(lw.shape(x))
    if start == 0 and length == shape[d]:
        return x
    shape[d] = length
    return lw.emit(Term(Ctor.NARROW, (x, d, start, length)), shape, lw.out.dtypes.get(x.let))


def _narrow(lw, n, name, args, kwargs):
    x = args[0]
    shape = lw.shape(x)
    d = _norm_dim(_arg(args, kwargs, 1, "dim"), len(shape))
    start, length = _arg(args, kwargs, 2, "start"), _arg(args, kwargs, 3, "length")
    if isinstance(start, int) and start < 0:
        start = start + shape[d]
    if not all(isinstance(v, (int, SymScalar)) for v in (start, length)):
        return NotImplemented
    start, length = lw.size(start), lw.size(length)
    if lw.out.sizes and (lw.out.sizes.table.hint(start) or 0) < 0:
        return NotImplemented  # a symbolic start counted from the end: opaque
    return _narrow_ref(lw, x, d, start, length)


def _select_ref(lw, x: Ref, d: int, i: int) -> Ref:
    shape = lw.shape(x)
    i = i + shape[d] if i < 0 else i
    if not 0 <= i < shape[d]:
        raise Unsupported(f"index {i} out of range")
    return _squeeze_dims(lw, _narrow_ref(lw, x, d, i, 1), [d]) if shape[d] != 1 else _squeeze_dims(lw, x, [d])


def _select(lw, n, name, args, kwargs):
    x = args[0]
    d = _norm_dim(_arg(args, kwargs, 1, "dim"), len(lw.shape(x)))
    return _select_ref(lw, x, d, _arg(args, kwargs, 2, "index"))


def _index(lw, x: Ref, idx: Any) -> Any:
    """Basic tensor indexing (ints, unit-step slices, None, ...) as narrow/squeeze/unsqueeze."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    if any(not (isinstance(i, (int, slice)) or i is None or i is Ellipsis) or isinstance(i, bool) for i in idx):
        return NotImplemented
    if any(isinstance(i, slice) and not all(isinstance(b, int) or b is None for b in (i.start, i.stop, i.step))
           for i in idx):
        return NotImplemented  # symbolic slice bounds: opaque
    rank = len(lw.shape(x))
    used = sum(1 for i in idx if i is not None and i is not Ellipsis)
    if idx.count(Ellipsis) > 1 or used > rank:
        return NotImplemented
    if Ellipsis in idx:
        k = idx.index(Ellipsis)
        idx = idx[:k] + (slice(None),) * (rank - used) + idx[k + 1:]
    d = 0
    selects: list[int] = []
    dtype = lw.out.dtypes.get(x.let)
    for i in idx:
        if i is None:
            shape = list(lw.shape(x))
            shape.insert(d, 1)
            x = lw.emit(Term(Ctor.UNSQUEEZE, (x, d)), shape, dtype)
        elif isinstance(i, int):
            selects.append(d)
            x = _narrow_int(lw, x, d, i)
        else:
            start, stop, step = i.indices(lw.shape(x)[d])
            if step != 1:
                return NotImplemented
            x = _narrow_ref(lw, x, d, start, max(stop - start, 0))
        d += 1
    return _squeeze_dims(lw, x, selects)


def _narrow_int(lw, x: Ref, d: int, i: int) -> Ref:
    size = lw.shape(x)[d]
    i = i + size if i < 0 else i
    if not 0 <= i < size:
        raise Unsupported(f"index {i} out of range")
    return _narrow_ref(lw, x, d, i, 1)


def _getitem(lw, n, name, args, kwargs):
    obj, idx = args
    if isinstance(obj, TupleVal):
        return obj.piece(idx)
    if isinstance(obj, Ref):
        if any(isinstance(i, (Ref, TupleVal)) for i in (idx if isinstance(idx, tuple) else (idx,))):
            return NotImplemented
        return _index(lw, obj, idx)
    if isinstance(obj, (list, tuple)):
        return obj[idx]
    return NotImplemented


def _split(lw, n, name, args, kwargs):
    x = args[0]
    if not isinstance(x, Ref):
        return NotImplemented
    val = compat.node_value(n)
    shape = lw.shape(x)
    default_dim = 0
    dim_pos = {"split": 2, "split_with_sizes": 2, "chunk": 2, "unbind": 1}[name]
    d = _norm_dim(_arg(args, kwargs, dim_pos, "dim", default_dim), len(shape))
    sizes = tuple(lw.size(t.shape[d]) if name != "unbind" else 1 for t in val)
    if sum(sizes) != shape[d]:
        return NotImplemented
    tup = lw.emit(Term(Ctor.SPLIT, (x, IVec(sizes), d)))
    if name != "unbind":  # unbind's own outputs are squeezed: not the Split tuple
        lw.out.node_of_let.setdefault(tup.let, n)
    dtype = lw.out.dtypes.get(x.let)

    def piece(i: int) -> Ref:
        s = list(shape)
        s[d] = sizes[i]
        ref = lw.emit(Term(Ctor.GET, (tup, i)), s, dtype)
        return _squeeze_dims(lw, ref, [d]) if name == "unbind" else ref

    return TupleVal(lambda i: piece(_norm_dim(i, len(sizes))), len(sizes), tup)


def _tensor_list(lw, xs: Any) -> list[Ref] | None:
    if isinstance(xs, TupleVal):
        xs = [xs]
    if not isinstance(xs, (list, tuple)):
        return None
    out: list = []
    for x in xs:
        if isinstance(x, TupleVal):
            out.extend(x.piece(i) for i in range(x.n))
        else:
            out.append(x)
    return out if all(isinstance(x, Ref) for x in out) else None


def _cat(lw, n, name, args, kwargs):
    xs = _tensor_list(lw, _arg(args, kwargs, 0, "tensors"))
    if not xs:
        return NotImplemented
    shape, _ = _out_meta(lw, n)
    rank = len(shape)
    if any(len(lw.shape(x)) != (rank if name == "cat" else rank - 1) for x in xs):
        return NotImplemented  # legacy empty 1-D inputs to cat
    d = _norm_dim(_arg(args, kwargs, 1, "dim", 0), rank)
    ctor = Ctor.CAT if name == "cat" else Ctor.STACK
    return lw.emit(Term(ctor, (TList(tuple(xs)), d)))


def _reduce(lw, n, name, args, kwargs):
    x = args[0]
    if not isinstance(x, Ref):
        return NotImplemented
    rank = len(lw.shape(x))
    dims = _arg(args, kwargs, 1, "dim", None)
    keepdim = _arg(args, kwargs, 2, "keepdim", False)
    extra = {k: v for k, v in kwargs.items() if k not in ("dim", "keepdim", "input")}
    if len(args) > 3 or isinstance(dims, (torch.dtype,)) or any(isinstance(v, Ref) for v in extra.values()):
        return NotImplemented
    one_dim = ops.BY_NAME[name].one_dim  # prod: one int dim, or all of them (kept opaque)
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        if one_dim and dims is not None:
            return NotImplemented
        dims = list(range(rank))
    dims = [dims] if isinstance(dims, int) else list(dims)
    if one_dim and (len(dims) != 1 or _arg(args, kwargs, 1, "dim", None) is None):
        return NotImplemented
    dims = sorted({_norm_dim(d, rank) for d in dims}) if rank else []
    return lw.emit(Term(Ctor.REDUCE, (lw.out.keys.key(name, extra), x, IVec(tuple(dims)), int(bool(keepdim)))))


def _aten_softmax(lw, n, name, args, kwargs):
    """``aten._softmax(x, dim, half_to_float)``: the upcasting variant keeps its own spelling."""
    if len(args) != 3 or kwargs or not isinstance(args[0], Ref) or args[2]:
        return NotImplemented
    x, d, _ = args
    if not isinstance(d, int):
        return NotImplemented
    return lw.emit(Term(Ctor.SOFTMAX, (name.lstrip("_"), x, _norm_dim(d, len(lw.shape(x))))))


def _slice(lw, n, name, args, kwargs):
    """``aten.slice(x, dim=0, start=None, end=None, step=1)``, Python slice bounds, unit step only."""
    x = args[0]
    if not isinstance(x, Ref):
        return NotImplemented
    shape = lw.shape(x)
    d = _norm_dim(_arg(args, kwargs, 1, "dim", 0), len(shape))
    bounds = slice(_arg(args, kwargs, 2, "start"), _arg(args, kwargs, 3, "end"), _arg(args, kwargs, 4, "step", 1))
    if not all(isinstance(b, int) or b is None for b in (bounds.start, bounds.stop, bounds.step)):
        return NotImplemented
    start, stop, step = bounds.indices(shape[d])
    if step != 1:
        return NotImplemented
    return _narrow_ref(lw, x, d, start, max(stop - start, 0))


def _aten_to_copy(lw, n, name, args, kwargs):
    """``aten._to_copy`` is a dtype cast when it changes nothing but the dtype."""
    if set(kwargs) - {"dtype", "layout", "device", "memory_format"} or kwargs.get("layout") not in (None, torch.strided):
        return NotImplemented
    return _to_dtype(lw, n, name, args, {"memory_format": kwargs.get("memory_format")})


def _softmax(lw, n, name, args, kwargs):
    x = args[0]
    d = _arg(args, kwargs, 1, "dim")
    dtype = kwargs.get("dtype", args[3] if len(args) > 3 else None)
    if not isinstance(x, Ref) or d is None or dtype is not None:
        return NotImplemented
    return lw.emit(Term(Ctor.SOFTMAX, (name, x, _norm_dim(d, len(lw.shape(x))))))


def _layer_norm(lw, n, name, args, kwargs):
    x = args[0]
    shape = _arg(args, kwargs, 1, "normalized_shape")
    w, b = _arg(args, kwargs, 2, "weight"), _arg(args, kwargs, 3, "bias")
    eps = _arg(args, kwargs, 4, "eps", 1e-5)
    if not isinstance(x, Ref) or not all(isinstance(t, Ref) or t is None for t in (w, b)):
        return NotImplemented
    w, b = (t if t is not None else lw.none() for t in (w, b))
    return lw.emit(Term(Ctor.LAYER_NORM, (x, IVec(lw.sizes_of(shape)), w, b, repr(float(eps)))))


def _matmul_like(lw, n, name, args, kwargs):
    """A matmul-like row's tensor operands in order (linear's bias may be None); scaled forms stay opaque."""
    row = ops.BY_NAME[name]
    arity = row.args.count(ops.TENSOR)
    xs = list(args[:arity])
    if row.ctor == Ctor.LINEAR:
        xs = [args[0], _arg(args, kwargs, 1, "weight"), _arg(args, kwargs, 2, "bias")]
        xs[2] = xs[2] if xs[2] is not None else lw.none()
    elif kwargs.get("beta", 1) != 1 or kwargs.get("alpha", 1) != 1 or len(args) > arity:
        return NotImplemented
    if len(xs) != arity or not all(isinstance(x, Ref) for x in xs):
        return NotImplemented
    return lw.emit(Term(row.ctor, tuple(xs)))


def _from_call(row: ops.Op, lw, n, name, args, kwargs):
    """A row's declarative call (``Op.call``): each term argument read by position or name, as its kind
    says; anything else (unknown keywords, extra or symbolic arguments) leaves the node opaque."""
    if set(kwargs) - {a.name for a in row.call} or (len(args) > len(row.call) and row.call[-1].kind != "sizes"):
        return NotImplemented
    out: list = []
    for pos, spec in enumerate(row.call):
        varargs = spec.kind == "sizes" and pos == len(row.call) - 1 and len(args) > pos
        v = _varargs(args, pos) if varargs else _arg(args, kwargs, pos, spec.name)
        if spec.kind == "tensor" and not isinstance(v, Ref):
            return NotImplemented
        if spec.kind == "sizes":
            if not isinstance(v, (list, tuple)) or len(v) != len(lw.shape(out[0])) or not all(
                    type(c) is int and c >= 1 for c in v):
                return NotImplemented
            v = IVec(tuple(v))
        out.append(v)
    return lw.emit(Term(row.ctor, tuple(out)))


def _fold_size(lw, n, name, args, kwargs):
    return compat.node_value(n)


def _narrow_like(lw, n, name, args, kwargs):
    """``narrow``, ``select`` and Aten's ``slice`` are all narrows."""
    return {"select": _select, "slice": _slice}.get(name, _narrow)(lw, n, name, args, kwargs)


def _softmax_like(lw, n, name, args, kwargs):
    return (_aten_softmax if name.startswith("_") else _softmax)(lw, n, name, args, kwargs)


def _cast(lw, n, name, args, kwargs):
    return (_aten_to_copy if name == "_to_copy" else _to_dtype)(lw, n, name, args, kwargs)


# The converters a registry row names (``Op.lower``); a row with a declarative ``call`` is read by
# ``_from_call``, a pointwise row by ``_lower_pointwise``.
CONVERTERS: dict[str, Callable] = {
    "to_dtype": _cast, "copy": _copy, "view": _view_like, "expand": _expand, "permute": _permute,
    "unsqueeze": _unsqueeze, "squeeze": _squeeze, "narrow": _narrow_like, "getitem": _getitem, "split": _split,
    "cat": _cat, "pad": _pad, "reduce": _reduce, "softmax": _softmax_like, "layer_norm": _layer_norm,
    "matmul": _matmul_like,
}
# ``torch.min(a, b)`` / ``a.max(b)`` of two tensors are ``minimum`` / ``maximum`` (pointwise); with a
# dim or alone they are reductions and stay opaque. T5's relative position buckets take a ``torch.min``
# of two tensors: opaque, the GPU model planned it as an extern call, and Inductor fuses it into the
# attention's softmax (zoo T5, H200: two launches a stack the model counted and Inductor did not make).
ELEMENTWISE_EXTREMA = {"min": "minimum", "max": "maximum"}
# Torch-IR names that are no op of their own (``eqsat.ops.NON_OP_SPELLINGS``).
NON_OPS: dict[str, Callable] = {
    "dropout": _identity_unless_random, "positive": _identity_unless_random, "detach": _detach,
    "size": _fold_size, "dim": _fold_size, "numel": _fold_size,
}


@functools.lru_cache(maxsize=4)
def _handlers(version: int) -> dict[str, Callable]:
    table = dict(NON_OPS)
    for op in ops.ALL_OPS:
        converter = CONVERTERS[op.lower] if op.lower else functools.partial(_from_call, op) if op.call else None
        if converter is not None:
            for name in (op.name, *op.spellings, *(a.split(".")[0] for a in op.aten_spellings)):
                table.setdefault(name, converter)
    return table


def handlers() -> dict[str, Callable]:
    """Canonical name (a row's name, Torch-IR spelling or Aten packet) → its converter, from the rows."""
    return _handlers(ops.version())
