"""Branch conditions: split off the static prefix and turn `not`/`and`/`or`/`torch.equal` into
helpers that stay tensors (so the condition can feed `torch.where` or an in-graph assertion)."""

from __future__ import annotations

import ast

import torch

from eqsat_torch.mend.scope import Scope
from eqsat_torch.mend.speculation import Speculation

RT = "__mend_rt__"


class Refuse(Exception):
    """The static check could not prove a rewrite safe; the message says why."""


def rt_call(helper: str, *args: ast.expr) -> ast.Call:
    return ast.Call(ast.Attribute(ast.Name(RT, ast.Load()), helper, ast.Load()), list(args), [])


def split_static_prefix(test: ast.expr, is_tensor_part) -> tuple[ast.expr | None, ast.expr]:
    """`A and B` -> (A, B) where B is the longest suffix of conjuncts that look tensor-valued.

    `if A and B: S` is exactly `if A: if B: S` for any A, so the split needs no proof; it only
    decides which part the rewrite predicates on.
    """
    if not (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)):
        return None, test
    values = test.values
    cut = len(values)
    while cut > 0 and is_tensor_part(values[cut - 1]):
        cut -= 1
    cut = min(cut, len(values) - 1)
    if cut == 0:
        return None, test
    prefix = values[0] if cut == 1 else ast.BoolOp(ast.And(), values[:cut])
    rest = values[cut] if cut == len(values) - 1 else ast.BoolOp(ast.And(), values[cut:])
    return prefix, rest


def looks_tensor_valued(expr: ast.expr, scope: Scope) -> bool:
    """Syntactic hint (used only to choose the split point): a torch call or a tensor method."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute):
                if isinstance(func.value, ast.Name) and scope.denotes(func.value.id, torch):
                    return True
                if func.attr in {"any", "all", "sum", "max", "min", "mean", "item", "numel", "equal"}:
                    return True
    return False


def first_leaf(test: ast.expr) -> ast.expr:
    """The operand of `test` that is always evaluated (what it proves holds for the rest)."""
    while isinstance(test, (ast.BoolOp, ast.UnaryOp)):
        test = test.values[0] if isinstance(test, ast.BoolOp) else test.operand
    return test


def convert(test: ast.expr, scope: Scope, spec: Speculation) -> ast.expr:
    """Same truth value as `test`, tensor-valued when its parts are 1-element tensors.

    The right operands of `and`/`or` are evaluated eagerly, so each must be provably total.
    """
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return rt_call("pnot", convert(test.operand, scope, spec))
    if isinstance(test, ast.BoolOp):
        helper = "pand" if isinstance(test.op, ast.And) else "por"
        result = convert(test.values[0], scope, spec)
        for value in test.values[1:]:
            if spec.kind(value) is None:
                raise Refuse(f"short-circuited operand may fault if evaluated eagerly: {ast.unparse(value)}")
            result = rt_call(helper, result, convert(value, scope, spec))
        return result
    if (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Attribute)
        and test.func.attr == "equal"
        and isinstance(test.func.value, ast.Name)
        and scope.denotes(test.func.value.id, torch)
        and len(test.args) == 2
        and not test.keywords
    ):
        return rt_call("tensor_equal", *test.args)
    return test
