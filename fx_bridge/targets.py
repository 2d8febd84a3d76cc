"""Which torch callables and methods spell which canonical op.

Dynamo's Torch-IR names one op many ways: ``torch.relu``, ``F.relu``, ``x.relu()``, ``torch._C._nn``
builtins, ``operator.add`` for ``+``. This table maps each spelling to one canonical name, so lowering
dispatches on the name and rules match one term.
"""
from __future__ import annotations

import operator
from typing import Any, Callable

import torch
import torch.nn.functional as F

from eqsat.ops import BINARY, TERNARY, UNARY

from . import torch_compat

# Spellings that differ from the canonical name.
ALIASES: dict[str, str] = {
    "concat": "cat", "concatenate": "cat", "clip": "clamp", "absolute": "abs", "negative": "neg",
    "multiply": "mul", "subtract": "sub", "divide": "div", "true_divide": "div", "greater": "gt",
    "greater_equal": "ge", "less": "lt", "less_equal": "le", "not_equal": "ne", "swapaxes": "transpose",
    "swapdims": "transpose", "moveaxis": "movedim", "arctan2": "atan2", "fix": "trunc",
    "special_expit": "sigmoid", "expit": "sigmoid", "reshape_as": "view_as", "clamp_min": "clamp_min",
}

OPERATORS: dict[Callable, str] = {
    operator.add: "add", operator.sub: "sub", operator.mul: "mul", operator.truediv: "div",
    operator.floordiv: "floor_divide", operator.pow: "pow", operator.mod: "remainder",
    operator.neg: "neg", operator.abs: "abs", operator.eq: "eq", operator.ne: "ne", operator.lt: "lt",
    operator.le: "le", operator.gt: "gt", operator.ge: "ge", operator.and_: "bitwise_and",
    operator.or_: "bitwise_or", operator.xor: "bitwise_xor", operator.invert: "bitwise_not",
    operator.matmul: "matmul", operator.getitem: "getitem", operator.pos: "positive",
}

# Non-tensor parameters of pointwise ops in positional order, and the defaults a key leaves out.
PW_PARAMS: dict[str, tuple[str, ...]] = {
    "add": ("alpha",), "sub": ("alpha",), "rsub": ("alpha",), "div": ("rounding_mode",),
    "clamp": ("min", "max"), "hardtanh": ("min_val", "max_val", "inplace"),
    "leaky_relu": ("negative_slope", "inplace"), "elu": ("alpha", "inplace"), "celu": ("alpha", "inplace"),
    "selu": ("inplace",), "gelu": ("approximate",), "softplus": ("beta", "threshold"),
    "nan_to_num": ("nan", "posinf", "neginf"), "round": ("decimals",), "logit": ("eps",),
    "relu": ("inplace",), "relu6": ("inplace",), "silu": ("inplace",), "mish": ("inplace",),
    "hardsigmoid": ("inplace",), "hardswish": ("inplace",), "addcmul": ("value",), "addcdiv": ("value",),
}
# In-place spellings of operators: the graph mutates a tensor.
INPLACE_OPERATORS = {
    operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv, operator.ipow,
    operator.imod, operator.iand, operator.ior, operator.ixor, operator.imatmul, operator.setitem,
}

STRUCTURAL_NAMES = (
    "split split_with_sizes chunk unbind cat stack narrow select view reshape flatten unflatten view_as"
    " permute transpose t movedim unsqueeze squeeze expand expand_as broadcast_to contiguous clone detach"
    " sum mean amax amin prod softmax log_softmax layer_norm linear mm bmm matmul addmm baddbmm dropout"
    " to type type_as float half double bfloat16 int long bool size dim numel positive"
).split()

_NAMESPACES = (torch, F, torch._C._nn, torch.special, torch.Tensor, torch._C._VariableFunctions)


def _canonical_names() -> set[str]:
    names = {op.name for op in UNARY + BINARY + TERNARY} | set(STRUCTURAL_NAMES)
    return names | set(ALIASES)


