"""Cons-list relations behind the DSL's list patterns ``pieces(split)`` and ``each(template, …)``.

A list pattern cannot be one query term (its length varies), so each becomes a relation over list
cells, built from the tail up in the analysis, then matched at the head:

- ``Pieces_h(l, S, i, extras…)``: ``l`` is ``[each(S[i]), each(S[i+1]), …, each(S[n-1])]``. Its cells
  are ``Pieces_hCell(l, S, i, extras…, tail)`` first: walking ``(TCons (Get S i) t)`` itself joined
  every piece of S per step (4,096 pieces: 1.5 s; the cell relation: linear).
- ``Each_h(l, outs…, dtypes…, extras…)``: every element of ``l`` matches the template; ``outs`` are
  the lists of its arguments; each argument list has one dtype (a cat of mixed dtypes promotes).
  The template and its guards are matched once per element into ``Each_hElem(elem, args…, dtypes…,
  extras…)``; the walk joins only cells with that relation: a shape lookup in the walk's own query
  made each of its one-cell-per-iteration steps scan the shape table (stack_squeezed's walk, 4,096
  pieces: 27 s; walking ``Each_hElem``: linear).
  An element may match in many ways (one class holds ``a*b`` and ``a'*b'``), and a row per
  combination of its elements' matches is a product: soak seed 100055's backward graph had 6-element
  cats whose elements matched ``binary(f, p, q)`` 105 ways each (cat_binary_same's results, sliced
  back, gave each element new operands), 105**6 rows in one analysis command, each building
  argument lists that were walked in turn: gigabytes, no end. So the walk takes one match per
  element, the first found: ``Each_hPick<j>(elem, a_0…a_{j-1}, extras…) = a_j`` (merge ``old``), each
  column keyed by the ones before it, so the picked arguments are always one match's even after
  classes merge. A list then has one row per dtypes and extras, and the rows stay linear.

``h`` hashes the template's egglog text, so two rules with the same template share one relation.
"""
from __future__ import annotations

import hashlib

from eqsat import to_egglog
from eqsat.ops import Ctor
from eqsat.rulelang import (DTYPE, INT, TENSOR, TLIST, TTUPLE, Function, Relation, Var, cons, ctor, nil, rule, set_,
                            variables)

from eqsat_rules.patterns import Each, RuleError, term_vars
from eqsat_rules.query import Query


def _hash(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:8]


def _extras(terms, exclude) -> list[Var]:
    found: dict = {}
    for t in terms:
        term_vars(t, found)
    return [v for v in found.values() if all(v is not e for e in exclude)]


S = Var("S", TTUPLE)
i = Var("i", INT)
l, t, r = variables("l t r", TLIST)
h = Var("h", TENSOR)
_x, _s, _d = Var("_x", TENSOR), Var("_s", "IVec"), Var("_d", INT)


def pieces_relation(each) -> tuple[Relation, list[Var], list]:
    p = Var("_p", TENSOR)
    elem = each(p) if each is not None else p
    extras = _extras([elem], [p])
    cols = [Var(f"_e{k}", v.sort) for k, v in enumerate(extras)]
    q = Query({id(p): S[i], **{id(v): c for v, c in zip(extras, cols)}})
    elem = q.pattern(elem)
    if q.facts:
        raise RuleError("pieces(each=…) takes a plain template (no list patterns, no .shape)")
    name = "Pieces_" + _hash(to_egglog.term(elem) + " ".join(c.name for c in cols))
    sorts = (TLIST, TTUPLE, INT) + tuple(v.sort for v in extras)
    rel, cell = Relation(name, sorts), Relation(f"{name}Cell", sorts + (TLIST,))
    decls = [
        rel, cell,
        rule(l == cons(elem, t)).then(cell(l, S, i, *cols, t)),
        rule(cell(l, S, i, *cols, nil()), S == ctor(Ctor.SPLIT, _x, _s, _d), i == _s.len() - 1)
        .then(rel(l, S, i, *cols)),
        rule(cell(l, S, i, *cols, t), rel(t, S, i + 1, *cols)).then(rel(l, S, i, *cols)),
    ]
    return rel, extras, decls


def each_relation(pat: Each) -> tuple[Relation, list[Var], list]:
    params = [Var(f"_a{k}", TENSOR) for k in range(len(pat.outs))]
    elem = pat.template(*params)
    guards = list(pat.when(*params)) if pat.when else []
    extras = _extras([elem] + guards, params)
    cols = [Var(f"_e{j}", v.sort) for j, v in enumerate(extras)]
    q = Query({id(v): c for v, c in zip(extras, cols)})
    elem = q.pattern(elem)
    for g in guards:
        q.guard(g)
    if q.late:
        raise RuleError("each(when=…) cannot use derived functions")
    k = len(params)
    dtypes = [Var(f"_t{j}", DTYPE) for j in range(k)]
    facts = q.facts + [dt == a.dtype for dt, a in zip(dtypes, params)]
    name = "Each_" + _hash(to_egglog.term(elem) + " ".join(to_egglog.fact(f) for f in facts)
                           + " ".join(c.name for c in cols))
    extra_sorts = tuple(v.sort for v in extras)
    rel = Relation(name, (TLIST,) * (k + 1) + (DTYPE,) * k + extra_sorts)
    row = Relation(f"{name}Elem", (TENSOR,) * (k + 1) + (DTYPE,) * k + extra_sorts)
    outs = [Var(f"_o{j}", TLIST) for j in range(k)]
    picks = [Function(f"{name}Pick{j}", (TENSOR,) * (j + 1) + extra_sorts, TENSOR) for j in range(k)]
    picked = [a == p(h, *params[:j], *cols) for j, (p, a) in enumerate(zip(picks, params))]
    decls = [
        rel, row, *picks,
        rule(h == elem, *facts).then(row(h, *params, *dtypes, *cols),
                                     *(set_(p(h, *params[:j], *cols), a) for j, (p, a) in enumerate(zip(picks, params)))),
        rule(l == cons(h, nil()), *picked, row(h, *params, *dtypes, *cols))
        .then(rel(l, *(cons(a, nil()) for a in params), *dtypes, *cols)),
        rule(l == cons(h, r), *picked, row(h, *params, *dtypes, *cols), rel(r, *outs, *dtypes, *cols))
        .then(rel(l, *(cons(a, o) for a, o in zip(params, outs)), *dtypes, *cols)),
    ]
    return rel, extras, decls
