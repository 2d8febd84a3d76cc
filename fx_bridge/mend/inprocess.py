"""Apply planned rewrites to loaded functions (stdlib `ast`), without touching files.

The whole file is parsed, so line numbers are the original ones; the rewritten def is compiled
under the original filename and swapped into the live function objects' `__code__`, so every
reference (bound methods, decorators, closures) sees it and Dynamo's user stack points to real lines.
"""

from __future__ import annotations

import ast
import copy
from collections import defaultdict

from eqsat_torch.mend import runtime
from eqsat_torch.mend.plan import Decision
from eqsat_torch.mend.predicate import RT, Refuse
from eqsat_torch.mend.source import live_functions


class _Replace(ast.NodeTransformer):
    def __init__(self, replacements: dict[tuple[int, int], list[ast.stmt]]):
        self.replacements = replacements

    def generic_visit(self, node):
        node = super().generic_visit(node)
        if isinstance(node, ast.stmt) and (node.lineno, node.col_offset) in self.replacements:
            new = copy.deepcopy(self.replacements[(node.lineno, node.col_offset)])
            if isinstance(node, ast.For) and len(new) == 1 and isinstance(new[0], ast.For):
                # a loop header rewrite: keep the (already visited) body and its real line numbers
                node.iter = ast.copy_location(new[0].iter, node.iter)
                for sub in ast.walk(node.iter):
                    if "lineno" in sub._attributes:
                        ast.copy_location(sub, node.iter)
                return node
            for stmt in new:
                for sub in ast.walk(stmt):
                    if "lineno" in sub._attributes:
                        sub.lineno, sub.end_lineno = node.lineno, node.end_lineno
                        sub.col_offset, sub.end_col_offset = node.col_offset, node.end_col_offset
            return new
        return node


def _strip_def_time_parts(func: ast.FunctionDef) -> None:
    """Decorators, defaults and annotations run at def time; the live function keeps its own.
    One identity decorator stays on the first decorator's line, so `co_firstlineno` is unchanged."""
    if func.decorator_list:
        identity = ast.parse("lambda f: f", mode="eval").body
        func.decorator_list = [ast.copy_location(identity, func.decorator_list[0])]
    func.returns = None
    args = func.args
    for arg in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if arg is not None:
            arg.annotation = None
    args.defaults = [ast.Constant(None) for _ in args.defaults]
    args.kw_defaults = [ast.Constant(None) if d is not None else None for d in args.kw_defaults]


def _mangled_names(func: ast.FunctionDef) -> bool:
    names = [n.id for n in ast.walk(func) if isinstance(n, ast.Name)]
    names += [n.attr for n in ast.walk(func) if isinstance(n, ast.Attribute)]
    return any(n.startswith("__") and not n.endswith("__") and not n.startswith("__mend_") for n in names)


def compile_rewritten(filename: str, func: ast.FunctionDef, decisions: list[Decision], freevars: tuple[str, ...]):
    """Code object of `func` with the decisions' statements replaced; its free variables must match."""
    if _mangled_names(func):
        raise Refuse("uses private (name-mangled) names; compiling outside its class would change them")
    new = _Replace({(d.stmt.lineno, d.stmt.col_offset): d.replacement for d in decisions}).visit(copy.deepcopy(func))
    _strip_def_time_parts(new)
    cells = [ast.Assign([ast.Name(v, ast.Store())], ast.Constant(None)) for v in freevars]
    factory = ast.FunctionDef(
        name="__mend_factory__",
        args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=cells + [new, ast.Return(ast.Name(new.name, ast.Load()))],
        decorator_list=[],
    )
    module = ast.Module([ast.copy_location(factory, func)], [])
    ast.fix_missing_locations(module)
    namespace: dict = {}
    exec(compile(module, filename, "exec"), namespace)
    code = namespace["__mend_factory__"]().__code__
    if code.co_freevars != freevars:
        raise Refuse(f"free variables changed {freevars} -> {code.co_freevars}")
    return code


class Patch:
    """Rewrites applied to live functions; `undo()` restores the original code objects."""

    def __init__(self) -> None:
        self._saved: list[tuple[object, object]] = []
        self._globals: list[dict] = []
        self._by_function: dict[tuple[str, int], list[Decision]] = defaultdict(list)

    def apply(self, decisions: list[Decision]) -> list[Decision]:
        """Apply accepted decisions; a function already patched is recompiled from its original
        source with all its decisions. Returns the decisions refused at compile time."""
        touched = set()
        for d in decisions:
            if d.rule:
                key = (d.filename, d.func.lineno)
                self._by_function[key].append(d)
                touched.add(key)
        refused = []
        for key in touched:
            group = [d for d in self._by_function[key] if d.rule]
            filename, func = group[0].filename, group[0].func
            functions = live_functions(filename, func)
            try:
                code = compile_rewritten(filename, func, group, functions[0].__code__.co_freevars)
            except Refuse as why:
                for d in group:
                    d.rule, d.reason = None, str(why)
                refused += group
                continue
            for fn in functions:
                self._saved.append((fn, fn.__code__))
                fn.__code__ = code
                if RT not in fn.__globals__:
                    fn.__globals__[RT] = runtime
                    self._globals.append(fn.__globals__)
        return refused

    def undo(self) -> None:
        for fn, code in reversed(self._saved):
            fn.__code__ = code
        for globs in self._globals:
            globs.pop(RT, None)
        self._saved.clear()
        self._globals.clear()
        self._by_function.clear()
