"""[Trap] `if tensor_cond: raise E("msg")` -> `__mend_rt__.trap(cond, E, "msg")`, an in-graph assertion.

Legal when: the body is exactly one `raise` of a builtin exception class with a constant message
(so building the message eagerly cannot fault), no `else`, and no enclosing `try` (a handler
could otherwise observe the different exception type). `runtime.boundary` restores the type.
"""

from __future__ import annotations

import ast
import builtins

from eqsat_torch.mend.predicate import (
    Refuse,
    convert,
    first_leaf,
    looks_tensor_valued,
    rt_call,
    split_static_prefix,
)
from eqsat_torch.mend.scope import Scope
from eqsat_torch.mend.speculation import Speculation, float_dtype_facts, tensor_names


def is_validation_guard(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and not node.orelse and len(node.body) == 1 and isinstance(node.body[0], ast.Raise)


def _exception_and_message(raise_stmt: ast.Raise, scope: Scope) -> tuple[ast.expr, ast.expr]:
    exc = raise_stmt.exc
    if raise_stmt.cause is not None:
        raise Refuse("raise ... from ...")
    call_args: list[ast.expr] = []
    if isinstance(exc, ast.Call):
        if exc.keywords or len(exc.args) > 1:
            raise Refuse("exception built with more than one argument")
        call_args, exc = exc.args, exc.func
    if not isinstance(exc, ast.Name):
        raise Refuse("exception class is not a plain name")
    cls = getattr(builtins, exc.id, None)
    if not (isinstance(cls, type) and issubclass(cls, Exception) and scope.denotes(exc.id, cls)):
        raise Refuse(f"`{exc.id}` is not provably a builtin exception class")
    message = call_args[0] if call_args else ast.Constant("")
    if not (isinstance(message, ast.Constant) and isinstance(message.value, str)):
        raise Refuse("message is not a constant string (building it eagerly might fault)")
    return exc, message


def rewrite_trap(node: ast.If, scope: Scope) -> list[ast.stmt]:
    if any(isinstance(parent, ast.Try) for parent in scope.ancestors(node)):
        raise Refuse("inside try: a handler could observe the changed exception type")
    exc, message = _exception_and_message(node.body[0], scope)
    prefix, test = split_static_prefix(node.test, lambda e: looks_tensor_valued(e, scope))
    tensors = tensor_names(first_leaf(test), scope)
    spec = Speculation(scope, scope.bound_before(node), tensors, float_dtype_facts(node.test, scope))
    out: list[ast.stmt] = [ast.Expr(rt_call("trap", convert(test, scope, spec), exc, message))]
    if prefix is not None:
        out = [ast.If(prefix, out, [])]
    return out
