"""The facts of one rule's query, typed: how a pattern, its guards and its replacement read the e-graph.

The pattern becomes query terms; every ``x.shape`` / ``x.dtype`` becomes a query variable (actions
cannot read functions; one variable per tensor), and every derived function (``eqsat_rules.derived``) a
variable read after its demand: a derived function whose arguments read another's result waits for
it (demand stages, one analysis clause each). List patterns are the compiler's
(``eqsat_rules.compile.RuleQuery``); a template inside a list pattern is a plain ``Query``.
"""
from __future__ import annotations

from eqsat import to_egglog
from eqsat.rulelang import DTYPE, Call, Clause, Guard, ListExpr, Lit, Var

from eqsat_rules.derived import DERIVED
from eqsat_rules.patterns import Each, Pieces, RuleError, term_vars


class Query:
    """Facts, demands and declarations of one query; ``subst`` renames variables (list relations
    read a template's variable as a column or as ``S[i]``)."""

    def __init__(self, subst: dict | None = None):
        self.subst = subst or {}
        self.facts: list = []      # pattern facts and analysis lookups
        self.late: list = []       # (stage, fact) reading derived functions (after their demand)
        self.demands: list = []    # (stage, demand)
        self.decls: list = []
        self._stage: dict[int, int] = {}  # id(variable) → demand stage of the derived value it holds
        self._reads: dict[tuple, Var] = {}  # (analysis, id(tensor variable)) → its query variable
        self._n = 0

    def fresh(self, prefix: str, sort: str) -> Var:
        self._n += 1
        return Var(f"_{prefix}{self._n}", sort)

    def var(self, v: Var):
        return self.subst.get(id(v), v)

    # -- the pattern ------------------------------------------------------------------------------
    def pattern(self, t):
        if isinstance(t, (Pieces, Each)):
            return self.list_pattern(t)
        if isinstance(t, Call) and t.fn in DERIVED:
            raise RuleError(f"{t!r}: derived functions belong in guards and replacements, not patterns")
        return self._term(t, self.pattern)

    def list_pattern(self, t):
        raise RuleError(f"list pattern {t!r} cannot appear inside a list pattern's template")

    # -- guards and the replacement -----------------------------------------------------------------
    def expr(self, t):
        if isinstance(t, (Pieces, Each)):
            raise RuleError(f"list pattern {t!r} can only appear in the pattern")
        if isinstance(t, Call) and t.fn in ("shape", "dtype"):
            return self._read(t)
        if isinstance(t, Call) and t.fn in DERIVED:
            args = tuple(self.expr(a) for a in t.args)
            stage = 1 + max((self.stage(a) for a in args), default=0)
            v = self.fresh("d", t.sort)
            self._stage[id(v)] = stage
            self.decls += DERIVED[t.fn].decls
            self.demands.append((stage, DERIVED[t.fn].demand(*args)))
            self.late.append((stage, v == Call(t.fn, args, t.sort)))
            return v
        return self._term(t, self.expr)

    def _read(self, t: Call) -> Var:
        """``(= _s (shape x))``: one query variable per analysis and tensor."""
        arg = self.pattern(t.args[0])
        key = (t.fn, id(arg)) if isinstance(arg, Var) else None
        if key in self._reads:
            return self._reads[key]
        v = self.fresh("s" if t.fn == "shape" else "t", t.sort if t.fn == "shape" else DTYPE)
        self.facts.append(v == Call(t.fn, (arg,), t.sort))
        if key is not None:
            self._reads[key] = v
        return v

    def stage(self, t) -> int:
        """The latest demand stage a term reads (0: none)."""
        return max((self._stage.get(k, 0) for k in term_vars(t)), default=0)

    def guard(self, g: Guard) -> None:
        fact = Guard(g.op, self.expr(g.lhs), self.expr(g.rhs))
        stage = self.stage(fact)
        if stage:
            self.late.append((stage, fact))
        else:
            self.facts.append(fact)

    def query(self) -> list:
        """Every fact, derived values after the stages they wait for."""
        return self.facts + [f for _, f in sorted(self.late, key=lambda sf: sf[0])]

    def demand_clauses(self) -> list[Clause]:
        """One analysis clause per demand stage: the facts it waits for, then its demands."""
        out = []
        for stage in sorted({s for s, _ in self.demands}):
            demands = {to_egglog.action(d): d for s, d in self.demands if s == stage}
            facts = self.facts + [f for s, f in sorted(self.late, key=lambda sf: sf[0]) if s < stage]
            out.append(Clause(tuple(facts), tuple(demands.values())))
        return out

    def _term(self, t, sub):
        if isinstance(t, Var):
            return self.var(t)
        if isinstance(t, Lit):
            return t
        if isinstance(t, ListExpr):
            return ListExpr(tuple(sub(i) for i in t.items), sub(t.tail) if t.tail is not None else None)
        if isinstance(t, Call):
            return Call(t.fn, tuple(sub(a) for a in t.args), t.sort)
        raise RuleError(f"cannot compile {t!r}")
