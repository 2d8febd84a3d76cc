"""Map a Dynamo file:line to the exact AST node, and to the live function objects running it."""

from __future__ import annotations

import ast
import functools
import gc
import os
import tokenize
import types


def read_source(filename: str) -> tuple[str, str]:
    """A user's file as text, with its line endings as written (the diff must keep them), and its
    encoding: the PEP 263 coding line or BOM, else UTF-8, as Python itself reads it."""
    with tokenize.open(filename) as f:
        f.reconfigure(newline="")
        return f.read(), f.encoding


@functools.cache
def parse_file(filename: str) -> ast.Module | None:
    """The whole file's AST (line numbers are the real ones), or None when it is not Python source."""
    if not filename.endswith(".py") or not os.path.exists(filename):
        return None
    try:
        return ast.parse(read_source(filename)[0], filename)
    except (SyntaxError, UnicodeDecodeError):
        return None


def _spans(node: ast.AST, lineno: int) -> bool:
    return node.lineno <= lineno <= (node.end_lineno or node.lineno)


def first_line(func: ast.FunctionDef) -> int:
    """`co_firstlineno` of the compiled function: its first decorator's line, else the def line."""
    return min([func.lineno] + [d.lineno for d in func.decorator_list])


def enclosing_function(tree: ast.Module, lineno: int) -> ast.FunctionDef | None:
    """Innermost (async) def whose body spans `lineno`."""
    best = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _spans(node, lineno):
            if node.body[0].lineno <= lineno and (best is None or node.lineno > best.lineno):
                best = node
    return best


def own_statements(func: ast.FunctionDef):
    """Statements of `func`, nested blocks included, nested defs/classes excluded."""
    stack = list(reversed(func.body))
    while stack:
        stmt = stack.pop()
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(stmt, name, [])
            stack.extend(reversed([c for c in children if isinstance(c, ast.stmt)]))
            for handler in children:
                if isinstance(handler, (ast.ExceptHandler, getattr(ast, "match_case", ()))):
                    stack.extend(reversed(handler.body))


def statement_at(func: ast.FunctionDef, lineno: int) -> ast.stmt | None:
    """Innermost statement of `func` spanning `lineno` (an `if` counts only through its test)."""
    best = None
    for stmt in own_statements(func):
        if isinstance(stmt, (ast.If, ast.While)):
            hit = _spans(stmt.test, lineno) or stmt.lineno == lineno
        elif isinstance(stmt, (ast.For, ast.With, ast.Try, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            hit = False
        else:
            hit = _spans(stmt, lineno)
        if hit and (best is None or stmt.lineno >= best.lineno):
            best = stmt
    return best


def live_functions(filename: str, func: ast.FunctionDef) -> list[types.FunctionType]:
    """Every loaded function object compiled from `func` (methods, closures, decorated inner functions)."""
    key = (os.path.realpath(filename), func.name, first_line(func))
    found = []
    for obj in gc.get_objects():
        if type(obj) is types.FunctionType:
            code = obj.__code__
            if (code.co_name, code.co_firstlineno) == key[1:] and os.path.realpath(code.co_filename) == key[0]:
                found.append(obj)
    return found
