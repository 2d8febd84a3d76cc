"""The split-cat rules a list pattern cannot say: a run of pieces *somewhere inside* a longer cat
(or stack), maximal, becomes one cell and the cat is rebuilt around it (``docs/rules.md`` says why
each is hand-written). Written as typed clauses over cons-list cell relations built in the analysis.
"""
from eqsat.ops import Ctor
from eqsat.rule import Rule
from eqsat.rulelang import (INT, IVEC, TENSOR, TLIST, TTUPLE, Function, Relation, cons, nil, rule, set_, union,
                            variables, vec)

from eqsat_rules.derived import DERIVED
from eqsat_rules.dsl import cat, expand, narrow, permute, reshape, split, squeeze, stack, unsqueeze

# The variables of the clauses, by sort (a name can stand for two sorts in two clauses).
(S,) = variables("S", TTUPLE)
(x,) = variables("x", TENSOR)
(s,) = variables("s", IVEC)
c, d, e, i = variables("c d e i", INT)
l, r, u, tail, o, nr, l2, n_l, p_l = variables("l r u tail o nr l2 n p", TLIST)
c_t, e_t, t_t, g, h, a_t, n_t, p_t = variables("c e t g h a n p", TENSOR)
a, b, j, k, m, n = variables("a b j k m n", INT)
sx, sa, u_v, p_v, e_v, v_v = variables("sx sa u p e v", IVEC)
offset_demand, offset = DERIVED["offset"].demand, DERIVED["offset"]

# CatCell(l, d): l is a cell of a cat's list on dim d. A producer cell r proposes RunAlt(r, d, n): the
# cells from r on concatenate like n. Each cat is rebuilt around its *first* producer only
# (next-run: distance to it), and the rebuilt cat, sharing the tail, is rebuilt around the next one:
# k runs give a chain of k lists, not the 2^k combinations.
CatCell = Relation("CatCell", (TLIST, INT))
RunAlt = Relation("RunAlt", (TLIST, INT, TLIST))
next_run = Function("next-run", (TLIST, INT), INT, merge="min")
FirstRun = Relation("FirstRun", (TLIST, INT, TLIST, TLIST))
Rebuilt = Relation("Rebuilt", (TLIST, INT, TLIST))
CAT_CONTEXT = (
    CatCell, RunAlt, next_run, FirstRun, Rebuilt,
    rule(c_t == cat(l, d)).then(CatCell(l, d)),
    rule(CatCell(l, d), l == cons(h, r)).then(CatCell(r, d)),
    rule(RunAlt(r, d, n_l)).then(set_(next_run(r, d), 0), FirstRun(r, d, r, n_l)),
    rule(CatCell(l, d), l == cons(h, r), k == next_run(r, d)).then(set_(next_run(l, d), k + 1)),
    rule(CatCell(l, d), l == cons(h, r), k == next_run(l, d), k > 0, k - 1 == next_run(r, d), FirstRun(r, d, p_l, n_l))
    .then(FirstRun(l, d, p_l, n_l)),
    rule(FirstRun(l, d, l, n_l)).then(Rebuilt(l, d, n_l)),
    rule(FirstRun(l, d, p_l, n_l), l != p_l, l == cons(h, r), FirstRun(r, d, p_l, n_l), Rebuilt(r, d, nr))
    .then(Rebuilt(l, d, cons(h, nr))),
    rule(c_t == cat(l, d), Rebuilt(l, d, l2)).then(union(c_t, cat(l2, d))),
)
# NextGet(S, i, n): n is piece i + 1 of split S; PrevGet(S, i, p): p is piece i - 1. Computed in an
# action: a query that reads (Get S (+ i 1)) cannot look the piece up by a computed index and walks all
# of S's pieces for each match (quadratic: 7.5 s in one run-start rule on a 1,024-way split, 0.1 s now).
# NextSame / NextOther(S, i): piece i + 1 has the same / another shape as piece i (PrevOther(S, i + 1)
# says it again, indexed from the other side). Facts of their own:
# a shape lookup in a rule that walks a list one cell per iteration scanned the shape table each
# iteration (equal runs on a 4,096-way unbind: 5.1 s; joined as NextSame: linear).
NextGet, PrevGet = Relation("NextGet", (TTUPLE, INT, TENSOR)), Relation("PrevGet", (TTUPLE, INT, TENSOR))
NextSame, NextOther, PrevOther = (Relation(name, (TTUPLE, INT)) for name in ("NextSame", "NextOther", "PrevOther"))
NEIGHBOURS = (
    NextGet, PrevGet, NextSame, NextOther, PrevOther,
    rule(g == S[i], S == split(x, s, d), i + 1 < s.len()).then(NextGet(S, i, S[i + 1]), PrevGet(S, i + 1, g)),
    rule(NextGet(S, i, n_t), p_t == S[i], n_t.shape == p_t.shape).then(NextSame(S, i)),
    rule(NextGet(S, i, n_t), p_t == S[i], n_t.shape != p_t.shape).then(NextOther(S, i), PrevOther(S, i + 1)),
)

