"""[Rows] a loop over a small int table made from a Python list -> iterate the list's ints.

    shapes = torch.as_tensor(shape_list, dtype=torch.long)
        ==>  shapes = __mend_rt__.int_table(torch.as_tensor(shape_list, dtype=torch.long), shape_list)
    for level, (h, w) in enumerate(shapes):
        ==>  for level, (h, w) in enumerate(__mend_rt__.table_rows(shapes, 2, 65536)):
        x = m[:, pos : pos + h * w].view(b, h, w, 1)     (the body is unchanged)
        pos += h * w

Iterating a tensor yields 0-d tensors; using one as a size or slice bound reads its value, which
breaks the graph (Grounding-DINO's `spatial_shapes`, 5 breaks). The values are Python ints at the
place the table is made, so `int_table` keeps them on the tensor, and traced, `table_rows` hands the
loop those ints. Two proofs make that exact:

* **The body cannot tell an int from a 0-d int64 tensor** (`_IntUses`, static). Every read of a row
  name, and of a local derived from them (`pos` above), must be a slice bound, a size argument
  (`view`, `reshape`, `expand`, `repeat`, `new_*`, `torch.zeros/ones/empty/arange/linspace`),
  `v +- k/2` as a `linspace`/`arange` bound, or (a row name) a factor or divisor of a tensor indexed with
  `None` (at least 1-d, so it decides the dtype; the values agree for |v| <= 256, exact in every float dtype).
  No truth test, no indexing by it, no escape (return, call argument, container). Bounds keep int64
  and Python ints equal: `table_rows` admits values below the loop's bound (2**16, or 257 with a
  tensor factor), `int_table` fewer than 2**16 rows; an int expression has at most one `*` and
  constants below 2**16; a derived local starts as an int constant and only grows by `+=`/`-=`,
  once per row.
* **The table still holds those ints** (checked at run time). Dynamo cannot read a tensor's version
  counter without a data-dependent guard, so traced, `table_rows` asserts in the graph that the table
  equals the ints (an in-place write after `int_table` then fails loudly; it never goes unnoticed).
  Eagerly `table_rows` returns the tensor itself: uncompiled code runs exactly as before.

Which `torch.as_tensor(name, dtype=torch.long)` made the table is looked up the call stack by the
loop's name; that link only decides where the ints get attached, the two proofs above carry safety.
"""

from __future__ import annotations

import ast
import builtins
import copy
import math

import torch

from eqsat_torch.mend.predicate import Refuse, rt_call
from eqsat_torch.mend.scope import Scope, header, stored_names
from eqsat_torch.mend.source import own_statements

LIMIT = 2**16  # |value|, |constant| and row count bound (see the module docstring)
EXACT_IN_HALF = 2**8  # the largest |int| below which every int is exact in bfloat16 (and float16)
_SIZE_METHODS = {"view", "reshape", "expand", "repeat", "new_zeros", "new_ones", "new_empty"}
_TORCH_SIZED = {"zeros", "ones", "empty", "arange", "linspace"}
_TORCH_RANGES = {"arange", "linspace"}
_NOT_SIZES = {"dtype", "device", "layout", "requires_grad", "out", "pin_memory"}
_INT_OPS = (ast.Add, ast.Sub, ast.Mult)


def _torch_call(node: ast.AST, scope: Scope, names: set[str]) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in names
        and isinstance(node.func.value, ast.Name)
        and scope.denotes(node.func.value.id, torch)
    )


def table_loop(scope: Scope, stmt: ast.stmt) -> ast.For | None:
    """The innermost `for` around `stmt` whose iterable is a name or `enumerate(name)`."""
    for node in scope.ancestors(stmt):
        if isinstance(node, ast.For) and _iterated_name(node, scope) is not None:
            return node
    return None


def _iterated_name(loop: ast.For, scope: Scope) -> str | None:
    it = loop.iter
    if isinstance(it, ast.Name):
        return it.id
    if (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and scope.denotes(it.func.id, builtins.enumerate)
            and len(it.args) == 1 and not it.keywords and isinstance(it.args[0], ast.Name)):
        return it.args[0].id
    return None


