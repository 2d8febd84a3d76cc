"""DSL rule → ``eqsat.rule.Rule``: one egglog ``rule`` per direction, plus (among its declarations,
in the analysis ruleset) a demand rule when the replacement or a guard needs a derived function
(see ``rules.derived``).

The pattern becomes one nested query term bound to ``_root``; every ``x.shape`` / ``x.dtype`` becomes
a query variable (actions cannot read functions); list patterns become facts over generated cons-list
relations (``rules.listpat``). Variables the replacement or a guard uses must be bound by the pattern.
"""
from __future__ import annotations

import json

from eqsat.rule import Rule
from eqsat.schema import ANALYSIS

from . import dsl
from .dsl import RuleError  # noqa: F401  (raised here, defined with the DSL)
from .derived import DERIVED

EGG_SORT = {dsl.TENSOR: "Tensor", dsl.INT: "i64", dsl.IVEC: "IVec", dsl.STR: "String",
            dsl.TLIST: "TList", dsl.TTUPLE: "TTuple", dsl.DTYPE: "String"}



def variables(t, out: dict | None = None) -> dict:
    """Every variable in ``t`` (by identity, in order of first appearance), list patterns included."""
    out = {} if out is None else out
    if isinstance(t, dsl.Var):
        out.setdefault(id(t), t)
    elif isinstance(t, dsl.Call):
        for a in t.args:
            variables(a, out)
    elif isinstance(t, dsl.ListExpr):
        for a in t.items + ((t.tail,) if t.tail is not None else ()):
            variables(a, out)
    elif isinstance(t, dsl.Pieces):
        variables(t.split, out)
        if t.each is not None:
            variables(t.each(dsl.Var("_p", dsl.TENSOR)), out)
    elif isinstance(t, dsl.Each):
        for o in t.outs:
            variables(o, out)
        params = [dsl.Var(f"_a{k}", dsl.TENSOR) for k in range(len(t.outs))]
        for v in variables(t.template(*params)).values():
            if all(v is not p for p in params):
                out.setdefault(id(v), v)
    elif isinstance(t, dsl.Guard):
        variables(t.lhs, out)
        variables(t.rhs, out)
    return out


class Query:
    """The facts of one rule's query; ``names`` renames variables (used by generated relations)."""

    def __init__(self, names: dict | None = None):
        self.names = names or {}
        self.facts: list[str] = []     # pattern facts and analysis lookups
        self.late: list[str] = []      # facts that read derived functions (after their demand)
        self.demands: list[str] = []
        self.decls: list[str] = []
        self._n = 0

    def fresh(self, prefix: str) -> str:
        self._n += 1
        return f"_{prefix}{self._n}"

    def name(self, v: dsl.Var) -> str:
        return self.names.get(id(v), v.name)

    # -- the pattern ------------------------------------------------------------------------------
    def pattern(self, t) -> str:
        if isinstance(t, dsl.Pieces):
            from .listpat import pieces_relation
            rel, extras, decls = pieces_relation(t.each)
            self.decls += decls
            v = self.fresh("l")
            cols = " ".join(self.pattern(e) for e in extras)
            self.facts.append(f"({rel} {v} {self.pattern(t.split)} 0 {cols})".replace(" )", ")"))
            return v
        if isinstance(t, dsl.Each):
            from .listpat import each_relation
            rel, extras, decls = each_relation(t)
            self.decls += decls
            v = self.fresh("l")
            cols = [self.name(o) for o in t.outs] + [self.fresh("t") for _ in t.outs]
            cols += [self.pattern(e) for e in extras]
            self.facts.append(f"({rel} {v} {' '.join(cols)})")
            return v
        if isinstance(t, dsl.Call) and t.fn in DERIVED:
            raise RuleError(f"{t!r}: derived functions belong in guards and replacements, not patterns")
        return self._term(t, self.pattern)

    # -- guards and the replacement -----------------------------------------------------------------
    def expr(self, t) -> str:
        if isinstance(t, (dsl.Pieces, dsl.Each)):
            raise RuleError(f"list pattern {t!r} can only appear in the pattern")
        if isinstance(t, dsl.Call) and t.fn in ("shape", "dtype"):
            v = self.fresh("s" if t.fn == "shape" else "t")
            self.facts.append(f"(= {v} ({t.fn} {self.pattern(t.args[0])}))")
            return v
        if isinstance(t, dsl.Call) and t.fn in DERIVED:
            before = len(self.late)
            args = " ".join(self.expr(a) for a in t.args)
            if len(self.late) != before:
                raise RuleError(f"{t!r}: a derived function cannot take another one's result")
            v = self.fresh("d")
            self.decls += DERIVED[t.fn].decls
            self.demands.append(f"({t.fn}-demand {args})")
            self.late.append(f"(= {v} ({t.fn} {args}))")
            return v
        return self._term(t, self.expr)

    def guard(self, g: dsl.Guard) -> None:
        before = len(self.late)
        fact = f"({g.op} {self.expr(g.lhs)} {self.expr(g.rhs)})"
        (self.late if len(self.late) != before else self.facts).append(fact)

    def _term(self, t, sub) -> str:
        if isinstance(t, dsl.Var):
            return self.name(t)
        if isinstance(t, dsl.Lit):
            return json.dumps(t.value) if isinstance(t.value, str) else str(t.value)
        if isinstance(t, dsl.ListExpr):
            out = sub(t.tail) if t.tail is not None else "(TNil)"
            for item in reversed(t.items):
                out = f"(TCons {sub(item)} {out})"
            return out
        if isinstance(t, dsl.Call):
            return f"({t.fn} {' '.join(sub(a) for a in t.args)})" if t.args else f"({t.fn})"
        raise RuleError(f"cannot compile {t!r}")


