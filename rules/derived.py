"""Derived int-list functions (``splice``, ``repeat``, ``movedim_perm``, …): egglog and Python.

egglog 13.2 has no vector slicing or insertion, and an action cannot read a function. So each
derived function is a table computed on demand in the always-on ``analysis`` ruleset: a rule that
needs ``splice(v, i, w)`` first asserts ``(splice-demand v i w)`` (one extra rule), then reads
``(splice v i w)`` in its query. The Python twins let the checker evaluate the same terms.
Every demand rule checks its bounds, so a bad index never reaches ``vec-get``.
"""
from __future__ import annotations

from dataclasses import dataclass

from eqsat.schema import ANALYSIS

_A = f":ruleset {ANALYSIS}"
_EMPTY = "(vec-pop (vec-of 0))"


@dataclass(frozen=True)
class Derived:
    name: str
    args: tuple          # egglog sorts of the arguments
    out: str
    decls: tuple         # egglog commands (declarations + analysis rules), dependencies first
    py: object           # the same function in Python, for the checker


def _fn(name: str, args: str, out: str) -> list[str]:
    return [f"(relation {name}-demand ({args}))", f"(function {name} ({args}) {out} :merge old)"]


_VSLICE = _fn("vslice", "IVec i64 i64", "IVec") + [
    f"(rule ((vslice-demand v a b) (<= b a)) ((set (vslice v a b) {_EMPTY})) {_A})",
    f"(rule ((vslice-demand v a b) (> b a) (>= a 0) (<= b (vec-length v))) ((vslice-demand v a (- b 1))) {_A})",
    f"(rule ((vslice-demand v a b) (> b a) (= p (vslice v a (- b 1))))"
    f" ((set (vslice v a b) (vec-push p (vec-get v (- b 1))))) {_A})",
]
_SPLICE = _VSLICE + _fn("splice", "IVec i64 IVec", "IVec") + [
    f"(rule ((splice-demand v i w) (>= i 0) (< i (vec-length v)))"
    f" ((vslice-demand v 0 i) (vslice-demand v (+ i 1) (vec-length v))) {_A})",
    f"(rule ((splice-demand v i w) (= p (vslice v 0 i)) (= q (vslice v (+ i 1) (vec-length v))))"
    f" ((set (splice v i w) (vec-append (vec-append p w) q))) {_A})",
]
_INSERT = _VSLICE + _fn("insert", "IVec i64 i64", "IVec") + [
    f"(rule ((insert-demand v i k) (>= i 0) (<= i (vec-length v)))"
    f" ((vslice-demand v 0 i) (vslice-demand v i (vec-length v))) {_A})",
    f"(rule ((insert-demand v i k) (= p (vslice v 0 i)) (= q (vslice v i (vec-length v))))"
    f" ((set (insert v i k) (vec-append (vec-push p k) q))) {_A})",
]
# repeat by doubling: [k]*n is [k]*(n/2) twice (and one more k when n is odd): log n rows and linear
# work; built one push at a time it was n vectors of lengths 1..n (4,096 equal sections: 1.8 s).
_REPEAT = _fn("repeat", "i64 i64", "IVec") + [
    f"(rule ((repeat-demand n k) (<= n 0)) ((set (repeat n k) {_EMPTY})) {_A})",
    f"(rule ((repeat-demand n k) (> n 0)) ((repeat-demand (/ n 2) k)) {_A})",
    f"(rule ((repeat-demand n k) (> n 0) (= (% n 2) 0) (= p (repeat (/ n 2) k)))"
    f" ((set (repeat n k) (vec-append p p))) {_A})",
    f"(rule ((repeat-demand n k) (> n 0) (= (% n 2) 1) (= p (repeat (/ n 2) k)))"
    f" ((set (repeat n k) (vec-push (vec-append p p) k))) {_A})",
]
_IOTA = _fn("iota", "i64", "IVec") + [
    f"(rule ((iota-demand n) (<= n 0)) ((set (iota n) {_EMPTY})) {_A})",
    f"(rule ((iota-demand n) (> n 0)) ((iota-demand (- n 1))) {_A})",
    f"(rule ((iota-demand n) (> n 0) (= p (iota (- n 1)))) ((set (iota n) (vec-push p (- n 1)))) {_A})",
]
_MOVEDIM = _INSERT + _IOTA + _fn("movedim-perm", "i64 i64 i64", "IVec") + [
    f"(rule ((movedim-perm-demand r s t) (>= s 0) (< s r) (>= t 0) (< t r)) ((iota-demand r)) {_A})",
    f"(rule ((movedim-perm-demand r s t) (= p (iota r))) ((insert-demand (vec-remove p s) t s)) {_A})",
    f"(rule ((movedim-perm-demand r s t) (= p (iota r)) (= q (insert (vec-remove p s) t s)))"
    f" ((set (movedim-perm r s t) q)) {_A})",
]
_GATHER = _fn("gather", "IVec IVec", "IVec") + _fn("gather-acc", "IVec IVec i64", "IVec") + [
    f"(rule ((gather-demand p q)) ((gather-acc-demand p q (vec-length q))) {_A})",
    f"(rule ((gather-acc-demand p q k) (<= k 0)) ((set (gather-acc p q k) {_EMPTY})) {_A})",
    f"(rule ((gather-acc-demand p q k) (> k 0) (<= k (vec-length q))) ((gather-acc-demand p q (- k 1))) {_A})",
    f"(rule ((gather-acc-demand p q k) (> k 0) (= a (gather-acc p q (- k 1))) (= j (vec-get q (- k 1)))"
    f" (>= j 0) (< j (vec-length p))) ((set (gather-acc p q k) (vec-push a (vec-get p j)))) {_A})",
    f"(rule ((gather-demand p q) (= a (gather-acc p q (vec-length q)))) ((set (gather p q) a)) {_A})",
]
# lead-perm p d = [d] + [j + (j >= d) for j in p]: p acting on a tensor with a new axis at d, that axis
# moved first (one copy of a tensor whose split axis is outermost; rules.algebra.head_split_copy).
_LEAD_PERM = _fn("lead-perm", "IVec i64", "IVec") + _fn("lead-perm-acc", "IVec i64 i64", "IVec") + [
    f"(rule ((lead-perm-demand p d)) ((lead-perm-acc-demand p d (vec-length p))) {_A})",
    f"(rule ((lead-perm-acc-demand p d k) (<= k 0)) ((set (lead-perm-acc p d k) (vec-of d))) {_A})",
    f"(rule ((lead-perm-acc-demand p d k) (> k 0) (<= k (vec-length p))) ((lead-perm-acc-demand p d (- k 1))) {_A})",
    f"(rule ((lead-perm-acc-demand p d k) (> k 0) (= a (lead-perm-acc p d (- k 1))) (= j (vec-get p (- k 1)))"
    f" (< j d)) ((set (lead-perm-acc p d k) (vec-push a j))) {_A})",
    f"(rule ((lead-perm-acc-demand p d k) (> k 0) (= a (lead-perm-acc p d (- k 1))) (= j (vec-get p (- k 1)))"
    f" (>= j d)) ((set (lead-perm-acc p d k) (vec-push a (+ j 1)))) {_A})",
    f"(rule ((lead-perm-demand p d) (= a (lead-perm-acc p d (vec-length p)))) ((set (lead-perm p d) a)) {_A})",
]
# offset by a forward running sum over v (offset-acc v i = sum(v[:i]), one cell per iteration, each
# step joining only the previous cell): the backward recursion read (offset v (- i 1)), a lookup by a
# computed index, which scanned every offset row of v per step (4,096 pieces: 1.9 s).
_OFFSET = _fn("offset", "IVec i64", "i64") + [
    "(function offset-acc (IVec i64) i64 :merge old)",
    f"(rule ((offset-demand v i) (<= i 0)) ((set (offset v i) 0)) {_A})",
    f"(rule ((offset-demand v i) (> i 0) (<= i (vec-length v))) ((set (offset-acc v 0) 0)) {_A})",
    f"(rule ((= o (offset-acc v i)) (< i (vec-length v))) ((set (offset-acc v (+ i 1)) (+ o (vec-get v i)))) {_A})",
    f"(rule ((offset-demand v i) (> i 0) (= o (offset-acc v i))) ((set (offset v i) o)) {_A})",
]


