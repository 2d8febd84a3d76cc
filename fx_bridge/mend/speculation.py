"""Can this expression be evaluated where the original program would not have evaluated it?

If-conversion evaluates both branch values; that is only sound when the untaken one cannot raise
and has no effect. `Speculation.kind` proves it for a small expression language (constants, bound
names, scalar arithmetic, a few total tensor functions on proven tensors) and answers None otherwise.
"""

from __future__ import annotations

import ast

import torch

from eqsat import ops
from eqsat_torch.mend.scope import Scope

SCALAR, TENSOR, VALUE, FINFO = "scalar", "tensor", "value", "finfo"

# Total on any tensor (no shape/dtype preconditions), given scalar-or-absent extra arguments.
_TOTAL_UNARY = {"isinf", "isnan", "isfinite", "isneginf", "isposinf", "logical_not", "any", "all",
                "zeros_like", "ones_like", "clone", "detach", "sum"}
_CLAMPS = {"clamp", *(alias for alias, name in ops.ALIASES.items() if name == "clamp")}  # clip: the row's alias
_REDUCTIONS = {"sum", "any", "all", "max", "min", "mean", "amax", "amin", "prod", "norm"}
_CHAIN = _REDUCTIONS | _TOTAL_UNARY | {"abs", "neg", "float", "flatten"}
_ORDER = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_TENSOR_META = {"dtype", "shape", "device", "ndim", "is_floating_point"}
_FINFO_FIELDS = {"max", "min", "eps", "tiny", "resolution", "smallest_normal", "bits"}
_FLOAT_DTYPES = {"float16", "half", "bfloat16", "float32", "float", "float64", "double"}


def float_dtype_facts(test: ast.expr, scope: Scope) -> set[str]:
    """Names `n` for which `test` being true implies `n.dtype` is a floating dtype."""
    facts = set()
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    for part in parts:
        if (
            isinstance(part, ast.Compare)
            and len(part.ops) == 1
            and isinstance(part.ops[0], (ast.Eq, ast.Is))
            and isinstance(part.left, ast.Attribute)
            and part.left.attr == "dtype"
            and isinstance(part.left.value, ast.Name)
            and _is_torch_attr(part.comparators[0], scope, _FLOAT_DTYPES)
        ):
            facts.add(part.left.value.id)
    return facts


def _is_torch_attr(node: ast.expr, scope: Scope, names: set[str]) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr in names
        and isinstance(node.value, ast.Name)
        and scope.denotes(node.value.id, torch)
    )


def tensor_names(expr: ast.expr, scope: Scope) -> set[str]:
    """Names that must be tensors once `expr` evaluated without error: `torch.f(n, ...)`, or the
    receiver of a reduction method `n.sum()` (an ndarray receiver would make `select` fall back)."""
    names = set()
    for node in ast.walk(expr):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if _is_torch_attr(func, scope, _TOTAL_UNARY | _CLAMPS) and node.args and isinstance(node.args[0], ast.Name):
            names.add(node.args[0].id)
        elif isinstance(func, ast.Attribute) and func.attr in _REDUCTIONS:
            root = func.value  # walk `n.abs().isinf()...` back to `n`
            while isinstance(root, ast.Call) and isinstance(root.func, ast.Attribute) and root.func.attr in _CHAIN:
                root = root.func.value
            if isinstance(root, ast.Compare) and len(root.ops) == 1:
                root = root.left  # `(n > 0).all()`
            if isinstance(root, ast.Name):
                names.add(root.id)
    return names