def _direction(r: dsl.DslRule, lhs, rhs) -> tuple[list[str], list[str]]:
    q = Query()
    q.facts.append(f"(= _root {q.pattern(lhs)})")
    for k, t in enumerate(r.given):
        q.facts.append(f"(= _given{k} {q.pattern(t)})")
    for g in r.when:
        q.guard(g)
    action = f"(union _root {q.expr(rhs)})"
    decls = list(q.decls)
    if q.demands:  # in the analysis ruleset, so firing counts only ever count real rewrites
        decls.append(f"(rule ({' '.join(q.facts)}) ({' '.join(dict.fromkeys(q.demands))}) :ruleset {ANALYSIS})")
    return [f"(rule ({' '.join(q.facts + q.late)}) ({action}))"], decls


def check_bound(r: dsl.DslRule) -> None:
    """Refuse a rule whose replacement or guard reads a variable its pattern does not bind."""
    sides = [(r.lhs, r.rhs, "replacement")] + ([(r.rhs, r.lhs, "pattern (reverse direction)")]
                                                if r.bidirectional else [])
    for pat, rep, what in sides:
        bound = variables(pat)
        for t in r.given:
            variables(t, bound)
        for where, t in [(what, rep)] + [("guard", g) for g in r.when]:
            missing = [v.name for k, v in variables(t).items() if k not in bound]
            if missing:
                raise RuleError(f"rule {r.name!r}: {where} uses {', '.join(sorted(set(missing)))},"
                                f" which the pattern does not bind")


def _built(t) -> set[str]:
    """Constructors a replacement term builds (its derived functions and analyses are query facts)."""
    if isinstance(t, dsl.ListExpr):
        return {"TCons", "TNil"}.union(*(_built(i) for i in t.items)) | (_built(t.tail) if t.tail is not None else set())
    if not isinstance(t, dsl.Call) or t.fn in DERIVED or t.fn in ("shape", "dtype"):
        return set()
    own = {t.fn} if t.fn[0].isupper() else set()
    return own.union(*(_built(a) for a in t.args))


def _heads(lhs, rhs) -> tuple[set[str], set[str]]:
    root = {lhs.fn} if isinstance(lhs, dsl.Call) and lhs.fn[0].isupper() else set()
    return root, _built(rhs) or {"*"}


def compile_rule(r: dsl.DslRule) -> Rule:
    check_bound(r)
    cmds, decls = _direction(r, r.lhs, r.rhs)
    lhs, rhs = _heads(r.lhs, r.rhs)
    if r.bidirectional:
        back, more = _direction(r, r.rhs, r.lhs)
        cmds, decls = cmds + back, decls + more
        lhs2, rhs2 = _heads(r.rhs, r.lhs)
        lhs, rhs = lhs | lhs2, rhs | rhs2
    return Rule(r.name, r.family, r.doc, tuple(cmds), tuple(dict.fromkeys(decls)), (frozenset(lhs), frozenset(rhs)))
