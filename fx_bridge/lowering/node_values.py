"""Small questions about an FX node's recorded value or arguments (its tensor leaves, whether it
needs grad, whether its sizes depend on data), asked by the lowerer and its converters."""
from __future__ import annotations

from typing import Any, Sequence

import torch
from torch.fx.node import map_aggregate

from eqsat_torch.inductor import compat


def _leaves(x: Any) -> list:
    out: list = []
    map_aggregate(x, out.append)
    return out


def _requires_grad(val: Any) -> bool:
    return any(isinstance(t, torch.Tensor) and t.requires_grad for t in _leaves(val))


def _backed_int(v: Any) -> bool:
    """A SymInt with a hint: an expression over the graph's size symbols, rebuilt where needed."""
    return isinstance(v, torch.SymInt) and compat.symint_hint(v) is not None


def _unbacked(val: Any) -> bool:
    """A value that depends on data: a symbolic scalar without a hint (or a SymBool/SymFloat), or a
    tensor with such a size. Its node is opaque, and so is every op reading it."""
    for leaf in _leaves(val):
        sizes = list(leaf.shape) if isinstance(leaf, torch.Tensor) else [leaf]
        if any(compat.is_symbolic(s) and not _backed_int(s) for s in sizes):
            return True
    return False


def _static_scalar(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float, bool)) and not compat.is_symbolic(v))


def _arg(args: Sequence, kwargs: dict, pos: int, name: str, default: Any = None) -> Any:
    if len(args) > pos:
        return args[pos]
    return kwargs.get(name, default)


def _varargs(args: Sequence, start: int) -> list:
    """``x.view(2, 3)`` and ``x.view((2, 3))`` both give [2, 3]."""
    rest = list(args[start:])
    if len(rest) == 1 and isinstance(rest[0], (list, tuple, torch.Size)):
        return list(rest[0])
    return rest
