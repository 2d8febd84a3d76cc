"""Decide, per break site, which statement to rewrite and how, or why it must be left alone."""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field

from eqsat_torch.mend import runtime
from eqsat_torch.mend.detect import DATA_DEPENDENT, DYNAMIC_SHAPE, SCALAR_READ, SIDE_EFFECT, Site
from eqsat_torch.mend.predicate import Refuse
from eqsat_torch.mend.rule_defer import rewrite_defer
from eqsat_torch.mend.rule_item import is_item_assign, rewrite_item
from eqsat_torch.mend.rule_rows import (
    is_table_creation,
    rewrite_rows_loop,
    rewrite_table_creation,
    table_loop,
)
from eqsat_torch.mend.rule_trap import is_validation_guard, rewrite_trap
from eqsat_torch.mend.rule_where import rewrite_where
from eqsat_torch.mend.scope import Scope
from eqsat_torch.mend.source import (
    enclosing_function,
    live_functions,
    own_statements,
    parse_file,
    statement_at,
)


@dataclass
class Decision:
    site: Site
    filename: str | None = None
    func: ast.FunctionDef | None = None
    stmt: ast.stmt | None = None
    rule: str | None = None  # "where" | "trap" | "defer" | "item" | "rows"; None = left alone
    reason: str = ""
    replacement: list[ast.stmt] | None = None
    companions: list[Decision] = field(default_factory=list)  # rewrites that stand or fall with this one

    @property
    def key(self) -> tuple[str, int, int] | None:
        return (self.filename, self.stmt.lineno, self.stmt.col_offset) if self.stmt else None

    def describe(self) -> str:
        where = f"{self.filename}:{self.stmt.lineno}" if self.stmt else self.site.where
        if self.rule:
            return f"[{self.rule}] {where}: rewritten"
        return f"[left alone] {where}: {self.reason}"


def _try_frame(site: Site, filename: str, lineno: int, observed: dict) -> Decision:
    if os.path.realpath(filename) == os.path.realpath(runtime.__file__):
        return Decision(site, reason="a mend helper fell back to Python at trace time")
    tree = parse_file(filename)
    func = enclosing_function(tree, lineno) if tree else None
    stmt = statement_at(func, lineno) if func else None
    if stmt is None:
        return Decision(site, reason=f"no Python source statement at {filename}:{lineno}")
    decision = Decision(site, filename, func, stmt)
    functions = live_functions(filename, func)
    if not functions:
        decision.reason = f"no loaded function object for `{func.name}`"
        return decision
    scope = Scope(func, functions[0].__code__, functions[0].__globals__)
    try:
        if isinstance(stmt, ast.If) and is_validation_guard(stmt):
            decision.rule, decision.replacement = "trap", rewrite_trap(stmt, scope)
        elif isinstance(stmt, ast.If):
            facts = observed.get((os.path.realpath(filename), stmt.lineno))
            decision.rule, decision.replacement = "where", rewrite_where(stmt, scope, facts)
        elif site.category != SIDE_EFFECT and (loop := table_loop(scope, stmt)) is not None:
            _rows(decision, loop, scope)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            decision.rule, decision.replacement = "defer", rewrite_defer(stmt, scope, filename)
        elif is_item_assign(stmt):
            real = os.path.realpath(filename)
            facts = {line: classes for (f, line), classes in observed.items() if f == real}
            (_, decision.replacement), *ifs = rewrite_item(stmt, scope, facts)
            decision.rule = "item"
            decision.companions = [Decision(site, filename, func, s, "where", replacement=r) for s, r in ifs]
        elif site.category in (SCALAR_READ, DYNAMIC_SHAPE):
            decision.reason = f"no rewrite rule for {site.category}: its Python value leaves the graph"
        else:
            decision.reason = f"no rewrite rule for `{type(stmt).__name__}`"
    except Refuse as why:
        decision.rule, decision.reason = None, str(why)
    for d in [decision] + decision.companions:
        for new in d.replacement or []:
            ast.fix_missing_locations(ast.copy_location(new, d.stmt))
    return decision


def _rows(decision: Decision, loop, scope: Scope) -> None:
    """[Rows]: the loop, plus the statement up the call stack (this frame first) that makes its table."""
    name, replacement = rewrite_rows_loop(loop, scope)
    for filename, lineno in reversed(decision.site.frames):
        tree = parse_file(filename)
        func = enclosing_function(tree, lineno) if tree else None
        candidates = [s for s in own_statements(func) if isinstance(s, ast.Assign)] if func else []
        if not any(isinstance(t, ast.Name) and t.id == name for s in candidates for t in s.targets):
            continue
        functions = live_functions(filename, func)
        if not functions:
            continue
        caller = Scope(func, functions[0].__code__, functions[0].__globals__)
        made = [s for s in candidates if is_table_creation(s, name, caller)]
        if len(made) == 1:
            decision.stmt, decision.rule, decision.replacement = loop, "rows", replacement
            decision.companions = [Decision(decision.site, filename, func, made[0], "rows",
                                            replacement=rewrite_table_creation(made[0]))]
            return
    raise Refuse(f"no `{name} = torch.as_tensor(<list>, dtype=torch.long)` up the call stack")


def branch_lines(sites: list[Site]) -> set[tuple[str, int]]:
    """(realpath, line) of the data-dependent `if` statements at these sites: where to observe facts."""
    lines = set()
    for site in sites:
        if site.category not in (DATA_DEPENDENT, SCALAR_READ):
            continue
        tree = parse_file(site.filename)
        func = enclosing_function(tree, site.lineno) if tree else None
        stmt = statement_at(func, site.lineno) if func else None
        real = os.path.realpath(site.filename)
        if isinstance(stmt, ast.If):
            lines.add((real, stmt.lineno))
        elif stmt is not None and is_item_assign(stmt):  # the ifs its value may feed
            lines |= {(real, s.lineno) for s in own_statements(func) if isinstance(s, ast.If)}
    return lines


def plan(sites: list[Site], observed: dict | None = None) -> list[Decision]:
    """One decision per site; side effects are looked up the user stack (logger wrappers).
    `observed`: facts.observe's dtype classes per (realpath, line) of a data-dependent `if`."""
    decisions = []
    for site in sites:
        innermost = (site.filename, site.lineno)
        frames = [innermost] + [f for f in reversed(site.frames) if f != innermost]
        if site.category != SIDE_EFFECT:
            frames = frames[:1]
        first = None
        for filename, lineno in frames:
            decision = _try_frame(site, filename, lineno, observed or {})
            first = first or decision
            if decision.rule:
                break
        else:
            decision = first
        decisions += [decision] + decision.companions
    return decisions
