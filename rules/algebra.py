"""Algebra greedy matching cannot reach: pointwise ops commute with slicing and concatenation, view
chains fold. This is what lets split-cat patterns meet across a relu or an add.

Directions converge: slices move towards the inputs (``narrow(f(x)) → f(narrow(x))``), cats move
towards the outputs (``cat([f(a), f(b)]) → f(cat([a, b]))``); each step makes a term closer to the
leaves or merges two, so the rules cannot feed themselves forever.

A binary op commutes with a slice only when its other operand is sliced the same way: same shape,
rank 0, or size 1 along the sliced dim at equal rank (it then broadcasts to every piece alike).
"""
from functools import lru_cache

from eqsat import ops
from eqsat.ops import Ctor
from eqsat.rule import Rule
from eqsat.rulelang import INT, IVEC, STR, TENSOR, TLIST, Relation, Var, cons, nil, rule, union, variables

from eqsat_rules import dsl
from eqsat_rules.basic import algebra_rule as _r
from eqsat_rules.dsl import (
    binary,
    builder,
    cat,
    contiguous,
    each,
    gather,
    insert,
    ints,
    ivecs,
    lead_perm,
    log_softmax,
    narrow,
    opkey,
    permute,
    repeat,
    reshape,
    softmax,
    splice,
    split,
    squeeze,
    stack,
    tensor,
    tlists,
    unary,
    unsqueeze,
)

x, y = tensor("x"), tensor("y")
f = opkey("f")
d, a, m, i, e = ints("d a m i e")
s, t, p = ivecs("s t p")
as_, bs = tlists("as bs")


# The two slices and how each cuts a tensor: (name, slice of t).
SLICES = [("narrow", lambda t: narrow(t, d, a, m)), ("split", lambda t: split(t, s, d)[i])]
# How a binary op's operands are sliced: (case, guard, (sliced x, sliced y)); `cut` slices a tensor.
BINARY_CASES = [
    ("same", lambda: [x.shape == y.shape], lambda cut: (cut(x), cut(y))),
    ("rhs_scalar", lambda: [y.ndim == 0], lambda cut: (cut(x), y)),
    ("lhs_scalar", lambda: [x.ndim == 0], lambda cut: (x, cut(y))),
    ("rhs_bcast", lambda: [y.ndim == x.ndim, y.shape[d] == 1], lambda cut: (cut(x), y)),
    ("lhs_bcast", lambda: [x.ndim == y.ndim, x.shape[d] == 1], lambda cut: (x, cut(y))),
]

SLICE_RULES = [_r(f"{name}_unary", cut(unary(f, x)), unary(f, cut(x))) for name, cut in SLICES] + [
    _r(f"{name}_binary_{case}", cut(binary(f, x, y)), binary(f, *operands(cut)), *guard())
    for name, cut in SLICES for case, guard, operands in BINARY_CASES
]

# Softmax normalises along its own dim only, so a slice along any other dim commutes with it.
NORMS = [("softmax", softmax), ("log_softmax", log_softmax)]
NORM_RULES = [
    _r(f"{slice_name}_{norm_name}", cut(norm(x, e)), norm(cut(x), e), e != d)
    for slice_name, cut in SLICES for norm_name, norm in NORMS
]

CONCAT_RULES = [
    _r("cat_unary", cat(each(lambda p: unary(f, p), as_), d), unary(f, cat(as_, d))),
    _r("stack_unary", stack(each(lambda p: unary(f, p), as_), d), unary(f, stack(as_, d))),
    _r("cat_binary_same", cat(each(lambda p, q: binary(f, p, q), as_, bs, when=lambda p, q: [p.shape == q.shape]), d),
       binary(f, cat(as_, d), cat(bs, d))),
    _r("stack_squeezed", stack(each(lambda p: squeeze(p, d), as_, when=lambda p: [p.shape[d] == 1]), d), cat(as_, d),
       doc="stacking tensors squeezed at the stack dim is concatenating them (x[0], x[1], … stacked is x)"),
    _r("cat_binary_scalar", cat(each(lambda p: binary(f, p, y), as_, when=lambda p: [y.ndim == 0]), d),
       binary(f, cat(as_, d), y)),
]

