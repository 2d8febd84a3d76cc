"""Shape and dtype analysis for e-nodes that rewrites create (original nodes are seeded by lowering).

Every constructor's shape rule is compiled from its registry row's shape function (``eqsat.ops``),
written with the DSL and read like a rewrite's replacement (``eqsat_rules.query``: ``x.shape`` is a query
variable, a derived function is demanded first), one clause per case. ``shape`` merges by keeping
the first value, so a seeded fact is never overwritten; a constructor without a shape function gets
no shape when a rewrite creates it, and the cost model then never picks it. Dtypes: a row that keeps
its first operand's dtype (``Dtype.SAME``) gets that rule; keyed ops read the facts the session
seeds from the rows (``KeepsDtype`` …); the pointwise family's promotions are written out below.
"""
from __future__ import annotations

from functools import lru_cache

from eqsat import ops
from eqsat.ops import Ctor
from eqsat.rule import Rule
from eqsat.rulelang import (DTYPE, INT, STR, TENSOR, TLIST, TTUPLE, Call, Clause, Var, cons, lit, rule, set_,
                            variables)
from eqsat.schema import ANALYSIS, BoolResult, FloatDtype, KeepsDtype, KeepsIntDtype

from eqsat_rules import dsl
from eqsat_rules.query import Query

e, x, y, c = variables("e x y c", TENSOR)
(f,) = variables("f", STR)
(t,) = variables("t", DTYPE)


def _rows_by_ctor(has) -> list[ops.Op]:
    """The first row of each constructor for which ``has(row)``, in registry order."""
    out: dict[str, ops.Op] = {}
    for op in ops.ALL_OPS:
        if has(op):
            out.setdefault(op.ctor, op)
    return list(out.values())


def _term(op: ops.Op) -> tuple[Call, list[Var]]:
    """The term ``op(a0, a1, …)`` (a piece ``op(…)[i]`` of a tuple-valued op) and its variables."""
    args = [Var(f"a{k}", s) for k, s in enumerate(op.args)]
    term = Call(op.ctor, tuple(args), op.sort)
    if op.sort == TTUPLE:
        i = Var("i", INT)
        return Call(Ctor.GET, (term, i), TENSOR), args + [i]
    return term, args


def shape_rule(op: ops.Op) -> Rule:
    """The analysis rule of ``op``'s constructor: one clause per case of its shape function."""
    root, args = _term(op)
    cases = op.shape(dsl, *args)
    clauses, decls = [], []
    for guards, shape in cases if isinstance(cases, list) else [([], cases)]:
        q = Query()
        q.facts.append(e == root)
        for g in guards:
            q.guard(g)
        value = q.expr(shape)
        clauses.append(Clause(tuple(q.query()), (set_(e.shape, value),)))
        decls += q.decls + q.demand_clauses()
    return Rule(f"shape_{op.ctor.lower()}", ANALYSIS, f"the shape of {root!r}, from its eqsat.ops row",
                tuple(clauses), tuple(dict.fromkeys(decls)))


def _first_tensor(op: ops.Op, root: Call, args: list[Var]) -> tuple[Var, list]:
    """The operand whose dtype the result keeps: the first tensor, or the head of the first list."""
    k = next(k for k, s in enumerate(op.args) if s in (TENSOR, TLIST))
    if op.args[k] == TENSOR:
        return args[k], []
    head = Var("h", TENSOR)
    return head, [args[k] == cons(head, Var("r", TLIST))]


def _same_dtype(op: ops.Op) -> Clause:
    root, args = _term(op)
    operand, binds = _first_tensor(op, root, args)
    return rule(e == root, *binds, t == operand.dtype).then(set_(e.dtype, t))


