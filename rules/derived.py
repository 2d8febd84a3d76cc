"""Derived functions (``splice``, ``repeat``, ``movedim_perm``, ``cat_extent``, …): typed clauses and Python.

egglog 13.2 has no vector slicing or insertion, and an action cannot read a function. So each
derived function is a table computed on demand in the always-on analysis: a rule that needs
``splice(v, i, w)`` first asserts ``splice-demand(v, i, w)`` (one extra clause), then reads
``splice(v, i, w)`` in its query. The Python twins let the checker evaluate the same terms.
Every demand clause checks its bounds, so a bad index never reaches ``vec-get``.
"""
from __future__ import annotations

from dataclasses import dataclass

from eqsat.rulelang import (INT, IVEC, TENSOR, TLIST, Call, Function, Relation, cons, lift, nil, rule, set_,
                            variables, vec)


@dataclass(frozen=True)
class Derived:
    name: str
    args: tuple          # sorts of the arguments
    out: str
    decls: tuple         # tables and analysis clauses, dependencies first
    py: object           # the same function in Python, for the checker

    def demand(self, *args) -> Call:
        return Call(f"{self.name}-demand", tuple(lift(a, s) for a, s in zip(args, self.args)), "Unit")

    def __call__(self, *args) -> Call:
        return Call(self.name, tuple(lift(a, s) for a, s in zip(args, self.args)), self.out)


def _fn(name: str, args: tuple, out: str) -> tuple[Relation, Function]:
    return Relation(f"{name}-demand", args), Function(name, args, out)


v, w, p, q, a_ = variables("v w p q a", IVEC)
a, b, i, k, n, r, s, t, d, j, o = variables("a b i k n r s t d j o", INT)
l, rest, tail = variables("l rest tail", TLIST)
x, h = variables("x h", TENSOR)

vslice_demand, vslice = _fn("vslice", (IVEC, INT, INT), IVEC)
_VSLICE = (vslice_demand, vslice,
           rule(vslice_demand(v, a, b), b <= a).then(set_(vslice(v, a, b), vec())),
           rule(vslice_demand(v, a, b), b > a, a >= 0, b <= v.len()).then(vslice_demand(v, a, b - 1)),
           rule(vslice_demand(v, a, b), b > a, p == vslice(v, a, b - 1)).then(set_(vslice(v, a, b), p.push(v[b - 1]))))

splice_demand, splice = _fn("splice", (IVEC, INT, IVEC), IVEC)
_SPLICE = _VSLICE + (
    splice_demand, splice,
    rule(splice_demand(v, i, w), i >= 0, i < v.len()).then(vslice_demand(v, 0, i), vslice_demand(v, i + 1, v.len())),
    rule(splice_demand(v, i, w), p == vslice(v, 0, i), q == vslice(v, i + 1, v.len()))
    .then(set_(splice(v, i, w), p + w + q)))

insert_demand, insert = _fn("insert", (IVEC, INT, INT), IVEC)
_INSERT = _VSLICE + (
    insert_demand, insert,
    rule(insert_demand(v, i, k), i >= 0, i <= v.len()).then(vslice_demand(v, 0, i), vslice_demand(v, i, v.len())),
    rule(insert_demand(v, i, k), p == vslice(v, 0, i), q == vslice(v, i, v.len()))
    .then(set_(insert(v, i, k), p.push(k) + q)))