# Every piece of a split exists as a Get, so "this cell is not the next piece" is decidable.
# SplitRun(l, S, i, j, tail): l starts with pieces i..j-1 of S (split on the cat dim), then tail, and
# the run cannot be extended to the right. RunStart(l, d): nor to the left.
SplitRun, RunStart = Relation("SplitRun", (TLIST, TTUPLE, INT, INT, TLIST)), Relation("RunStart", (TLIST, INT))
# CatGet(l, S, i, r): a cat's cell holding piece i of S. Joined from the TCons table directly,
# the run-end rule below scans every cons cell headed by a Get (other rules' lists too) each
# iteration: quadratic on a wide split (512 pieces: 21 s of analysis instead of 0.5 s), and the
# run walk every piece of S per step (4,096 pieces: 0.8 s).
CatGet = Relation("CatGet", (TLIST, TTUPLE, INT, TLIST))
SPLIT_RUNS = (
    SplitRun, RunStart,
    rule(S == split(x, s, d)).then(S[0]),
    rule(g == S[i], S == split(x, s, d), i + 1 < s.len()).then(S[i + 1]),
    *NEIGHBOURS,
    CatGet,
    rule(CatCell(l, d), l == cons(S[i], r)).then(CatGet(l, S, i, r)),
    rule(CatGet(l, S, i, r), r == nil(), S == split(x, s, d), CatCell(l, d)).then(SplitRun(l, S, i, i + 1, r)),
    rule(CatGet(l, S, i, r), S == split(x, s, d), i + 1 == s.len(), CatCell(l, d)).then(SplitRun(l, S, i, i + 1, r)),
    rule(CatGet(l, S, i, r), S == split(x, s, d), CatCell(l, d), r == cons(h, u), NextGet(S, i, g), h != g)
    .then(SplitRun(l, S, i, i + 1, r)),
    rule(CatGet(l, S, i, r), SplitRun(r, S, i + 1, j, tail)).then(SplitRun(l, S, i, j, tail)),
    rule(c_t == cat(l, d)).then(RunStart(l, d)),
    rule(CatGet(r, S, 0, u), l == cons(h, r), CatCell(l, d)).then(RunStart(r, d)),
    rule(CatGet(r, S, i, u), PrevGet(S, i, g), l == cons(h, r), CatCell(l, d), h != g).then(RunStart(r, d)),
)
_RUN = (RunStart(l, d), SplitRun(l, S, i, j, tail), j - i >= 2, S == split(x, s, d))

CAT_SPLIT_RUN = Rule(
    "cat_split_run", "split_cat",
    "split_cat_to_slices / merge_getitem_cat: a maximal run of consecutive pieces inside a cat on the"
    " split dim becomes one narrow of the input",
    (rule(*_RUN).then(offset_demand(s, i), offset_demand(s, j)),
     rule(*_RUN, a == offset(s, i), b == offset(s, j)).then(RunAlt(l, d, cons(narrow(x, d, a, b - a), tail)))),
    CAT_CONTEXT + SPLIT_RUNS + DERIVED["offset"].decls,
    rewrites=(frozenset({Ctor.CAT}), frozenset({Ctor.CAT})),  # a cat's list rebuilt: a new Cat e-node
)

CAT_NARROW_RUN = Rule(
    "cat_narrow_run", "split_cat",
    "select/slice + cat (the Aten-IR forms of merge_getitem_cat): two adjacent narrows of one tensor on"
    " the cat dim, anywhere inside a cat, become one narrow",
    (rule(CatCell(l, d), l == cons(narrow(x, d, a, n), cons(narrow(x, d, b, m), r)), b == a + n)
     .then(RunAlt(l, d, cons(narrow(x, d, a, n + m), r))),),
    CAT_CONTEXT,
    rewrites=(frozenset({Ctor.CAT}), frozenset({Ctor.CAT})),  # a cat's list rebuilt: a new Cat e-node
)