def _row_names(loop: ast.For) -> list[str]:
    target = loop.target
    if isinstance(loop.iter, ast.Call):  # enumerate: (index, row)
        if not (isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(target.elts[0], ast.Name)):
            raise Refuse("the enumerate target is not `index, (names...)`")
        target = target.elts[1]
    if not (isinstance(target, ast.Tuple) and target.elts and all(isinstance(e, ast.Name) for e in target.elts)):
        raise Refuse(f"the row is not unpacked into names: {ast.unparse(loop.target)}")
    names = [e.id for e in target.elts]
    if len(set(names)) != len(names):
        raise Refuse("a row name repeats")
    return names


class _IntUses:
    """Must-analysis: every read of the row names (and of locals derived from them) is int-agnostic."""

    def __init__(self, scope: Scope, loop: ast.For, rows: list[str]):
        self.scope, self.loop, self.rows = scope, loop, set(rows)
        func = scope.func
        self.parents = {id(c): p for p in ast.walk(func) for c in ast.iter_child_nodes(p)}
        self.limit = LIMIT  # |value| bound the loop's uses need (lowered by a factor of a tensor)
        self.derived = self._derived()
        self.names = self.rows | self.derived

    def _int_expr(self, e: ast.expr, names: set[str]) -> bool:
        if isinstance(e, ast.Constant):
            return type(e.value) is int and abs(e.value) < LIMIT
        if isinstance(e, ast.Name):
            return e.id in names
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            return self._int_expr(e.operand, names)
        if isinstance(e, ast.BinOp) and isinstance(e.op, _INT_OPS):
            if not (self._int_expr(e.left, names) and self._int_expr(e.right, names)):
                return False
            if isinstance(e.op, ast.Mult):  # one product of two bounded factors, derived locals excluded
                mults = sum(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult) for n in ast.walk(e))
                derived = {n.id for n in ast.walk(e) if isinstance(n, ast.Name)} - self.rows
                return mults == 1 and not derived
            return True
        return False

    def _derived(self) -> set[str]:
        """Locals bound only as `n = <int const>` and `n += / -= <int expr of rows>` directly in the loop body."""
        bindings: dict[str, list[ast.stmt]] = {}
        for stmt in own_statements(self.scope.func):
            for name in stored_names(header(stmt)):
                bindings.setdefault(name, []).append(stmt)
        derived = set()
        for name, stmts in bindings.items():
            if name in self.rows or name in self.scope.params or name in self.scope.declared:
                continue
            inits = [s for s in stmts if isinstance(s, ast.Assign) and len(s.targets) == 1
                     and isinstance(s.targets[0], ast.Name) and self._int_expr(s.value, set())]
            grows = [s for s in stmts if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name)
                     and isinstance(s.op, (ast.Add, ast.Sub)) and self._int_expr(s.value, self.rows)
                     and s in self.loop.body]  # once per row: the sum stays bounded
            if grows and len(inits) + len(grows) == len(stmts):
                derived.add(name)
        return derived

    def check(self) -> None:
        for name in self.rows:
            binders = [s for s in own_statements(self.scope.func)
                       if s is not self.loop and name in stored_names(header(s))]
            if binders or name in self.scope.declared:
                raise Refuse(f"row name `{name}` is bound elsewhere in the function")
        nested = [n for n in ast.walk(self.scope.func) if n is not self.scope.func and isinstance(
            n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.comprehension))]
        for n in nested:
            used = {m.id for m in ast.walk(n) if isinstance(m, ast.Name)} & self.names
            if used:
                raise Refuse(f"`{sorted(used)[0]}` is used in a nested scope")
        for node in ast.walk(self.scope.func):
            if isinstance(node, ast.Name) and node.id in self.names and isinstance(node.ctx, ast.Load):
                self._check_use(node)

    def _check_use(self, node: ast.Name) -> None:
        expr = node
        parent = self.parents[id(expr)]
        while isinstance(parent, (ast.BinOp, ast.UnaryOp)) and self._int_expr(parent, self.names):
            expr, parent = parent, self.parents[id(parent)]
        if isinstance(parent, ast.Slice):
            return
        if isinstance(parent, ast.AugAssign) and parent.value is expr and isinstance(parent.target, ast.Name) \
                and parent.target.id in self.derived:
            return
        if isinstance(parent, ast.Call) and expr in parent.args + [k.value for k in parent.keywords
                                                                    if k.arg not in _NOT_SIZES]:
            if isinstance(parent.func, ast.Attribute) and parent.func.attr in _SIZE_METHODS:
                return
            if _torch_call(parent, self.scope, _TORCH_SIZED):
                return
        if self._half_offset_bound(expr, parent):
            return
        if self._factor_of_tensor(expr, parent):
            return
        where = ast.unparse(parent).splitlines()[0]
        raise Refuse(f"`{node.id}` would be a Python int instead of a 0-d tensor in `{where}`")

    def _half_offset_bound(self, expr: ast.expr, parent: ast.AST) -> bool:
        """`v +- k/2` as a linspace/arange bound: exact in float32 for |v| < 2**16."""
        if not (isinstance(expr, ast.Name) and expr.id in self.rows and isinstance(parent, ast.BinOp)
                and isinstance(parent.op, (ast.Add, ast.Sub)) and parent.left is expr
                and isinstance(parent.right, ast.Constant) and type(parent.right.value) is float):
            return False
        k = parent.right.value * 2
        if not (math.isfinite(k) and k == int(k) and abs(k) < 512):
            return False
        call = self.parents[id(parent)]
        return _torch_call(call, self.scope, _TORCH_RANGES) and parent in call.args

    def _factor_of_tensor(self, expr: ast.expr, parent: ast.AST) -> bool:
        """`t[..., None, ...] * v`, `v * t[...]` or `t[...] / v` (v a row name): t is at least 1-d, so it decides the
        result dtype either way. A 0-d tensor is cast to that dtype first, a Python scalar need not be (CUDA
        keeps it in float), so the loop asks `table_rows` for |v| <= 256: exact in every float dtype, neither
        path rounds it. `v / t` is refused: `tensor(65535) / fp16 2` is inf, `65535 / fp16 2` is 32768."""
        if not (isinstance(expr, ast.Name) and expr.id in self.rows):  # a product or a sum may pass 256
            return False
        if not (isinstance(parent, ast.BinOp) and (isinstance(parent.op, ast.Mult)
                                                   or isinstance(parent.op, ast.Div) and parent.right is expr)):
            return False
        other = parent.left if parent.right is expr else parent.right
        if not isinstance(other, ast.Subscript):
            return False
        index = other.slice.elts if isinstance(other.slice, ast.Tuple) else [other.slice]
        if any(isinstance(i, ast.Constant) and i.value is None for i in index):
            self.limit = min(self.limit, EXACT_IN_HALF + 1)
            return True
        return False