def _build_function_table() -> dict[Any, str]:
    table: dict[Any, str] = {}
    for name in _canonical_names():
        for ns in _NAMESPACES:
            fn = getattr(ns, name, None)
            if fn is not None and callable(fn):
                try:
                    table.setdefault(fn, ALIASES.get(name, name))
                except TypeError:  # unhashable callables cannot be looked up by identity anyway
                    pass
    for fn, name in OPERATORS.items():
        table[fn] = name
    return table


FUNCTIONS = _build_function_table()


# Aten-IR (post-grad) spellings: overload → canonical name. Only overloads whose positional
# arguments read like the torch function the handler was written for are listed; ops whose aten
# signature differs get their own name and handler ("slice", "_softmax", "_to_copy").
ATEN_STRUCTURAL: dict[str, str] = {
    "view.default": "view", "_unsafe_view.default": "view", "reshape.default": "view",
    "expand.default": "expand", "permute.default": "permute", "t.default": "t",
    "transpose.int": "transpose", "unsqueeze.default": "unsqueeze", "squeeze.dim": "squeeze",
    "squeeze.dims": "squeeze", "squeeze.default": "squeeze", "select.int": "select",
    "slice.Tensor": "slice", "narrow.default": "narrow", "split.Tensor": "split",
    "split_with_sizes.default": "split_with_sizes", "unbind.int": "unbind", "chunk.default": "chunk",
    "cat.default": "cat", "stack.default": "stack", "sum.dim_IntList": "sum", "sum.default": "sum",
    "mean.dim": "mean", "mean.default": "mean", "amax.default": "amax", "amin.default": "amin",
    "prod.dim_int": "prod", "_softmax.default": "_softmax", "_log_softmax.default": "_log_softmax",
    "mm.default": "mm", "bmm.default": "bmm", "addmm.default": "addmm", "baddbmm.default": "baddbmm",
    "clone.default": "clone", "_to_copy.default": "_to_copy",
}


def _aten_pointwise_table(pw_params: dict[str, tuple[str, ...]]) -> dict[Any, str]:
    """Functional overloads of each pointwise op whose non-operand arguments are, by name, a prefix
    of the torch function's (``elu``'s extra ``scale`` is not, so ``aten.elu`` stays opaque)."""
    arity = {op.name: n for n, ops in ((1, UNARY), (2, BINARY), (3, TERNARY)) for op in ops}
    table: dict[Any, str] = {}
    for name, k in arity.items():
        packet = getattr(torch.ops.aten, name, None)
        if packet is None:
            continue
        for overload in packet.overloads():
            op = getattr(packet, overload)
            schema = torch_compat.aten_schema(op)
            names = [a.name for a in schema.arguments]
            params = pw_params.get(name, ())
            types = [str(a.type) for a in schema.arguments]
            if (schema.is_mutable or len(names) < k or [str(r.type) for r in schema.returns] != ["Tensor"]
                    or not set(types[:k]) <= {"Tensor", "number"} or "Tensor" not in types[:k]
                    or any("Tensor" in t for t in types[k:])):
                continue
            if names[k:] == list(params[:len(names) - k]):
                table[op] = name
    return table


def _build_aten_table(pw_params: dict[str, tuple[str, ...]]) -> dict[Any, str]:
    """Every aten overload lowering knows."""
    table = _aten_pointwise_table(pw_params)
    for spelled, name in ATEN_STRUCTURAL.items():
        packet, overload = spelled.split(".")
        table[getattr(getattr(torch.ops.aten, packet), overload)] = name
    return table


ATEN = _build_aten_table(PW_PARAMS)


def canonical_name(node: torch.fx.Node) -> str | None:
    """The canonical op name of a call node, or None when the target is unknown to us."""
    if node.op == "call_function" and torch_compat.is_aten(node.target):
        return ATEN.get(node.target)
    if node.op == "call_method":
        return ALIASES.get(node.target, node.target)
    if node.op == "call_function":
        try:
            return FUNCTIONS.get(node.target)
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
