"""Scope facts for one function: what a name is bound to, and which names are surely bound where.

The legality checks ask these questions; every answer is a *must* answer (unknown means no).
"""

from __future__ import annotations

import ast
import builtins
import types

from eqsat_torch.mend.source import own_statements

_MISSING = object()


def _param_names(args: ast.arguments) -> set[str]:
    names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    return names


def stored_names(node: ast.AST) -> set[str]:
    """Names a statement (or expression) binds, not looking into nested scopes."""
    names = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
            names.add(sub.id)
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and sub is not node:
            names.add(sub.name)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in sub.names}
        elif isinstance(sub, ast.ExceptHandler) and sub.name:
            names.add(sub.name)
    return names


class Scope:
    """Binding facts for `func` (an AST def) whose live code object is `code` with globals `globs`."""

    def __init__(self, func: ast.FunctionDef, code: types.CodeType, globs: dict):
        self.func = func
        self.globs = globs
        self.freevars = set(code.co_freevars)
        self.params = _param_names(func.args)
        declared = set()
        assigned = set()
        for stmt in own_statements(func):
            if isinstance(stmt, (ast.Global, ast.Nonlocal)):
                declared |= set(stmt.names)
            compound = isinstance(stmt, (ast.If, ast.While, ast.For, ast.With, ast.Try))
            assigned |= stored_names(header(stmt) if compound else stmt)  # bodies come as own statements
        self.declared = declared
        self.locals = (assigned | self.params) - declared
        self._parents = {id(c): p for p in ast.walk(func) for c in ast.iter_child_nodes(p)}

    def resolve(self, name: str):
        """The object `name` surely denotes here (module global or builtin), or _MISSING."""
        if name in self.locals or name in self.freevars or name in self.declared:
            return _MISSING
        if name in self.globs:
            return self.globs[name]
        return getattr(builtins, name, _MISSING)

    def denotes(self, name: str, obj) -> bool:
        return self.resolve(name) is obj

    def bound_before(self, stmt: ast.stmt) -> set[str]:
        """Names surely bound when `stmt` starts: parameters, plus names assigned by earlier
        straight-line statements of every block on the path from the def to `stmt`."""
        bound = set(self.params)
        node = stmt
        while node is not self.func:
            parent = self._parents[id(node)]
            for block in ("body", "orelse", "finalbody"):
                siblings = getattr(parent, block, None)
                if isinstance(siblings, list) and node in siblings:
                    for sibling in siblings[: siblings.index(node)]:
                        if isinstance(sibling, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Import, ast.ImportFrom)):
                            bound |= stored_names(sibling)
            node = parent
        return bound - {n for n in bound if n in self.declared}

    def ancestors(self, node: ast.AST):
        """Enclosing nodes of `node`, innermost first, up to the def."""
        while node is not self.func:
            node = self._parents[id(node)]
            yield node

    def used_outside(self, name: str, region: ast.AST) -> bool:
        """Is `name` read or written anywhere in the function outside `region`?"""
        inside = {id(n) for n in ast.walk(region)}
        return any(
            isinstance(n, ast.Name) and n.id == name and id(n) not in inside for n in ast.walk(self.func)
        )

    def is_global_value(self, name: str) -> bool:
        return self.resolve(name) is not _MISSING


def header(stmt: ast.stmt) -> ast.AST:
    """The part of a statement that binds names itself: a simple statement whole; of a compound one
    the for-target, with-as, walrus or except-as (its body's statements bind the rest)."""
    if isinstance(stmt, (ast.If, ast.While)):
        return stmt.test
    if isinstance(stmt, ast.For):
        return ast.Tuple([stmt.target, stmt.iter], ast.Load())
    if isinstance(stmt, ast.With):
        parts = [i.context_expr for i in stmt.items] + [i.optional_vars for i in stmt.items if i.optional_vars]
        return ast.Tuple(parts, ast.Load())
    if isinstance(stmt, ast.Try):
        return ast.Tuple([ast.Name(h.name, ast.Store()) for h in stmt.handlers if h.name], ast.Load())
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return ast.Name(stmt.name, ast.Store())
    return stmt