def rewrite_rows_loop(loop: ast.For, scope: Scope) -> tuple[str, list[ast.stmt]]:
    """(the table's name, the loop with its iterable wrapped in `table_rows`)."""
    name = _iterated_name(loop, scope)
    rows = _row_names(loop)
    if name in rows:
        raise Refuse(f"`{name}` is rebound by its own loop")
    uses = _IntUses(scope, loop, rows)
    uses.check()
    wrapped = rt_call("table_rows", ast.Name(name, ast.Load()), ast.Constant(len(rows)), ast.Constant(uses.limit))
    if isinstance(loop.iter, ast.Call):
        wrapped = ast.Call(copy.deepcopy(loop.iter.func), [wrapped], [])
    new = ast.For(copy.deepcopy(loop.target), wrapped, copy.deepcopy(loop.body), copy.deepcopy(loop.orelse),
                  type_comment=None)
    return name, [new]


def is_table_creation(stmt: ast.stmt, name: str, scope: Scope) -> bool:
    """`name = torch.as_tensor(src, dtype=torch.long|torch.int64, ...)` (or `torch.tensor`), src a name."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id == name and _torch_call(stmt.value, scope, {"as_tensor", "tensor"})):
        return False
    call = stmt.value
    dtype = [k.value for k in call.keywords if k.arg == "dtype"]
    return (len(call.args) == 1 and isinstance(call.args[0], ast.Name) and len(dtype) == 1
            and isinstance(dtype[0], ast.Attribute) and dtype[0].attr in ("long", "int64")
            and isinstance(dtype[0].value, ast.Name) and scope.denotes(dtype[0].value.id, torch))


def rewrite_table_creation(stmt: ast.Assign) -> list[ast.stmt]:
    """Attach the source ints to the fresh tensor (`src` is a name: reading it twice has no effect)."""
    value = rt_call("int_table", stmt.value, ast.Name(stmt.value.args[0].id, ast.Load()))
    return [ast.Assign([ast.Name(stmt.targets[0].id, ast.Store())], value)]