class Speculation:
    """Kinds of provably total expressions inside one function, at one program point."""

    def __init__(self, scope: Scope, bound: set[str], tensors: set[str], floats: set[str], typing=None):
        self.scope = scope
        self.bound = bound
        self.tensors = tensors & bound
        self.floats = floats
        self.temps: dict[str, str] = {}
        self.typing = typing  # facts.Typing over observed dtype classes, or None

    def bind_temp(self, name: str, value: ast.expr, kind: str) -> None:
        self.temps[name] = kind
        if self.typing is not None and kind == TENSOR:
            cls = self.typing.tensor_class(value)
            if cls:
                self.typing.temps[name] = cls

    def kind(self, e: ast.expr) -> str | None:
        """SCALAR/TENSOR/VALUE/FINFO when `e` is provably total, else None; with observed facts,
        also tensor expressions that are total for the observed dtype classes."""
        found = self._static_kind(e)
        if found is None and self.typing is not None and self.typing.tensor_class(e):
            return TENSOR
        return found

    def _static_kind(self, e: ast.expr) -> str | None:
        if isinstance(e, ast.Constant):
            return SCALAR if isinstance(e.value, (bool, int, float)) else VALUE
        if isinstance(e, ast.Name):
            if e.id in self.temps:
                return self.temps[e.id]
            if e.id in self.tensors:
                return TENSOR
            if e.id in self.bound or self.scope.is_global_value(e.id):
                return VALUE
            return None
        if isinstance(e, ast.Attribute):
            return self._attribute(e)
        if isinstance(e, ast.UnaryOp):
            inner = self.kind(e.operand)
            if isinstance(e.op, ast.Not) and inner is not None and inner != TENSOR:
                return VALUE
            return SCALAR if inner == SCALAR and isinstance(e.op, (ast.USub, ast.UAdd)) else None
        if isinstance(e, ast.BinOp):
            return self._binop(e)
        if isinstance(e, ast.Compare) and len(e.ops) == 1 and isinstance(e.ops[0], _ORDER):
            kinds = [self.kind(e.left), self.kind(e.comparators[0])]
            if kinds.count(TENSOR) == 2 or not set(kinds) <= {SCALAR, TENSOR}:
                return None  # two tensors may fail to broadcast
            return TENSOR if TENSOR in kinds else VALUE
        if isinstance(e, ast.Call):
            return self._call(e)
        return None

    def _binop(self, e: ast.BinOp) -> str | None:
        """Scalar arithmetic, or a proven tensor with a scalar (no broadcasting can fail).
        `-` on a tensor needs a floating dtype fact (bool tensors reject subtraction)."""
        if not isinstance(e.op, (ast.Add, ast.Sub, ast.Mult)):
            return None
        kinds = (self.kind(e.left), self.kind(e.right))
        if kinds == (SCALAR, SCALAR):
            return SCALAR
        if set(kinds) != {SCALAR, TENSOR}:
            return None
        if isinstance(e.op, ast.Sub):
            tensor = e.left if kinds[0] == TENSOR else e.right
            if not (isinstance(tensor, ast.Name) and tensor.id in self.floats):
                return None
        return TENSOR

    def _attribute(self, e: ast.Attribute) -> str | None:
        if isinstance(e.value, ast.Name) and self.scope.denotes(e.value.id, torch):
            return VALUE if hasattr(torch, e.attr) else None
        base = self.kind(e.value)
        if base == TENSOR and e.attr in _TENSOR_META:
            return VALUE
        if base == FINFO and e.attr in _FINFO_FIELDS:
            return SCALAR
        return None

    def _call(self, e: ast.Call) -> str | None:
        if any(isinstance(a, ast.Starred) for a in e.args) or any(k.arg is None for k in e.keywords):
            return None
        func = e.func
        if _is_torch_attr(func, self.scope, {"finfo"}):
            arg = e.args[0] if len(e.args) == 1 and not e.keywords else None
            is_float = (
                isinstance(arg, ast.Attribute) and arg.attr == "dtype"
                and isinstance(arg.value, ast.Name) and arg.value.id in self.floats
            )
            return FINFO if is_float else None
        if _is_torch_attr(func, self.scope, _TOTAL_UNARY | _CLAMPS):
            if not e.args or self.kind(e.args[0]) != TENSOR:
                return None
            return self._tensor_op(func.attr, e.args[1:], e.keywords)
        if isinstance(func, ast.Attribute) and self.kind(func.value) == TENSOR:
            if func.attr in _TOTAL_UNARY | _CLAMPS:
                return self._tensor_op(func.attr, e.args, e.keywords)
        return None

    def _tensor_op(self, name: str, args, keywords) -> str | None:
        extra = list(args) + [k.value for k in keywords]
        if name in _CLAMPS:
            # clamp(t, min, max): needs at least one bound; scalar bounds cannot fail to broadcast.
            known = {k.arg for k in keywords} <= {"min", "max"}
            ok = known and 1 <= len(extra) <= 2 and all(self.kind(a) == SCALAR for a in extra)
            return TENSOR if ok else None
        return TENSOR if not extra else None