def _keyed_dtype(op: ops.Op) -> list[Clause]:
    """A keyed op other than a pointwise one (a reduction) keeps its operand's dtype or gives bool, as
    its key's row says (a clause for each kind of dtype its constructor's rows have)."""
    root, args = _term(op)
    operand, binds = _first_tensor(op, root, args)
    key = args[0]
    kinds = {row.dtype for row in ops.ALL_OPS if row.ctor == op.ctor}
    clauses = {
        ops.Dtype.FLOAT: rule(e == root, *binds, KeepsDtype(key), t == operand.dtype, FloatDtype(t)).then(set_(e.dtype, t)),
        ops.Dtype.ANY: rule(e == root, *binds, KeepsIntDtype(key), t == operand.dtype, t != "bool").then(set_(e.dtype, t)),
        ops.Dtype.BOOL: rule(e == root, BoolResult(key)).then(set_(e.dtype, "bool")),
    }
    return [c for kind, c in clauses.items() if kind in kinds]


def _pointwise_dtype() -> list[Clause]:
    """Dtype-preserving pointwise ops keep a floating dtype; integer dtypes only through ops that cannot
    promote (relu, add, …); a Python int keeps a non-bool dtype, a float a floating one; comparisons
    give bool."""
    out = []
    for keep, guard in ((KeepsDtype, FloatDtype(t)), (KeepsIntDtype, t != "bool")):
        out += [
            rule(e == dsl.unary(f, x), keep(f), t == x.dtype, guard).then(set_(e.dtype, t)),
            rule(e == dsl.binary(f, x, y), keep(f), t == x.dtype, t == y.dtype, guard).then(set_(e.dtype, t)),
            rule(e == dsl.binary(f, x, y), keep(f), t == x.dtype, lit("scalar") == y.dtype, guard).then(set_(e.dtype, t)),
            rule(e == dsl.binary(f, x, y), keep(f), t == y.dtype, lit("scalar") == x.dtype, guard).then(set_(e.dtype, t)),
            rule(e == dsl.ternary(f, c, x, y), keep(f), t == x.dtype, t == y.dtype, guard).then(set_(e.dtype, t)),
        ]
    return out + [
        rule(e == dsl.binary(f, x, y), KeepsDtype(f), t == x.dtype, lit("scalar_float") == y.dtype, FloatDtype(t))
        .then(set_(e.dtype, t)),
        rule(e == dsl.binary(f, x, y), KeepsDtype(f), t == y.dtype, lit("scalar_float") == x.dtype, FloatDtype(t))
        .then(set_(e.dtype, t)),
        rule(e == dsl.unary(f, x), BoolResult(f)).then(set_(e.dtype, "bool")),
        rule(e == dsl.binary(f, x, y), BoolResult(f)).then(set_(e.dtype, "bool")),
    ]


@lru_cache(maxsize=4)
def _shape_rules(version: int) -> tuple[Rule, ...]:
    shapes = [shape_rule(op) for op in _rows_by_ctor(lambda op: op.shape is not None)]
    keyed = _rows_by_ctor(lambda op: op.args[:1] == (STR,) and op.ctor not in ops.KEYED_POINTWISE
                          and op.dtype in (ops.Dtype.FLOAT, ops.Dtype.ANY, ops.Dtype.BOOL))
    return tuple(shapes) + (
        Rule("dtype_same", ANALYSIS, "views, copies, matmuls and norms keep their first operand's dtype",
             tuple(_same_dtype(op) for op in _rows_by_ctor(lambda op: op.dtype is ops.Dtype.SAME))),
        Rule("dtype_keyed", ANALYSIS, "reductions keep a float dtype, or give bool, as their key's row says",
             tuple(c for op in keyed for c in _keyed_dtype(op))),
        Rule("dtype_pointwise", ANALYSIS, "pointwise ops keep a float (or, where they cannot promote, any) dtype;"
             " comparisons give bool", tuple(_pointwise_dtype())),
    )


def shape_rules() -> list[Rule]:
    """The shape and dtype analysis of every constructor in the registry (rebuilt when a row is added)."""
    return list(_shape_rules(ops.version()))