def _movedim(r, s, t):
    p = [i for i in range(r) if i != s]
    p.insert(t, s)
    return tuple(p)


DERIVED: dict[str, Derived] = {d.name: d for d in (
    Derived("splice", ("IVec", "i64", "IVec"), "IVec", tuple(_SPLICE),
            lambda v, i, w: tuple(v[:i]) + tuple(w) + tuple(v[i + 1:])),
    Derived("insert", ("IVec", "i64", "i64"), "IVec", tuple(_INSERT),
            lambda v, i, k: tuple(v[:i]) + (k,) + tuple(v[i:])),
    Derived("repeat", ("i64", "i64"), "IVec", tuple(_REPEAT), lambda n, k: (k,) * n),
    Derived("movedim-perm", ("i64", "i64", "i64"), "IVec", tuple(_MOVEDIM), _movedim),
    Derived("iota", ("i64",), "IVec", tuple(_IOTA), lambda n: tuple(range(n))),
    Derived("gather", ("IVec", "IVec"), "IVec", tuple(_GATHER), lambda p, q: tuple(p[j] for j in q)),
    Derived("lead-perm", ("IVec", "i64"), "IVec", tuple(_LEAD_PERM),
            lambda p, d: (d,) + tuple(j + (j >= d) for j in p)),
    Derived("offset", ("IVec", "i64"), "i64", tuple(_OFFSET), lambda v, i: sum(v[:i])),
)}