# A run of m copies of one tensor a in a cat on d is a repeated along d: unsqueezed at d, expanded to m
# there, the two dims flattened (the View's shape pins that form, so a run only grows from its own cells).
# A split's backward concatenates a zero fill for every unused piece (one tensor: AOTAutograd's CSE), so
# its unused trailing pieces cost one loop nest, as after Optimus' merge of unused split pieces.
def _repeat(e, m):
    return reshape(expand(unsqueeze(a_t, d), e), sa.set(d, m * sa[d]))


_PAIR = (CatCell(l, d), l == cons(a_t, cons(a_t, r)), sa == a_t.shape)
CAT_REPEAT_RUN = Rule(
    "cat_repeat_run", "split_cat",
    "the split-backward form of merging unused split pieces: adjacent copies of one tensor anywhere"
    " inside a cat become one view of it repeated along the cat dim",
    (rule(*_PAIR).then(DERIVED["insert"].demand(sa, d, 2)),
     rule(*_PAIR, e_v == DERIVED["insert"](sa, d, 2)).then(RunAlt(l, d, cons(_repeat(e_v, 2), r))),
     rule(CatCell(l, d), l == cons(reshape(expand(unsqueeze(a_t, d), e_v), v_v), cons(a_t, r)),
          sa == a_t.shape, m == e_v[d], v_v == sa.set(d, m * sa[d]))
     .then(RunAlt(l, d, cons(_repeat(e_v.set(d, m + 1), m + 1), r)))),
    CAT_CONTEXT + DERIVED["insert"].decls,
    rewrites=(frozenset({Ctor.CAT}), frozenset({Ctor.CAT})),  # a cat's list rebuilt: a new Cat e-node
)


# <Rel>(l, S, i, j, tail): l starts with the cells of pieces i..j-1 of S, all of one shape (equal sections),
# then tail; the run cannot be extended to the right (next cell not the next piece's, or the next piece
# has another size). <Rel>Start(l, c): nor to the left. Equal shapes are compared as shape facts (table
# lookups), so no vec-get ever reads past a split's sizes. A cell is a piece itself (cat on another dim
# than the split's) or a piece unsqueezed at the cat dim (a stack spelled as a cat, below).
def _run_relations(rel: str) -> tuple[Relation, ...]:
    """<Rel>, <Rel>Start, <Rel>Cell, <Rel>Next, <Rel>Prev."""
    return (Relation(rel, (TLIST, TTUPLE, INT, INT, TLIST)), Relation(f"{rel}Start", (TLIST, INT)),
            Relation(f"{rel}Cell", (TLIST, TTUPLE, INT, TLIST, INT)), Relation(f"{rel}Next", (TTUPLE, INT, INT, TENSOR)),
            Relation(f"{rel}Prev", (TTUPLE, INT, INT, TENSOR)))


def _equal_runs(rel: str, cell, guard: tuple = ()) -> tuple:
    here, nxt, prev = cell(i), cell(i + 1), cell(i - 1)
    run, start, cells, after, before = _run_relations(rel)
    # <Rel>Cell(l, S, i, r, c): the cell l of a cat on c holds piece i of S. Joined from the TCons
    # table directly, every rule below would scan all cons cells each iteration (see CatGet).
    at = (cells(l, S, i, r, c), S == split(x, s, d))
    # <Rel>Next / <Rel>Prev(S, i, c, g): g is the cell of piece i ± 1 (built in an action; see NEIGHBOURS)
    return (
        run, start, cells, after, before,
        rule(CatCell(l, c), l == cons(here, r), S == split(x, s, d), *guard).then(cells(l, S, i, r, c)),
        # the neighbours' cells exist, so "this cell is not the next piece's" is decidable
        rule(*at, i + 1 < s.len()).then(nxt, after(S, i, c, nxt)),
        rule(*at, i > 0).then(prev, before(S, i, c, prev)),
        rule(*at, r == nil()).then(run(l, S, i, i + 1, r)),
        rule(*at, i + 1 == s.len()).then(run(l, S, i, i + 1, r)),
        rule(*at, r == cons(h, u), after(S, i, c, g), h != g).then(run(l, S, i, i + 1, r)),
        rule(*at, r == cons(g, u), after(S, i, c, g), NextOther(S, i)).then(run(l, S, i, i + 1, r)),
        rule(*at, run(r, S, i + 1, j, tail), NextSame(S, i)).then(run(l, S, i, j, tail)),
        rule(e_t == cat(l, c)).then(start(l, c)),
        # the cell before a run's first cell, found from that cell (<Rel>Cell), not from all cons cells
        rule(cells(r, S, 0, u, c), l == cons(h, r), CatCell(l, c)).then(start(r, c)),
        rule(cells(r, S, i, u, c), before(S, i, c, g), l == cons(h, r), CatCell(l, c), h != g).then(start(r, c)),
        rule(cells(r, S, i, u, c), before(S, i, c, h), PrevOther(S, i), l == cons(h, r), CatCell(l, c))
        .then(start(r, c)),
    )