VIEW_RULES = [
    _r("unsqueeze_as_view", unsqueeze(x, d), reshape(x, insert(x.shape, d, 1)),
       doc="unsqueeze is a reshape, so it folds into view chains"),
    _r("squeeze_as_view", squeeze(x, d), reshape(x, x.shape.remove(d)),
       doc="squeeze (of a size-1 dim) is a reshape, so it folds into view chains"),
]


# Attention's head split: each of n equal pieces of x along d is reshaped so that d becomes (heads,
# head_dim), permuted and copied (the Aten graph of a matmul on head views). The pieces are the n slices
# along a new outermost axis of one copy of x, reshaped with d as (n, heads, head_dim) and permuted the
# same way: every piece of one split, of one permutation, selects from the same copy, so one kernel
# writes all of them. A select along dim 0 of a contiguous tensor is contiguous: each piece keeps its
# layout, and later reshapes stay views.
# The slices: (index, length, pieces, slice, guard: equal aligned pieces).
HEAD_SLICES = [
    ("split", lambda: (i, s[0], s.len(), split(x, s, d)[i], [s == repeat(s.len(), s[0])])),
    ("narrow", lambda: (a // m, m, x.shape[d] // m, narrow(x, d, a, m), [a % m == 0, x.shape[d] % m == 0])),
]
# The reshapes of a piece (to t): (case, guard, shape of x with the pieces' axis, where that axis is);
# each guard bounds t's length before it reads t (an action's vec-get out of range is a panic).
# "inner": only d is split, into (t[d], t[d+1]). "last": d is x's last dim and ends t as (t[-2], t[-1]);
# the dims before it may be reshaped too (q/k/v from one (B·T, 3C) matmul viewed as (B, T, H, D)).
HEAD_RESHAPES = [
    ("inner", lambda piece, n, length: [t.len() == x.ndim + 1, t == splice(piece.shape, d, [t[d], t[d + 1]])],
     lambda n: splice(x.shape, d, [n, t[d], t[d + 1]]), lambda: d),
    ("last", lambda piece, n, length: [d == x.ndim - 1, t.len() >= 2, t[t.len() - 2] * t[t.len() - 1] == length],
     lambda n: insert(t, t.len() - 2, n), lambda: t.len() - 2),
]


def _head_split_copy(slice_name, cut, reshape_name, reshaped, whole_shape, axis):
    k, length, n, piece, aligned = cut()
    whole = contiguous(permute(reshape(x, whole_shape(n)), lead_perm(p, axis())))
    return _r(f"head_split_copy_{slice_name}_{reshape_name}", contiguous(permute(reshape(piece, t), p)),
              squeeze(narrow(whole, 0, k, 1), 0), *aligned, *reshaped(piece, n, length),
              doc="copy(permute(reshape(piece k of n of x, d → (h, e)), p)) ="
                  " copy(permute(reshape(x, d → (n, h, e)), [d] + p))[k]: the pieces share one copy")


# k: (B, H, D, T) = permute(y, p), copied and flattened to (B·H, D, T) matrices for a bmm, is the copy in
# the order p then swap the last two, (B, H, T, D), flattened and transposed back: one copy either way,
# and now in q's and v's layout, so head_split_copy serves it from their copy. Only when the swap puts
# y's last dim back last (p moved it to third): one direction, no cycle.
_yp = permute(y, p)
_b, _m, _n = _yp.shape[0] * _yp.shape[1], _yp.shape[2], _yp.shape[3]
HEAD_RULES = [_head_split_copy(sname, cut, *case) for sname, cut in HEAD_SLICES for case in HEAD_RESHAPES] + [
    _r("transpose_out_of_copy", reshape(contiguous(_yp), [_b, _m, _n]),
       permute(reshape(contiguous(permute(y, gather(p, [0, 1, 3, 2]))), [_b, _n, _m]), [0, 2, 1]),
       p.len() == 4, p[2] == 3,
       doc="copy(permute(y, p)) flattened to matrices = (copy(permute(y, p then swap the last two)) flattened)ᵀ"),
]

ALGEBRA_DSL = SLICE_RULES + NORM_RULES + CONCAT_RULES + VIEW_RULES + HEAD_RULES


# -- slices through the ops whose registry rows say where slicing commutes (``eqsat.ops`` ``slices``) ----
def _row_rules(op: ops.Op) -> list:
    """narrow/split (and cat, where the row says so) of the op's result along d, as the op of its first
    tensor operand sliced (concatenated) along the input dim, in each case the row gives."""
    letters = {TENSOR: "x", STR: "f", IVEC: "v", INT: "k"}  # none of the slices' own d, a, m, s, i
    args = [Var(letters[sort] + (str(op.args[:k].count(sort)) if op.args.count(sort) > 1 else ""), sort)
            for k, sort in enumerate(op.args)]
    pos = op.args.index(TENSOR)
    build = builder(ops.builder_name(op))

    def on(operand):
        return build(*args[:pos], operand, *args[pos + 1:])

    out = []
    for case, guards, dim in op.slices(dsl, *args, d):
        tag = f"{build.__name__}_{case}" if case else build.__name__
        out += [_r(f"narrow_{tag}", narrow(on(args[pos]), d, a, m), on(narrow(args[pos], dim, a, m)), *guards),
                _r(f"split_{tag}", split(on(args[pos]), s, d)[i], on(split(args[pos], s, dim)[i]), *guards)]
        if op.concat:
            out.append(_r(f"cat_{tag}", cat(each(on, as_), d), on(cat(as_, dim)), *guards))
    return out


@lru_cache(maxsize=4)
def _row_slice_rules(version: int) -> tuple:
    seen: dict[str, ops.Op] = {}
    for op in ops.ALL_OPS:
        if op.slices is not None:
            seen.setdefault(op.ctor, op)
    return tuple(r for op in seen.values() for r in _row_rules(op))


def algebra_dsl() -> list:
    """The algebra family's DSL rules, with those derived from the registry's rows."""
    return ALGEBRA_DSL + list(_row_slice_rules(ops.version()))

# -- cat of cat on the same dim: hand-written (the result appends two lists) ---------------------------
AppendDemand = Relation("AppendDemand", (TLIST, TLIST))
Appended = Relation("Appended", (TLIST, TLIST, TLIST))  # Appended(m, r, o): o is the list m followed by r
m_l, r_l, u_l, o_l, l_l = variables("m r u o l", TLIST)
h_t, c_t = variables("h c", TENSOR)
APPEND = (  # built on demand
    AppendDemand, Appended,
    rule(AppendDemand(m_l, r_l), m_l == nil()).then(Appended(m_l, r_l, r_l)),
    rule(AppendDemand(m_l, r_l), m_l == cons(h_t, u_l)).then(AppendDemand(u_l, r_l)),
    rule(AppendDemand(m_l, r_l), m_l == cons(h_t, u_l), Appended(u_l, r_l, o_l)).then(Appended(m_l, r_l, cons(h_t, o_l))),
)
_INNER = (c_t == cat(l_l, d), l_l == cons(cat(m_l, d), r_l))
CAT_FLATTEN = Rule(
    "cat_flatten", "algebra", "cat([cat(m, d), *rest], d) = cat(m + rest, d)",
    (rule(*_INNER).then(AppendDemand(m_l, r_l)),
     rule(*_INNER, Appended(m_l, r_l, o_l)).then(union(c_t, cat(o_l, d)))),
    APPEND,
    rewrites=(frozenset({Ctor.CAT}), frozenset({Ctor.CAT})),  # a cat's list rebuilt: a new Cat e-node
)

ALGEBRA_HAND = [CAT_FLATTEN]
