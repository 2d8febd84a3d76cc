"""How raising spells terms in Aten-IR: the post-grad graph is functional Aten, so every new node is
an ``torch.ops.aten`` overload (no ``torch.*`` functions, no methods).

A constructor whose registry row names an ``aten`` overload taking the term's arguments in order is
spelled with it; the others are written out below. ``Linear``/``Matmul`` have no overload: they are
composite ops Inductor has already decomposed before post-grad passes, no rule creates them from
``mm``/``addmm``, and raising one raises ``NotImplementedError`` so the pass keeps its graph.
"""
from __future__ import annotations

import functools
import operator
from typing import Any, Callable

import torch

from eqsat import ops
from eqsat.ops import Ctor

from eqsat_torch.inductor import compat
from eqsat_torch.lowering.targets import aten_name, aten_overload

aten = torch.ops.aten


def _fits(op: Any, operands: list, attrs: dict) -> bool:
    """Operands sit in the overload's leading arguments, tensors where it takes tensors."""
    args = compat.aten_schema(op).arguments
    if len(args) < len(operands) or not set(attrs) <= {a.name for a in args[len(operands):]}:
        return False
    return all(isinstance(x, torch.fx.Node) == (str(a.type) == "Tensor") for x, a in zip(operands, args))


def pointwise_overload(name: str, operands: list, attrs: dict) -> Any:
    """The functional overload of pointwise op ``name`` that takes these operand kinds."""
    packet = getattr(aten, name, None)
    for overload in packet.overloads() if packet is not None else ():
        op = getattr(packet, overload)
        if aten_name(op) == name and _fits(op, operands, attrs):
            return op
    raise NotImplementedError(f"no aten overload of {name} for operands {[type(x).__name__ for x in operands]}")


# ``op(scalar, x) == swapped(x, scalar)``: aten's binary overloads take the tensor first. Only
# attribute-free ops (``add(s, x, alpha=a)`` is not ``add(x, s, alpha=a)``).
_SWAPPED = {"add": "add", "mul": "mul", "sub": "rsub", "rsub": "sub", "eq": "eq", "ne": "ne", "lt": "gt",
            "gt": "lt", "le": "ge", "ge": "le", "maximum": "maximum", "minimum": "minimum"}


def pointwise(r, name: str, attrs: dict, operands: list) -> torch.fx.Node:
    if name == "to_dtype":
        return r.call(aten._to_copy.default, operands[0], dtype=attrs["dtype"])
    if len(operands) == 2 and not isinstance(operands[0], torch.fx.Node) and not attrs and name in _SWAPPED:
        name, operands = _SWAPPED[name], operands[::-1]
    if name == "rsub":
        return _rsub(r, *operands, **attrs)
    return r.call(pointwise_overload(name, operands, attrs), *operands, **attrs)


def _rsub(r, x, y, alpha=1) -> torch.fx.Node:
    """``rsub(x, y, alpha) = y - alpha·x``, spelled without ``aten.rsub``: Inductor decomposes it
    before the post-grad passes and has no lowering for it afterwards."""
    if isinstance(y, torch.fx.Node):
        return r.call(aten.sub.Tensor, y, x, alpha=alpha) if alpha != 1 else r.call(aten.sub.Tensor, y, x)
    return r.call(aten.add.Tensor, r.call(aten.mul.Tensor, x, -alpha), y)


def _reduce(r, a: list) -> torch.fx.Node:
    """A reduction row's ``aten`` overload: (input, dims — one int for ``one_dim`` rows —, keepdim)."""
    name, attrs = r.low.keys.decode(a[0])
    row = ops.BY_NAME[name]
    return r.call(aten_overload(row.aten), a[1], a[2][0] if row.one_dim else list(a[2]), bool(a[3]), **attrs)


def _stack(r, a: list) -> torch.fx.Node:
    """``aten.stack`` is decomposed before post-grad: spell it as the cat of unsqueezes it becomes."""
    xs, d = a
    return r.call(aten.cat.default, [r.call(aten.unsqueeze.default, x, d) for x in xs], d)


def _layer_norm(r, a: list) -> torch.fx.Node:
    x, shape, w, b, eps = a
    return r.call(operator.getitem, r.call(aten.native_layer_norm.default, x, list(shape), w, b, float(eps)), 0)


def _composite(r, a: list):
    raise NotImplementedError("Linear/Matmul have no post-grad Aten spelling")


def _direct(spelled: str) -> Callable[[Any, list], Any]:
    target = aten_overload(spelled)
    return lambda r, a: r.call(target, *(list(x) if isinstance(x, tuple) else x for x in a))


_WRITTEN_OUT: dict[str, Callable[[Any, list], Any]] = {
    Ctor.NARROW: lambda r, a: r.call(aten.slice.Tensor, a[0], a[1], a[2], a[2] + a[3]),
    Ctor.CONTIGUOUS: lambda r, a: r.call(aten.clone.default, a[0], memory_format=torch.contiguous_format),
    Ctor.STACK: _stack,
    Ctor.REDUCE: _reduce,
    Ctor.SOFTMAX: lambda r, a: r.call(aten_overload(ops.BY_NAME[a[0]].aten), a[1], a[2], False),
    Ctor.LAYER_NORM: _layer_norm,
}


@functools.lru_cache(maxsize=4)
def _spelling(version: int) -> dict[str, Callable[[Any, list], Any]]:
    out: dict[str, Callable[[Any, list], Any]] = {}
    for op in ops.ALL_OPS:
        if (op.category in (ops.Category.SOURCE, ops.Category.OPAQUE) or op.ctor in ops.KEYED_POINTWISE
                or op.ctor == Ctor.GET):
            continue
        out.setdefault(op.ctor, _WRITTEN_OUT.get(op.ctor) or (_direct(op.aten) if op.aten else _composite))
    return out


def spelling() -> dict[str, Callable[[Any, list], Any]]:
    """Constructor → how raising writes it in Aten-IR (pointwise ops: ``pointwise``), from the rows."""
    return _spelling(ops.version())