# A stack whose list holds two consecutive pieces of a split (or of an unbind) and is not just that split's
# pieces in order (stack_split_all and unbind_stack cover those) is also the cat of its elements
# unsqueezed at the stack dim (built on demand: UnsqList(l, e, o), o is l with every element unsqueezed).
# StackRun: two consecutive pieces from here on; StackEdge: a run boundary from here on.
StackCell, StackRun, StackEdge, UnsqDemand = (Relation(name, (TLIST, INT)) for name in (
    "StackCell", "StackRun", "StackEdge", "UnsqDemand"))
UnsqList = Relation("UnsqList", (TLIST, INT, TLIST))


def _stack_cells(rel: str, piece) -> tuple:
    here, nxt, prev = piece(i), piece(i + 1), piece(i - 1)
    cells = Relation(rel, (TLIST, TTUPLE, INT, TLIST, INT))
    after, before = Relation(f"{rel}Next", (TTUPLE, INT, INT, TENSOR)), Relation(f"{rel}Prev", (TTUPLE, INT, INT, TENSOR))
    at = (cells(l, S, i, r, e), S == split(x, s, d))  # a cell relation, not a TCons scan (see CatGet)
    return (
        cells, after, before,
        rule(StackCell(l, e), l == cons(here, r), S == split(x, s, d)).then(cells(l, S, i, r, e)),
        # the neighbours' cells exist (built in an action with their cell, see NEIGHBOURS)
        rule(*at, i + 1 < s.len()).then(nxt, after(S, i, e, nxt)),
        rule(*at, i > 0).then(prev, before(S, i, e, prev)),
        rule(*at, after(S, i, e, g), r == cons(g, u)).then(StackRun(l, e)),
        rule(*at, r == cons(h, u), after(S, i, e, g), h != g).then(StackEdge(l, e)),
        rule(*at, r == cons(h, u), i + 1 == s.len()).then(StackEdge(l, e)),
        rule(*at, r == nil(), i + 1 < s.len()).then(StackEdge(l, e)),
        rule(*at, t_t == stack(l, e), i > 0).then(StackEdge(l, e)),
        rule(StackCell(l, e), l == cons(h, r), r == cons(here, u), i == 0).then(StackEdge(l, e)),
        rule(cells(r, S, i, u, e), before(S, i, e, g), l == cons(h, r), StackCell(l, e), h != g).then(StackEdge(l, e)),
    )


STACK_AS_CAT = (
    StackCell, StackRun, StackEdge, UnsqDemand, UnsqList,
    rule(t_t == stack(l, e)).then(StackCell(l, e)),
    rule(StackCell(l, e), l == cons(h, r)).then(StackCell(r, e)),
    *_stack_cells("StackGet", lambda k: S[k]),
    *_stack_cells("StackUnbound", lambda k: squeeze(S[k], d)),
    rule(StackCell(l, e), l == cons(h, r), StackRun(r, e)).then(StackRun(l, e)),
    rule(StackCell(l, e), l == cons(h, r), StackEdge(r, e)).then(StackEdge(l, e)),
    rule(t_t == stack(l, e), StackRun(l, e), StackEdge(l, e)).then(UnsqDemand(l, e)),
    rule(UnsqDemand(l, e), l == cons(h, r)).then(UnsqDemand(r, e)),
    rule(UnsqDemand(l, e), l == nil()).then(UnsqList(l, e, l)),
    rule(UnsqDemand(l, e), l == cons(h, r), UnsqList(r, e, o)).then(UnsqList(l, e, cons(unsqueeze(h, e), o))),
)


