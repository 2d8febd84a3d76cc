"""DSL rule → ``eqsat.rule.Rule``: one typed clause per direction, plus (among its declarations,
analysis clauses) a demand clause per stage when the replacement or a guard needs a derived function
(see ``eqsat_rules.derived``).

The pattern becomes one nested query term bound to ``_root``; ``x.shape`` / ``x.dtype`` become query
variables and list patterns facts over generated cons-list relations (``eqsat_rules.listpat``): see
``eqsat_rules.query``. Variables the replacement or a guard uses must be bound by the pattern. Nothing here
writes egglog: ``eqsat.to_egglog`` prints the clauses when a session loads them.
"""
from __future__ import annotations

from eqsat.ops import Role
from eqsat.rule import Rule
from eqsat.rulelang import DTYPE, TENSOR, TLIST, Call, Clause, ListExpr, Var, union

from eqsat_rules.derived import DERIVED
from eqsat_rules.listpat import each_relation, pieces_relation
from eqsat_rules.patterns import Pieces, RuleError, term_vars
from eqsat_rules.query import Query

__all__ = ["RuleError", "compile_rule", "check_bound"]


class RuleQuery(Query):
    """A rule's own query: list patterns become facts over their relations."""

    def list_pattern(self, t):
        if isinstance(t, Pieces):
            rel, extras, decls = pieces_relation(t.each)
            self.decls += decls
            v = self.fresh("l", TLIST)
            self.facts.append(rel(v, self.pattern(t.split), 0, *(self.pattern(e) for e in extras)))
            return v
        rel, extras, decls = each_relation(t)
        self.decls += decls
        v = self.fresh("l", TLIST)
        cols = [self.var(o) for o in t.outs] + [self.fresh("t", DTYPE) for _ in t.outs]
        cols += [self.pattern(e) for e in extras]
        self.facts.append(rel(v, *cols))
        return v


def _direction(r, lhs, rhs) -> tuple[list, list]:
    q = RuleQuery()
    q.facts.append(Var("_root", TENSOR) == q.pattern(lhs))
    for k, t in enumerate(r.given):
        q.facts.append(Var(f"_given{k}", t.sort) == q.pattern(t))
    for g in r.when:
        q.guard(g)
    action = union(Var("_root", TENSOR), q.expr(rhs))
    # demands run in the analysis (declarations), so firing counts only ever count real rewrites
    decls = list(q.decls) + q.demand_clauses()
    return [Clause(tuple(q.query()), (action,))], decls


def check_bound(r) -> None:
    """Refuse a rule whose replacement or guard reads a variable its pattern does not bind."""
    sides = [(r.lhs, r.rhs, "replacement")] + ([(r.rhs, r.lhs, "pattern (reverse direction)")]
                                                if r.bidirectional else [])
    for pat, rep, what in sides:
        bound = term_vars(pat)
        for t in r.given:
            term_vars(t, bound)
        for where, t in [(what, rep)] + [("guard", g) for g in r.when]:
            missing = [v.name for k, v in term_vars(t).items() if k not in bound]
            if missing:
                raise RuleError(f"rule {r.name!r}: {where} uses {', '.join(sorted(set(missing)))},"
                                f" which the pattern does not bind")


def _built(t) -> set[str]:
    """Constructors a replacement term builds (its derived functions and analyses are query facts)."""
    if isinstance(t, ListExpr):
        return set(Role.LIST).union(*(_built(i) for i in t.items)) | (_built(t.tail) if t.tail is not None else set())
    if not isinstance(t, Call) or t.fn in DERIVED or t.fn in ("shape", "dtype"):
        return set()
    own = {t.fn} if t.fn[0].isupper() else set()
    return own.union(*(_built(a) for a in t.args))


def _heads(lhs, rhs) -> tuple[set[str], set[str]]:
    root = {lhs.fn} if isinstance(lhs, Call) and lhs.fn[0].isupper() else set()
    return root, _built(rhs) or {"*"}


def compile_rule(r) -> Rule:
    """A ``eqsat_rules.dsl.DslRule`` as the engine's typed ``Rule``."""
    check_bound(r)
    clauses, decls = _direction(r, r.lhs, r.rhs)
    lhs, rhs = _heads(r.lhs, r.rhs)
    if r.bidirectional:
        back, more = _direction(r, r.rhs, r.lhs)
        clauses, decls = clauses + back, decls + more
        lhs2, rhs2 = _heads(r.rhs, r.lhs)
        lhs, rhs = lhs | lhs2, rhs | rhs2
    return Rule(r.name, r.family, r.doc, tuple(clauses), tuple(dict.fromkeys(decls)), (frozenset(lhs), frozenset(rhs)))
