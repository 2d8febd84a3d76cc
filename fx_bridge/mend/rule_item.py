"""[Item] `flag = t.any().item()` read only as the condition of `if`s -> keep `flag` a tensor, predicate the ifs.

    flag = (y < 0).any().item()              flag = __mend_rt__.item_cond((y < 0).any())
    if flag:                          ==>    p = flag
        z = y.abs()                          t_z = y.abs(); f_z = y * 3
    else:                                    z = __mend_rt__.select(p, t_z, f_z)
        z = y * 3

Legal when: `flag` is a local assigned by this statement only; every read of it is inside an `if`
test, reached only through `not`/`and`/`or` (so only its truth value matters, and a 1-element
tensor has the truth value of its `.item()`); and every such `if` passes the [Where] rule. Run
eagerly, `item_cond` still returns `.item()`; traced, it returns a copy of the 1-element tensor
(a copy, so a later in-place update of the source cannot change the branch taken).
"""

from __future__ import annotations

import ast

from eqsat_torch.mend.predicate import Refuse, rt_call
from eqsat_torch.mend.rule_where import rewrite_where
from eqsat_torch.mend.scope import Scope
from eqsat_torch.mend.source import own_statements


def is_item_assign(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Attribute)
        and node.value.func.attr == "item"
        and not node.value.args
        and not node.value.keywords
    )


def _truth_only_ifs(func: ast.FunctionDef, name: str, assign: ast.Assign) -> list[ast.If]:
    """The `if`s whose tests read `name`, refusing any other read or write of it."""
    parents = {id(c): p for p in ast.walk(func) for c in ast.iter_child_nodes(p)}
    nested = [n for n in ast.walk(func) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                                            ast.ClassDef, ast.comprehension)) and n is not func]
    if any(isinstance(s, ast.Name) and s.id == name for n in nested for s in ast.walk(n)):
        raise Refuse(f"`{name}` is used in a nested scope")
    ifs: list[ast.If] = []
    for node in ast.walk(func):
        if not (isinstance(node, ast.Name) and node.id == name) or node is assign.targets[0]:
            continue
        if not isinstance(node.ctx, ast.Load):
            raise Refuse(f"`{name}` is assigned more than once")
        child, parent = node, parents[id(node)]
        while isinstance(parent, ast.BoolOp) or isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
            child, parent = parent, parents[id(parent)]
        if not (isinstance(parent, ast.If) and parent.test is child):
            raise Refuse(f"`{name}` is used as a value, not only as an `if` condition: "
                         f"{ast.unparse(parent).splitlines()[0]}")
        if parent not in ifs:
            ifs.append(parent)
    if not ifs:
        raise Refuse(f"`{name}` is never used as an `if` condition")
    return ifs


def rewrite_item(node: ast.Assign, scope: Scope, observed: dict) -> list[tuple[ast.stmt, list[ast.stmt]]]:
    """(statement, replacement) pairs: the assignment and every `if` it feeds.
    `observed`: facts.observe's classes keyed by `if` line (within this function's file)."""
    name = node.targets[0].id
    own = list(own_statements(scope.func))
    if node not in own:
        raise Refuse("not a statement of the function body")
    rewrites: list[tuple[ast.stmt, list[ast.stmt]]] = []
    for branch in _truth_only_ifs(scope.func, name, node):
        if branch.lineno <= node.lineno:
            raise Refuse(f"`if` at line {branch.lineno} may run before the assignment")
        try:
            rewrites.append((branch, rewrite_where(branch, scope, observed.get(branch.lineno))))
        except Refuse as why:
            raise Refuse(f"the `if` at line {branch.lineno} cannot be predicated: {why}") from None
    value = rt_call("item_cond", node.value.func.value)
    return [(node, [ast.Assign([ast.Name(name, ast.Store())], value)])] + rewrites
