"""Cons-list relations behind the DSL's list patterns ``pieces(split)`` and ``each(template, …)``.

A list pattern cannot be one query term (its length varies), so each becomes a relation over list
cells, built from the tail up in the ``analysis`` ruleset, then matched at the head:

- ``Pieces_h(l, S, i, extras…)``: ``l`` is ``[each(S[i]), each(S[i+1]), …, each(S[n-1])]``. Its cells
  are ``Pieces_hCell(l, S, i, extras…, tail)`` first: walking ``(TCons (Get S i) t)`` itself joined
  every piece of S per step (4,096 pieces: 1.5 s; the cell relation: linear).
- ``Each_h(l, outs…, dtypes…, extras…)``: every element of ``l`` matches the template; ``outs`` are
  the lists of its arguments; each argument list has one dtype (a cat of mixed dtypes promotes).
  The template and its guards are matched once per element into ``Each_hElem(elem, args…, dtypes…,
  extras…)``; the walk joins only cells with that relation: a shape lookup in the walk's own query
  made each of its one-cell-per-iteration steps scan the shape table (stack_squeezed's walk, 4,096
  pieces: 27 s; walking ``Each_hElem``: linear).

``h`` hashes the template, so two rules with the same template share one relation.
"""
from __future__ import annotations

import hashlib

from eqsat.schema import ANALYSIS

from . import dsl
from .compile import EGG_SORT, Query, RuleError, variables

_A = f":ruleset {ANALYSIS}"


def _hash(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:8]


def _extras(terms, exclude) -> list[dsl.Var]:
    found: dict = {}
    for t in terms:
        variables(t, found)
    return [v for v in found.values() if all(v is not e for e in exclude)]


def pieces_relation(each) -> tuple[str, list[dsl.Var], list[str]]:
    p = dsl.Var("_p", dsl.TENSOR)
    elem = each(p) if each is not None else p
    extras = _extras([elem], [p])
    q = Query({id(p): "(Get S i)", **{id(v): f"_e{k}" for k, v in enumerate(extras)}})
    elem_text = q.pattern(elem)
    if q.facts:
        raise RuleError("pieces(each=…) takes a plain template (no list patterns, no .shape)")
    cols = " ".join(f"_e{k}" for k in range(len(extras)))
    rel = "Pieces_" + _hash(elem_text + cols)
    sorts = " ".join(["TList TTuple i64"] + [EGG_SORT[v.sort] for v in extras])
    decls = [
        f"(relation {rel} ({sorts}))",
        f"(relation {rel}Cell ({sorts} TList))",
        f"(rule ((= l (TCons {elem_text} t))) (({rel}Cell l S i {cols} t)) {_A})",
        f"(rule (({rel}Cell l S i {cols} (TNil)) (= S (Split _x _s _d)) (= i (- (vec-length _s) 1)))"
        f" (({rel} l S i {cols})) {_A})",
        f"(rule (({rel}Cell l S i {cols} t) ({rel} t S (+ i 1) {cols})) (({rel} l S i {cols})) {_A})",
    ]
    return rel, extras, [d.replace(" )", ")").replace("  ", " ") for d in decls]


def each_relation(pat: dsl.Each) -> tuple[str, list[dsl.Var], list[str]]:
    params = [dsl.Var(f"_a{k}", dsl.TENSOR) for k in range(len(pat.outs))]
    elem = pat.template(*params)
    guards = list(pat.when(*params)) if pat.when else []
    extras = _extras([elem] + guards, params)
    q = Query({**{id(p): f"_a{k}" for k, p in enumerate(params)},
               **{id(v): f"_e{k}" for k, v in enumerate(extras)}})
    elem_text = q.pattern(elem)
    for g in guards:
        q.guard(g)
    if q.late:
        raise RuleError("each(when=…) cannot use derived functions")
    k = len(params)
    facts = " ".join(q.facts + [f"(= _t{j} (dtype _a{j}))" for j in range(k)])
    ts = " ".join(f"_t{j}" for j in range(k))
    es = " ".join(f"_e{j}" for j in range(len(extras)))
    rel = "Each_" + _hash(elem_text + facts + es)
    elem_sorts = " ".join(["Tensor"] * k + ["String"] * k + [EGG_SORT[v.sort] for v in extras])
    sorts = " ".join(["TList"] + ["TList"] * k + ["String"] * k + [EGG_SORT[v.sort] for v in extras])
    row = " ".join(f"_a{j}" for j in range(k)) + f" {ts} {es}"
    base = " ".join(f"(TCons _a{j} (TNil))" for j in range(k))
    step_in = " ".join(f"_o{j}" for j in range(k))
    step_out = " ".join(f"(TCons _a{j} _o{j})" for j in range(k))
    decls = [
        f"(relation {rel} ({sorts}))",
        f"(relation {rel}Elem (Tensor {elem_sorts}))",
        f"(rule ((= h {elem_text}) {facts}) (({rel}Elem h {row})) {_A})",
        f"(rule ((= l (TCons h (TNil))) ({rel}Elem h {row})) (({rel} l {base} {ts} {es})) {_A})",
        f"(rule ((= l (TCons h r)) ({rel}Elem h {row}) ({rel} r {step_in} {ts} {es}))"
        f" (({rel} l {step_out} {ts} {es})) {_A})",
    ]
    return rel, extras, [d.replace(" )", ")") for d in decls]
