"""Which torch callables and methods spell which canonical op: the torch half of the op registry.

Dynamo's Torch-IR names one op many ways: ``torch.relu``, ``F.relu``, ``x.relu()``, C++ builtins,
``operator.add`` for ``+``. The tables here map each spelling to one canonical name, so lowering
dispatches on the name and rules match one term. The names come from the rows of ``eqsat.ops``
(their names, ``spellings``, ``aten_spellings`` and ``aliases``); the tables are rebuilt when a row is
registered.
"""
from __future__ import annotations

import functools
import importlib
import operator
from typing import Any, Callable

import torch

from eqsat import ops

from eqsat_torch.inductor import compat

OPERATORS: dict[Callable, str] = {
    operator.add: "add", operator.sub: "sub", operator.mul: "mul", operator.truediv: "div",
    operator.floordiv: "floor_divide", operator.pow: "pow", operator.mod: "remainder",
    operator.neg: "neg", operator.abs: "abs", operator.eq: "eq", operator.ne: "ne", operator.lt: "lt",
    operator.le: "le", operator.gt: "gt", operator.ge: "ge", operator.and_: "bitwise_and",
    operator.or_: "bitwise_or", operator.xor: "bitwise_xor", operator.invert: "bitwise_not",
    operator.matmul: "matmul", operator.getitem: "getitem", operator.pos: "positive",
}

# In-place spellings of operators: the graph mutates a tensor.
INPLACE_OPERATORS = {
    operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv, operator.ipow,
    operator.imod, operator.iand, operator.ior, operator.ixor, operator.imatmul, operator.setitem,
}

def _canonical_names() -> set[str]:
    return ops.spellings() | set(ops.ALIASES)


def _build_function_table() -> dict[Any, str]:
    table: dict[Any, str] = {}
    for name in _canonical_names():
        for ns in compat.function_namespaces():
            fn = getattr(ns, name, None)
            if fn is not None and callable(fn):
                try:
                    table.setdefault(fn, ops.ALIASES.get(name, name))
                except TypeError:  # unhashable callables cannot be looked up by identity anyway
                    pass
    for fn, name in OPERATORS.items():
        table[fn] = name
    return table


def _aten_pointwise_table() -> dict[Any, str]:
    """Functional overloads of each pointwise op whose non-operand arguments are, by name, a prefix
    of the torch function's (``elu``'s extra ``scale`` is not, so ``aten.elu`` stays opaque)."""
    table: dict[Any, str] = {}
    for row in ops.pointwise():
        name, k, params = row.name, row.arity, row.params
        packet = getattr(torch.ops.aten, name, None)
        if packet is None:
            continue
        for overload in packet.overloads():
            op = getattr(packet, overload)
            schema = compat.aten_schema(op)
            names = [a.name for a in schema.arguments]
            types = [str(a.type) for a in schema.arguments]
            if (schema.is_mutable or len(names) < k or [str(r.type) for r in schema.returns] != ["Tensor"]
                    or not set(types[:k]) <= {"Tensor", "number"} or "Tensor" not in types[:k]
                    or any("Tensor" in t for t in types[k:])):
                continue
            if names[k:] == list(params[:len(names) - k]):
                table[op] = name
    return table


def _build_aten_table() -> dict[Any, str]:
    """Every aten overload lowering knows → the name its handler is registered under (the packet's:
    ``slice.Tensor`` → ``slice``). Only overloads whose positional arguments read like the torch
    function the handler was written for are listed in the rows' ``aten_spellings``."""
    table = _aten_pointwise_table()
    for op in ops.ALL_OPS:
        for spelled in op.aten_spellings:
            table[aten_overload(spelled)] = spelled.split(".")[0]
    return table


def aten_overload(spelled: str) -> Any:
    """``"slice.Tensor"`` → ``torch.ops.aten.slice.Tensor``."""
    packet, overload = spelled.split(".")
    return getattr(getattr(torch.ops.aten, packet), overload)


@functools.lru_cache(maxsize=4)
def _tables(version: int) -> tuple[dict[Any, str], dict[Any, str]]:
    return _build_function_table(), _build_aten_table()


def aten_name(op: Any) -> str | None:
    """The canonical name of an aten overload lowering knows."""
    return _tables(ops.version())[1].get(op)


def function_name(fn: Any) -> str | None:
    """The canonical name of a Torch-IR function target."""
    return _tables(ops.version())[0].get(fn)


@functools.lru_cache(maxsize=None)
def torch_callable(qualified: str) -> Callable:
    """``"torch.nn.functional.linear"`` → the function (a row's ``torch`` target)."""
    module, _, attr = qualified.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def canonical_name(node: torch.fx.Node) -> str | None:
    """The canonical op name of a call node, or None when the target is unknown to us."""
    if node.op == "call_function" and compat.is_aten(node.target):
        return aten_name(node.target)
    if node.op == "call_method":
        return ops.ALIASES.get(node.target, node.target)
    if node.op == "call_function":
        try:
            return function_name(node.target)
        except TypeError:
            return None
    return None


def target_label(node: torch.fx.Node) -> str:
    """A readable name of any target, for opaque keys and reports."""
    t = node.target
    if isinstance(t, str):
        return t
    mod = getattr(t, "__module__", None) or ""
    return f"{mod}.{getattr(t, '__name__', repr(t))}".lstrip(".")