def _run_rule(name: str, doc: str, rel: str, cell, cell_guard: tuple, run_guard: tuple,
              derived: dict, out, of_stack: bool = False) -> Rule:
    """A maximal equal run of ≥ 2 cells (pieces i..j-1 of ``S = Split x s d``, m = j - i of k each;
    x's shape sx) becomes the one cell ``out``, which reads a = offset(s, i) and the ``derived``
    values (variable → (derived function, its arguments), demanded first)."""
    runs, start = _run_relations(rel)[:2]
    run = (start(l, c), runs(l, S, i, j, tail), j - i >= 2, S == split(x, s, d), sx == x.shape,
           m == j - i, k == s[i], *run_guard)
    demands = [DERIVED[fn].demand(*args) for fn, args in derived.values()]
    binds = [v == DERIVED[fn](*args) for v, (fn, args) in derived.items()]
    clauses = (rule(*run).then(offset_demand(s, i), *demands),
               rule(*run, a == offset(s, i), *binds).then(RunAlt(l, c, cons(out, tail))))
    if of_stack:
        clauses += (rule(t_t == stack(l, e), UnsqList(l, e, o)).then(union(t_t, cat(o, e))),)
    return Rule(
        name, "split_cat", doc, clauses,
        NEIGHBOURS + (STACK_AS_CAT if of_stack else ()) + CAT_CONTEXT + SPLIT_RUNS[:4] + _equal_runs(rel, cell, cell_guard)
        + DERIVED["offset"].decls + DERIVED["splice"].decls + DERIVED["movedim-perm"].decls,
        # a cat's list rebuilt (a stack's: as a cat): a new Cat e-node
        rewrites=(frozenset({Ctor.STACK if of_stack else Ctor.CAT}), frozenset({Ctor.CAT})),
    )


# the run's narrow unflattened (piece index at d), the piece index moved to the cat dim c
_UNFLAT = {u_v: ("splice", (sx, d, vec(m, k))), p_v: ("movedim-perm", (sx.len() + 1, d, c))}
_MOVED = permute(reshape(narrow(x, d, a, m * k), u_v), p_v)
_UNBIND_PERM = {p_v: ("movedim-perm", (sx.len(), d, c))}

CAT_SPLIT_RUN_OTHER_DIM = _run_rule(
    "cat_split_run_other_dim",
    "split_cat with cat dim != split dim: a maximal run of consecutive equal pieces anywhere inside a cat"
    " is one narrow of the input, unflattened, its piece index moved to the cat dim and flattened",
    "EqRun", lambda i: S[i], (c != d,), (), _UNFLAT, reshape(_MOVED, sx.set(d, k).set(c, m * sx[c])))

STACK_SPLIT_RUN = _run_rule(
    "stack_split_run",
    "split_stack_to_cats: a maximal run of consecutive equal pieces anywhere inside a stack is one narrow"
    " of the input, unflattened, its piece index moved to the stack dim (the stack spelled as a cat of"
    " unsqueezed elements)",
    "UnsqRun", lambda i: unsqueeze(S[i], c), (), (), _UNFLAT, _MOVED, of_stack=True)

UNBIND_CAT_RUN = _run_rule(
    "unbind_cat_run",
    "unbind_cat_to_view with other tensors: a maximal run of consecutive unbind pieces anywhere inside a"
    " cat is one narrow of the input, its unbind dim moved to the cat dim and flattened into it",
    "UnbindRun", lambda i: squeeze(S[i], d), (), (k == 1,), _UNBIND_PERM,
    reshape(permute(narrow(x, d, a, m), p_v), sx.remove(d).set(c, m * sx.remove(d)[c])))

UNBIND_STACK_RUN = _run_rule(
    "unbind_stack_run",
    "unbind_stack with other tensors: a maximal run of consecutive unbind pieces anywhere inside a stack is"
    " one narrow of the input, its unbind dim moved to the stack dim",
    "UnbindStackRun", lambda i: unsqueeze(squeeze(S[i], d), c), (), (k == 1,), _UNBIND_PERM,
    permute(narrow(x, d, a, m), p_v), of_stack=True)

SPLIT_CAT_HAND = [CAT_SPLIT_RUN, CAT_NARROW_RUN, CAT_REPEAT_RUN, CAT_SPLIT_RUN_OTHER_DIM, STACK_SPLIT_RUN, UNBIND_CAT_RUN,
                  UNBIND_STACK_RUN]
