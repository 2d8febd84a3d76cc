"""Observed facts: the dtype classes of the tensors at a break, and what they make total.

`y - 1` cannot be speculated in general (it raises on a bool tensor), but the mender runs the model:
`observe` records, at each data-dependent `if`, the dtype class of every local tensor. `Typing`
then proves a branch value total *given* those classes (elementwise arithmetic, comparisons, casts,
float math), and lists the facts it used; the rewrite is wrapped in a guard on exactly those facts
(`runtime.facts_hold`), so a call with other types runs the original `if` unchanged. Under Dynamo the
guard is static (dtype and shape metadata), so it costs no graph break.
"""

from __future__ import annotations

import ast
import os
import sys

import torch

from eqsat import ops

FLOAT, INT, BOOL = "float", "int", "bool"
DTYPES = {
    FLOAT: (torch.float16, torch.bfloat16, torch.float32, torch.float64),
    INT: (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64),
    BOOL: (torch.bool,),
}
_RANK = {BOOL: 0, INT: 1, FLOAT: 2}
_CASTS = {"float": FLOAT, "double": FLOAT, "half": FLOAT, "bfloat16": FLOAT,
          "int": INT, "long": INT, "short": INT, "char": INT, "byte": INT, "bool": BOOL}
_SAME = {"clone", "detach", "contiguous"}
_TO_BOOL_REDUCTIONS = {"any", "all", "isnan", "isinf", "isfinite", "logical_not"}


def dtype_class(dtype: torch.dtype) -> str | None:
    """float / int / bool for the dtypes the typing rules cover (not complex, float8, quantized)."""
    return next((cls for cls, dtypes in DTYPES.items() if dtype in dtypes), None)


def _promote(a: str, b: str) -> str:
    return a if _RANK[a] >= _RANK[b] else b


# ------------------------------------------------------------------ observing the eager run


def observe(fn, args, kwargs, lines: set[tuple[str, int]]) -> dict[tuple[str, int], dict[str, str]]:
    """Run `fn` eagerly; at each (realpath, line) in `lines`, the dtype class of every local tensor.
    A name seen with two classes (a shared `forward` called with different dtypes) is dropped."""
    files = {f for f, _ in lines}
    seen: dict[tuple[str, int], dict[str, str | None]] = {}
    real: dict[str, str] = {}

    def local(frame, event, arg):
        if event == "line":
            key = (real[frame.f_code.co_filename], frame.f_lineno)
            if key in lines:
                record = seen.setdefault(key, {})
                for name, value in frame.f_locals.items():
                    if isinstance(value, torch.Tensor):
                        cls = dtype_class(value.dtype)
                        record[name] = cls if record.get(name, cls) == cls else None
        return local

    def calls(frame, event, arg):
        name = frame.f_code.co_filename
        if name not in real:
            real[name] = os.path.realpath(name)
        return local if real[name] in files else None

    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        fn(*args, **(kwargs or {}))
    finally:
        sys.settrace(previous)
    return {key: {n: c for n, c in record.items() if c} for key, record in seen.items()}


# ------------------------------------------------------------------ typing under those facts


