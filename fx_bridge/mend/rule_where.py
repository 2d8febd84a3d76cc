"""[Where] Data-dependent `if`/`else` that assigns or returns values -> `__mend_rt__.select`.

    if dtype == float16 and (isinf(h).any() or isnan(h).any()):    if dtype == float16:
        v = finfo(h.dtype).max - 1000                        ==>       p = por(isinf(h).any(), isnan(h).any())
        h = clamp(h, min=-v, max=v)                                    t_v = finfo(h.dtype).max - 1000
                                                                       t_h = clamp(h, min=-t_v, max=t_v)
                                                                       h = select(p, t_h, h)

Legal when: every branch statement is `name = value` (an optional final `return value` in both
branches); each value is provably total (`Speculation`), so evaluating the untaken one cannot
raise or cause an effect; a name assigned in only one branch is surely bound before the `if`;
branch-only temporaries are not used elsewhere. `select` itself falls back to the original choice
when the values differ in shape/dtype/device (resolved at trace time), so the answer never changes.
A value total only for the dtype classes observed at the break (`y - 1`: not for bool) is admitted
under a guard on those facts, whose else branch is the original `if` (see facts.py).
"""

from __future__ import annotations

import ast
import copy

import torch

from eqsat_torch.mend.predicate import (
    Refuse,
    convert,
    first_leaf,
    looks_tensor_valued,
    rt_call,
    split_static_prefix,
)
from eqsat_torch.mend.facts import Typing
from eqsat_torch.mend.scope import Scope
from eqsat_torch.mend.speculation import Speculation, float_dtype_facts, tensor_names


class _Rename(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]):
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if isinstance(node.ctx, ast.Load) and node.id in self.names:
            return ast.copy_location(ast.Name(self.names[node.id], ast.Load()), node)
        return node


def _branch_parts(stmts: list[ast.stmt]) -> tuple[list[ast.Assign], ast.expr | None]:
    assigns, ret = [], None
    for i, stmt in enumerate(stmts):
        if isinstance(stmt, ast.Return) and stmt.value is not None and i == len(stmts) - 1:
            ret = stmt.value
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            assigns.append(stmt)
        else:
            raise Refuse(f"branch statement is not `name = value`: {ast.unparse(stmt).splitlines()[0]}")
    return assigns, ret


_STATE_CALLS = {"register_buffer", "register_parameter", "register_module", "add_module", "setattr"}


def _state_writes(node: ast.If) -> list[str]:
    """Object-state writes in the branches (`self.memo = ...`, `register_buffer`, `setattr`)."""
    writes = []
    for stmt in node.body + node.orelse:
        for sub in ast.walk(stmt):
            if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store):
                writes.append(ast.unparse(sub))
            elif isinstance(sub, ast.Call):
                name = sub.func.attr if isinstance(sub.func, ast.Attribute) else getattr(sub.func, "id", "")
                if name in _STATE_CALLS:
                    writes.append(ast.unparse(sub).split("(")[0] + "(" + (ast.unparse(sub.args[0]) if sub.args else "")
                                  + ", ...)")
    return list(dict.fromkeys(writes))


def rewrite_where(node: ast.If, scope: Scope, observed: dict[str, str] | None = None) -> list[ast.stmt]:
    """`observed`: dtype class of each local tensor seen at this `if` (facts.observe); values
    proven total only through them are guarded by `facts_hold`, else-branch the original `if`."""
    if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
        raise Refuse("elif chain")
    writes = _state_writes(node)
    if writes:  # Phi-3 LongRoPE's memo: see docs/mend.md, Known limits
        raise Refuse(f"the branch writes object state ({', '.join(writes)}): predicating it runs the writes on "
                     "every call, and nothing proves them idempotent and unobservable")
    prefix, test = split_static_prefix(node.test, lambda e: looks_tensor_valued(e, scope))
    bound = scope.bound_before(node)
    typing = None
    if observed:
        typing = Typing({n: c for n, c in observed.items() if n in bound}, lambda n: scope.denotes(n, torch))
    spec = Speculation(scope, bound, tensor_names(first_leaf(test), scope), float_dtype_facts(node.test, scope),
                       typing)
    pred_name = f"__mend_p{node.lineno}"
    out: list[ast.stmt] = [ast.Assign([ast.Name(pred_name, ast.Store())], convert(test, scope, spec))]

    (t_assigns, t_ret), (f_assigns, f_ret) = _branch_parts(node.body), _branch_parts(node.orelse)
    if (t_ret is None) != (f_ret is None):
        raise Refuse("only one branch returns")
    assigned = {a.targets[0].id for a in t_assigns + f_assigns}
    live = sorted(n for n in assigned if scope.used_outside(n, node))
    finals: list[dict[str, str]] = []
    returns: list[ast.expr] = []
    for label, assigns, ret in (("t", t_assigns, t_ret), ("f", f_assigns, f_ret)):
        renames: dict[str, str] = {}
        spec.temps = {}
        if typing is not None:
            typing.temps = {}
        for assign in assigns:
            value = _Rename(renames).visit(ast.parse(ast.unparse(assign.value), mode="eval").body)
            kind = spec.kind(value)
            if kind is None:
                raise Refuse(f"value may fault or have an effect if evaluated untaken: {ast.unparse(assign.value)}")
            name = f"__mend_{label}{node.lineno}_{assign.targets[0].id}"
            spec.bind_temp(name, value, kind)
            renames[assign.targets[0].id] = name
            out.append(ast.Assign([ast.Name(name, ast.Store())], value))
        if ret is not None:
            value = _Rename(renames).visit(ast.parse(ast.unparse(ret), mode="eval").body)
            if spec.kind(value) is None:
                raise Refuse(f"return value may fault if evaluated untaken: {ast.unparse(ret)}")
            returns.append(value)
        finals.append(renames)

    pred = ast.Name(pred_name, ast.Load())
    for name in live:
        if any(name not in f for f in finals) and name not in bound:
            raise Refuse(f"`{name}` may be unbound on the branch that does not assign it")
        true_v, false_v = (ast.Name(f.get(name, name), ast.Load()) for f in finals)
        out.append(ast.Assign([ast.Name(name, ast.Store())], rt_call("select", pred, true_v, false_v)))
    if returns:
        out.append(ast.Return(rt_call("select", pred, *returns)))
    if not live and not returns:
        raise Refuse("the branches define no live value")
    if prefix is not None:  # `if A and B: S1 else: S2` is `if A: <select on B> else: S2`
        out = [ast.If(prefix, out, copy.deepcopy(node.orelse))]
    if typing is not None and typing.used:
        out = [ast.If(typing.guard(rt_call), out, [copy.deepcopy(node)])]
    return out