# repeat by doubling: [k]*n is [k]*(n/2) twice (and one more k when n is odd): log n rows and linear
# work; built one push at a time it was n vectors of lengths 1..n (4,096 equal sections: 1.8 s).
repeat_demand, repeat = _fn("repeat", (INT, INT), IVEC)
_REPEAT = (repeat_demand, repeat,
           rule(repeat_demand(n, k), n <= 0).then(set_(repeat(n, k), vec())),
           rule(repeat_demand(n, k), n > 0).then(repeat_demand(n // 2, k)),
           rule(repeat_demand(n, k), n > 0, n % 2 == 0, p == repeat(n // 2, k)).then(set_(repeat(n, k), p + p)),
           rule(repeat_demand(n, k), n > 0, n % 2 == 1, p == repeat(n // 2, k))
           .then(set_(repeat(n, k), (p + p).push(k))))

iota_demand, iota = _fn("iota", (INT,), IVEC)
_IOTA = (iota_demand, iota,
         rule(iota_demand(n), n <= 0).then(set_(iota(n), vec())),
         rule(iota_demand(n), n > 0).then(iota_demand(n - 1)),
         rule(iota_demand(n), n > 0, p == iota(n - 1)).then(set_(iota(n), p.push(n - 1))))

movedim_demand, movedim_perm = _fn("movedim-perm", (INT, INT, INT), IVEC)
_MOVEDIM = _INSERT + _IOTA + (
    movedim_demand, movedim_perm,
    rule(movedim_demand(r, s, t), s >= 0, s < r, t >= 0, t < r).then(iota_demand(r)),
    rule(movedim_demand(r, s, t), p == iota(r)).then(insert_demand(p.remove(s), t, s)),
    rule(movedim_demand(r, s, t), p == iota(r), q == insert(p.remove(s), t, s)).then(set_(movedim_perm(r, s, t), q)))

gather_demand, gather = _fn("gather", (IVEC, IVEC), IVEC)
gather_acc_demand, gather_acc = _fn("gather-acc", (IVEC, IVEC, INT), IVEC)
_GATHER = (gather_demand, gather, gather_acc_demand, gather_acc,
           rule(gather_demand(p, q)).then(gather_acc_demand(p, q, q.len())),
           rule(gather_acc_demand(p, q, k), k <= 0).then(set_(gather_acc(p, q, k), vec())),
           rule(gather_acc_demand(p, q, k), k > 0, k <= q.len()).then(gather_acc_demand(p, q, k - 1)),
           rule(gather_acc_demand(p, q, k), k > 0, a_ == gather_acc(p, q, k - 1), j == q[k - 1], j >= 0, j < p.len())
           .then(set_(gather_acc(p, q, k), a_.push(p[j]))),
           rule(gather_demand(p, q), a_ == gather_acc(p, q, q.len())).then(set_(gather(p, q), a_)))

# lead-perm p d = [d] + [j + (j >= d) for j in p]: p acting on a tensor with a new axis at d, that axis
# moved first (one copy of a tensor whose split axis is outermost; eqsat_rules.algebra.head_split_copy).
lead_demand, lead_perm = _fn("lead-perm", (IVEC, INT), IVEC)
lead_acc_demand, lead_acc = _fn("lead-perm-acc", (IVEC, INT, INT), IVEC)
_LEAD_PERM = (lead_demand, lead_perm, lead_acc_demand, lead_acc,
              rule(lead_demand(p, d)).then(lead_acc_demand(p, d, p.len())),
              rule(lead_acc_demand(p, d, k), k <= 0).then(set_(lead_acc(p, d, k), vec(d))),
              rule(lead_acc_demand(p, d, k), k > 0, k <= p.len()).then(lead_acc_demand(p, d, k - 1)),
              rule(lead_acc_demand(p, d, k), k > 0, a_ == lead_acc(p, d, k - 1), j == p[k - 1], j < d)
              .then(set_(lead_acc(p, d, k), a_.push(j))),
              rule(lead_acc_demand(p, d, k), k > 0, a_ == lead_acc(p, d, k - 1), j == p[k - 1], j >= d)
              .then(set_(lead_acc(p, d, k), a_.push(j + 1))),
              rule(lead_demand(p, d), a_ == lead_acc(p, d, p.len())).then(set_(lead_perm(p, d), a_)))

# offset by a forward running sum over v (offset-acc v i = sum(v[:i]), one cell per iteration, each
# step joining only the previous cell): the backward recursion read (offset v (- i 1)), a lookup by a
# computed index, which scanned every offset row of v per step (4,096 pieces: 1.9 s).
offset_demand, offset = _fn("offset", (IVEC, INT), INT)
offset_acc = Function("offset-acc", (IVEC, INT), INT)
_OFFSET = (offset_demand, offset, offset_acc,
           rule(offset_demand(v, i), i <= 0).then(set_(offset(v, i), 0)),
           rule(offset_demand(v, i), i > 0, i <= v.len()).then(set_(offset_acc(v, 0), 0)),
           rule(o == offset_acc(v, i), i < v.len()).then(set_(offset_acc(v, i + 1), o + v[i])),
           rule(offset_demand(v, i), i > 0, o == offset_acc(v, i)).then(set_(offset(v, i), o)))

# Shapes of the list constructors: the extent of a list's tensors along a dim (cat), its length (stack).
cat_extent_demand, cat_extent = _fn("cat-extent", (TLIST, INT), INT)
_CAT_EXTENT = (cat_extent_demand, cat_extent,
               rule(cat_extent_demand(l, d), l == cons(x, rest)).then(cat_extent_demand(rest, d)),
               rule(cat_extent_demand(l, d), l == nil()).then(set_(cat_extent(l, d), 0)),
               rule(cat_extent_demand(l, d), l == cons(x, rest), w == x.shape, n == cat_extent(rest, d))
               .then(set_(cat_extent(l, d), n + w[d])))
list_len_demand, list_len = _fn("list-len", (TLIST,), INT)
_LIST_LEN = (list_len_demand, list_len,
             rule(list_len_demand(l), l == nil()).then(set_(list_len(l), 0)),
             rule(list_len_demand(l), l == cons(h, rest)).then(list_len_demand(rest)),
             rule(list_len_demand(l), l == cons(h, rest), n == list_len(rest)).then(set_(list_len(l), n + 1)))

# A reduction's result shape: its sorted dims set to 1 (keepdim), or removed, last first.
reduced_demand, reduced = _fn("reduced", (IVEC, IVEC, INT), IVEC)
reduced_acc = Function("reduced-acc", (IVEC, IVEC, INT, INT), IVEC)  # (shape, dims, keepdim, dims done)
_REDUCED = (reduced_demand, reduced, reduced_acc,
            rule(reduced_demand(v, w, k)).then(set_(reduced_acc(v, w, k, 0), v)),
            rule(p == reduced_acc(v, w, 1, i), i < w.len()).then(set_(reduced_acc(v, w, 1, i + 1), p.set(w[i], 1))),
            rule(p == reduced_acc(v, w, 0, i), i < w.len())
            .then(set_(reduced_acc(v, w, 0, i + 1), p.remove(w[w.len() - 1 - i]))),
            rule(reduced_demand(v, w, k), p == reduced_acc(v, w, k, w.len())).then(set_(reduced(v, w, k), p)))


def _movedim(r, s, t):
    p = [i for i in range(r) if i != s]
    p.insert(t, s)
    return tuple(p)


def _reduced(shape, dims, keep):
    return tuple(1 if k in dims else n for k, n in enumerate(shape)) if keep else \
        tuple(n for k, n in enumerate(shape) if k not in dims)


DERIVED: dict[str, Derived] = {dv.name: dv for dv in (
    Derived("splice", (IVEC, INT, IVEC), IVEC, _SPLICE, lambda v, i, w: tuple(v[:i]) + tuple(w) + tuple(v[i + 1:])),
    Derived("insert", (IVEC, INT, INT), IVEC, _INSERT, lambda v, i, k: tuple(v[:i]) + (k,) + tuple(v[i:])),
    Derived("repeat", (INT, INT), IVEC, _REPEAT, lambda n, k: (k,) * n),
    Derived("movedim-perm", (INT, INT, INT), IVEC, _MOVEDIM, _movedim),
    Derived("iota", (INT,), IVEC, _IOTA, lambda n: tuple(range(n))),
    Derived("gather", (IVEC, IVEC), IVEC, _GATHER, lambda p, q: tuple(p[j] for j in q)),
    Derived("lead-perm", (IVEC, INT), IVEC, _LEAD_PERM, lambda p, d: (d,) + tuple(j + (j >= d) for j in p)),
    Derived("offset", (IVEC, INT), INT, _OFFSET, lambda v, i: sum(v[:i])),
    Derived("cat-extent", (TLIST, INT), INT, _CAT_EXTENT, lambda ts, d: sum(t.shape[d] for t in ts)),
    Derived("list-len", (TLIST,), INT, _LIST_LEN, len),
    Derived("reduced", (IVEC, IVEC, INT), IVEC, _REDUCED, _reduced),
)}