class Typing:
    """Dtype classes of tensor expressions that are total given the observed classes of names.

    `used` collects the facts a proof relied on, `combined` the names that meet another tensor in
    a binary op (these must be broadcastable and on one device, which the guard checks too).
    """

    def __init__(self, observed: dict[str, str], is_torch):
        self.observed = observed
        self.is_torch = is_torch  # name -> does it denote the torch module here?
        self.used: dict[str, str] = {}
        self.combined: set[str] = set()
        self.temps: dict[str, str] = {}

    def tensor_class(self, e: ast.expr) -> str | None:
        """Class of `e` if it is a tensor expression total under the facts, else None."""
        if isinstance(e, ast.Name):
            if e.id in self.temps:
                return self.temps[e.id]
            cls = self.observed.get(e.id)
            if cls:
                self.used[e.id] = cls
            return cls
        if isinstance(e, ast.BinOp):
            return self._binop(e)
        if isinstance(e, ast.Compare) and len(e.ops) == 1:
            return self._compare(e)
        if isinstance(e, ast.UnaryOp):
            inner = self.tensor_class(e.operand)
            if isinstance(e.op, ast.USub):
                return inner if inner in (INT, FLOAT) else None
            if isinstance(e.op, ast.Invert):
                return inner if inner in (INT, BOOL) else None
            return None
        if isinstance(e, ast.Call) and not e.keywords and not any(isinstance(a, ast.Starred) for a in e.args):
            return self._call(e)
        return None

    def _operand(self, e: ast.expr) -> tuple[str, bool] | None:
        """(class, is_tensor) of a binary operand: a tensor expression or a Python number constant."""
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub) and isinstance(e.operand, ast.Constant):
            e = e.operand
        if isinstance(e, ast.Constant) and type(e.value) in (bool, int, float):
            return {bool: BOOL, int: INT, float: FLOAT}[type(e.value)], False
        cls = self.tensor_class(e)
        return (cls, True) if cls else None

    def _pair(self, left: ast.expr, right: ast.expr):
        sides = self._operand(left), self._operand(right)
        if None in sides or not (sides[0][1] or sides[1][1]):
            return None
        if sides[0][1] and sides[1][1]:
            self.combined |= _leaves(left) | _leaves(right)
        return sides

    def _binop(self, e: ast.BinOp) -> str | None:
        sides = self._pair(e.left, e.right)
        if sides is None:
            return None
        (a, _), (b, _) = sides
        op = e.op
        if isinstance(op, (ast.Add, ast.Mult)):
            return _promote(a, b)
        if isinstance(op, ast.Sub):  # bool tensors (and bool operands) reject subtraction
            return _promote(a, b) if BOOL not in (a, b) else None
        if isinstance(op, ast.Div):
            return FLOAT
        if isinstance(op, (ast.FloorDiv, ast.Mod, ast.Pow)):  # integer division by 0 and int ** -n raise
            return FLOAT if FLOAT in (a, b) and BOOL not in (a, b) else None
        if isinstance(op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
            return _promote(a, b) if FLOAT not in (a, b) else None
        return None

    def _compare(self, e: ast.Compare) -> str | None:
        if not isinstance(e.ops[0], (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
            return None
        return BOOL if self._pair(e.left, e.comparators[0]) is not None else None

    def _call(self, e: ast.Call) -> str | None:
        func = e.func
        if not isinstance(func, ast.Attribute):
            return None
        if isinstance(func.value, ast.Name) and self.is_torch(func.value.id):
            if len(e.args) != 1 or func.attr in _CASTS or not callable(getattr(torch, func.attr, None)):
                return None
            receiver, name = e.args[0], func.attr
        else:
            if e.args and func.attr not in ("to", "type_as"):
                return None
            receiver, name = func.value, func.attr
        cls = self.tensor_class(receiver)
        if cls is None:
            return None
        if name in _CASTS and not e.args:
            return _CASTS[name]
        if name == "to" and len(e.args) == 1:
            target = e.args[0]
            is_dtype = isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
            if is_dtype and self.is_torch(target.value.id) and isinstance(getattr(torch, target.attr, None), torch.dtype):
                return dtype_class(getattr(torch, target.attr))
            return None
        if name == "type_as" and len(e.args) == 1:
            return self.tensor_class(e.args[0])
        if name in _SAME:
            return cls
        if cls in (FLOAT, INT) and name in ops.total_on(cls):  # the rows' ``total_on``
            return cls
        if name == "sum":
            return FLOAT if cls == FLOAT else INT
        if name in _TO_BOOL_REDUCTIONS:
            return BOOL if name in ("any", "all", "logical_not") or cls == FLOAT else None
        return None

    def guard(self, rt_call) -> ast.expr:
        """`facts_hold((names...), (classes...), (combined names...))`, the rewrite's precondition."""
        names = sorted(self.used)
        load = [ast.Name(n, ast.Load()) for n in names]
        classes = [ast.Constant(self.used[n]) for n in names]
        combined = [ast.Name(n, ast.Load()) for n in sorted(self.combined & set(names))]
        return rt_call("facts_hold", ast.Tuple(load, ast.Load()), ast.Tuple(classes, ast.Load()),
                       ast.Tuple(combined, ast.Load()))


def _leaves(e: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(e) if isinstance(n, ast.Name)}
