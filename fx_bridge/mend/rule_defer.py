"""[Defer] `print(...)`, `logger.<level>(...)`, `logging.<level>(...)`, `warnings.warn(...)` as a
statement -> `__mend_rt__.defer(__name__, "logger", "warning", args, kwargs, where)`.

Legal when: the callee is bound (module global or builtin, not shadowed by a local, closure or
`global` rebinding) to the real print / a `logging.Logger` / the `logging` or `warnings` module.
Arguments are still evaluated in place; under Dynamo the call becomes an in-graph `mend::emit`
node (effects.py) that runs it when the graph runs, with tensors cloned at the call.
`warnings.warn` keeps its original file:line attribution (`where`), so it is rewritten only
without `stacklevel`/`source` (their attribution cannot be reconstructed after the fact).
"""

from __future__ import annotations

import ast
import builtins
import logging
import sys
import warnings

from eqsat_torch.mend.predicate import Refuse, rt_call
from eqsat_torch.mend.scope import Scope

LOGGER_METHODS = {"debug", "info", "warning", "warn", "error", "critical", "fatal", "log",
                  "warning_once", "info_once", "warning_advice"}
LOGGING_FUNCTIONS = {"debug", "info", "warning", "warn", "error", "critical", "log"}


def _target(func: ast.expr, scope: Scope) -> tuple[ast.expr, str | None, bool]:
    """(receiver expression, method name or None, is_warnings_warn)."""
    if isinstance(func, ast.Name):
        if scope.denotes(func.id, builtins.print):
            return func, None, False
        if scope.denotes(func.id, warnings.warn):
            return func, None, True
        raise Refuse(f"`{func.id}` is not provably the builtin print / warnings.warn")
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        obj = scope.resolve(func.value.id)
        if obj is warnings and func.attr == "warn":
            return func, None, True
        if obj is logging and func.attr in LOGGING_FUNCTIONS:
            return func.value, func.attr, False
        if isinstance(obj, (logging.Logger, logging.LoggerAdapter)) and func.attr in LOGGER_METHODS:
            return func.value, func.attr, False
    raise Refuse(f"callee `{ast.unparse(func)}` is not provably print/logging/warnings")


def rewrite_defer(node: ast.Expr, scope: Scope, filename: str) -> list[ast.stmt]:
    call = node.value
    receiver, method, is_warn = _target(call.func, scope)
    module = sys.modules.get(scope.globs.get("__name__", ""))
    if module is None or vars(module) is not scope.globs:
        raise Refuse("the module is not importable by its __name__, so the emitting op could not find the callee")
    if receiver is call.func and not is_warn and any(k.arg == "file" for k in call.keywords):
        raise Refuse("print(file=...): the function may read that stream back before the graph emits")
    where: ast.expr = ast.Constant(None)
    if is_warn:
        if len(call.args) > 2 or {k.arg for k in call.keywords} - {"message", "category"}:
            raise Refuse("warnings.warn with stacklevel/source: its attribution cannot be preserved")
        same_file = scope.resolve("__file__") == filename
        file_node = ast.Name("__file__", ast.Load()) if same_file else ast.Constant(filename)
        where = ast.Tuple([file_node, ast.Constant(call.lineno)], ast.Load())
    args = ast.Tuple(list(call.args), ast.Load())
    kwargs = ast.Dict([k.arg and ast.Constant(k.arg) for k in call.keywords], [k.value for k in call.keywords])
    site = [ast.Name("__name__", ast.Load()), ast.Constant(ast.unparse(receiver)), ast.Constant(method)]
    return [ast.Expr(rt_call("defer", *site, args, kwargs, where))]
