"""The Optimus split-cat family (torch/_inductor/fx_passes/split_cat.py) as rewrite rules.

Lowering already spells every pattern canonically: ``unbind`` is ``split(x, [1]*n, d)`` + ``squeeze``
(so Optimus' *merge_split_squeeze* holds by construction), ``chunk`` is a split, ``x[a:b]`` a narrow.
"All pieces", "equal sections" and "each piece squeezed / reshaped" are DSL list patterns and guards;
a shuffled order or a missing piece never matches them. Pieces used elsewhere too stay available:
the e-graph keeps both forms and extraction decides.
"""
from eqsat.rule import Rule
from eqsat.schema import ANALYSIS

from .derived import DERIVED
from .dsl import (cat, ints, ivecs, movedim, pieces, repeat, reshape, rewrite, splice, split,
                  squeeze, stack, tensor)

x = tensor("x")
s, t = ivecs("s t")
c, d, e, i, j = ints("c d e i j")
S = split(x, s, d)
n, k = s.len(), s[0]
equal = s == repeat(n, k)                            # every section has size k
unbound = pieces(S, each=lambda p: squeeze(p, d))    # x.unbind(d), as lowering spells it
unflat = reshape(x, splice(x.shape, d, [n, k]))      # x.unflatten(d, (n, k)): piece index at d


def _r(name, lhs, rhs, *when, doc="", given=()):
    return rewrite(name, lhs, rhs, when, family="split_cat", doc=doc, given=given)


SPLIT_CAT_DSL = [
    _r("split_single", S[0], x, n == 1,
       doc="remove_split_with_size_one: a split into one section is its input"),
    _r("merge_splits", split(S[i], t, d)[j], split(x, splice(s, i, t), d)[i + j],
       doc="merge_splits: a split of a split piece on the same dim is one split of the input"),
    # ... and the outer split's other pieces are pieces of the merged split too, so it can die
    _r("merge_splits_before", S[j], split(x, splice(s, i, t), d)[j], j < i, given=[split(S[i], t, d)],
       doc="merge_splits: a piece before the re-split one is the same piece of the merged split"),
    _r("merge_splits_after", S[j], split(x, splice(s, i, t), d)[j + t.len() - 1], j > i, given=[split(S[i], t, d)],
       doc="merge_splits: a piece after the re-split one is shifted by the re-split's extra pieces"),
    _r("cat_split_all", cat(pieces(S), d), x,
       doc="mutate_cat / split_cat: cat of every piece, in order, on the split dim is the input"),
    _r("cat_split_other_dim", cat(pieces(S), c),
       reshape(movedim(unflat, d, c), x.shape.set(d, k).set(c, n * x.shape[c])), equal, c != d,
       doc="split_cat with cat dim != split dim and equal sections: unflatten, movedim, flatten"),
    _r("stack_split_all", stack(pieces(S), e), movedim(unflat, d, e), equal,
       doc="split_stack_to_cats: stack of every equal piece is a view (+ permute) of the input"),
    _r("stack_reshaped_pieces", stack(pieces(S, each=lambda p: reshape(p, t)), e),
       movedim(reshape(movedim(unflat, d, 0), [n] + t), 0, e), equal,
       doc="move_reshape_out_of_split_stack: stack of equally reshaped equal pieces"),
    _r("unbind_stack", stack(unbound, e), movedim(x, d, e), s == repeat(n, 1),
       doc="unbind_stack: stack of every unbind piece is a movedim of the input"),
    _r("unbind_cat", cat(unbound, e),
       reshape(movedim(x, d, e), x.shape.remove(d).set(e, n * x.shape.remove(d)[e])), s == repeat(n, 1),
       doc="unbind_cat_to_view: cat of every unbind piece is movedim + flatten of the input"),
]

# -- runs of pieces inside a longer cat: hand-written (a list pattern cannot say "somewhere inside") --
_A = f":ruleset {ANALYSIS}"
# CatCell(l, d): l is a cell of a cat's list on dim d. A producer cell r proposes RunAlt(r, d, n): the
# cells from r on concatenate like n. Each cat is rebuilt around its *first* producer only
# (next-run: distance to it), and the rebuilt cat, sharing the tail, is rebuilt around the next one:
# k runs give a chain of k lists, not the 2^k combinations.
CAT_CONTEXT = (
    "(relation CatCell (TList i64))",
    "(relation RunAlt (TList i64 TList))",
    "(function next-run (TList i64) i64 :merge (min old new))",
    "(relation FirstRun (TList i64 TList TList))",
    "(relation Rebuilt (TList i64 TList))",
    f"(rule ((= c (Cat l d))) ((CatCell l d)) {_A})",
    f"(rule ((CatCell l d) (= l (TCons h r))) ((CatCell r d)) {_A})",
    f"(rule ((RunAlt r d n)) ((set (next-run r d) 0) (FirstRun r d r n)) {_A})",
    f"(rule ((CatCell l d) (= l (TCons h r)) (= k (next-run r d))) ((set (next-run l d) (+ k 1))) {_A})",
    f"(rule ((CatCell l d) (= l (TCons h r)) (= k (next-run l d)) (> k 0) (= (- k 1) (next-run r d))"
    f" (FirstRun r d p n)) ((FirstRun l d p n)) {_A})",
    f"(rule ((FirstRun l d l n)) ((Rebuilt l d n)) {_A})",
    f"(rule ((FirstRun l d p n) (!= l p) (= l (TCons h r)) (FirstRun r d p n) (Rebuilt r d nr))"
    f" ((Rebuilt l d (TCons h nr))) {_A})",
    f"(rule ((= c (Cat l d)) (Rebuilt l d l2)) ((union c (Cat l2 d))) {_A})",
)
# NextGet(S, i, n): n is piece i + 1 of split S; PrevGet(S, i, p): p is piece i - 1. Computed in an
# action: a query that reads (Get S (+ i 1)) cannot look the piece up by a computed index and walks all
# of S's pieces for each match (quadratic: 7.5 s in one run-start rule on a 1,024-way split, 0.1 s now).
# NextSame / NextOther(S, i): piece i + 1 has the same / another shape as piece i (PrevOther(S, i + 1)
# says it again, indexed from the other side). Facts of their own:
# a shape lookup in a rule that walks a list one cell per iteration scanned the shape table each
# iteration (equal runs on a 4,096-way unbind: 5.1 s; joined as NextSame: linear).
NEIGHBOURS = (
    "(relation NextGet (TTuple i64 Tensor))",
    "(relation PrevGet (TTuple i64 Tensor))",
    "(relation NextSame (TTuple i64))",
    "(relation NextOther (TTuple i64))",
    "(relation PrevOther (TTuple i64))",
    f"(rule ((= g (Get S i)) (= S (Split x s d)) (< (+ i 1) (vec-length s)))"
    f" ((NextGet S i (Get S (+ i 1))) (PrevGet S (+ i 1) g)) {_A})",
    f"(rule ((NextGet S i n) (= p (Get S i)) (= (shape n) (shape p))) ((NextSame S i)) {_A})",
    f"(rule ((NextGet S i n) (= p (Get S i)) (!= (shape n) (shape p)))"
    f" ((NextOther S i) (PrevOther S (+ i 1))) {_A})",
)


def _at(cell, piece: str) -> str:
    """The cell pattern ``cell`` (a function of the piece index) around the piece variable ``piece``."""
    return cell("_I").replace("(Get S _I)", piece)


# Every piece of a split exists as a Get, so "this cell is not the next piece" is decidable.
# SplitRun(l, S, i, j, tail): l starts with pieces i..j-1 of S (split on the cat dim), then tail, and
# the run cannot be extended to the right. RunStart(l, d): nor to the left.
SPLIT_RUNS = (
    "(relation SplitRun (TList TTuple i64 i64 TList))",
    "(relation RunStart (TList i64))",
    f"(rule ((= S (Split x s d))) ((Get S 0)) {_A})",
    f"(rule ((= g (Get S i)) (= S (Split x s d)) (< (+ i 1) (vec-length s))) ((Get S (+ i 1))) {_A})",
    *NEIGHBOURS,
    # CatGet(l, S, i, r): a cat's cell holding piece i of S. Joined from the TCons table directly,
    # the run-end rule below scans every cons cell headed by a Get (other rules' lists too) each
    # iteration: quadratic on a wide split (512 pieces: 21 s of analysis instead of 0.5 s), and the
    # run walk every piece of S per step (4,096 pieces: 0.8 s).
    "(relation CatGet (TList TTuple i64 TList))",
    f"(rule ((CatCell l d) (= l (TCons (Get S i) r))) ((CatGet l S i r)) {_A})",
    f"(rule ((CatGet l S i r) (= r (TNil)) (= S (Split x s d)) (CatCell l d)) ((SplitRun l S i (+ i 1) r)) {_A})",
    f"(rule ((CatGet l S i r) (= S (Split x s d)) (= (+ i 1) (vec-length s)) (CatCell l d))"
    f" ((SplitRun l S i (+ i 1) r)) {_A})",
    f"(rule ((CatGet l S i r) (= S (Split x s d)) (CatCell l d) (= r (TCons h u))"
    f" (NextGet S i g) (!= h g)) ((SplitRun l S i (+ i 1) r)) {_A})",
    f"(rule ((CatGet l S i r) (SplitRun r S (+ i 1) j tail)) ((SplitRun l S i j tail)) {_A})",
    f"(rule ((= c (Cat l d))) ((RunStart l d)) {_A})",
    f"(rule ((CatGet r S 0 u) (= l (TCons h r)) (CatCell l d)) ((RunStart r d)) {_A})",
    f"(rule ((CatGet r S i u) (PrevGet S i g) (= l (TCons h r)) (CatCell l d) (!= h g)) ((RunStart r d)) {_A})",
)
_RUN = "(RunStart l d) (SplitRun l S i j tail) (>= (- j i) 2) (= S (Split x s d))"

CAT_SPLIT_RUN = Rule(
    "cat_split_run", "split_cat",
    "split_cat_to_slices / merge_getitem_cat: a maximal run of consecutive pieces inside a cat on the"
    " split dim becomes one narrow of the input",
    (f"(rule ({_RUN}) ((offset-demand s i) (offset-demand s j)))",
     f"(rule ({_RUN} (= a (offset s i)) (= b (offset s j))) ((RunAlt l d (TCons (Narrow x d a (- b a)) tail))))"),
    CAT_CONTEXT + SPLIT_RUNS + DERIVED["offset"].decls,
    rewrites=(frozenset({"Cat"}), frozenset({"Cat"})),  # a cat's list rebuilt: a new Cat e-node
)

CAT_NARROW_RUN = Rule(
    "cat_narrow_run", "split_cat",
    "select/slice + cat (the Aten-IR forms of merge_getitem_cat): two adjacent narrows of one tensor on"
    " the cat dim, anywhere inside a cat, become one narrow",
    ("(rule ((CatCell l d) (= l (TCons (Narrow x d a n) (TCons (Narrow x d b m) r))) (= b (+ a n)))"
     " ((RunAlt l d (TCons (Narrow x d a (+ n m)) r))))",),
    CAT_CONTEXT,
    rewrites=(frozenset({"Cat"}), frozenset({"Cat"})),  # a cat's list rebuilt: a new Cat e-node
)

# A run of m copies of one tensor a in a cat on d is a repeated along d: unsqueezed at d, expanded to m
# there, the two dims flattened (the View's shape pins that form, so a run only grows from its own cells).
# A split's backward concatenates a zero fill for every unused piece (one tensor: AOTAutograd's CSE), so
# its unused trailing pieces cost one loop nest, as after Optimus' merge of unused split pieces.
def _repeat(e: str, m: str) -> str:
    return f"(View (Expand (Unsqueeze a d) {e}) (vec-set sa d (* {m} (vec-get sa d))))"


CAT_REPEAT_RUN = Rule(
    "cat_repeat_run", "split_cat",
    "the split-backward form of merging unused split pieces: adjacent copies of one tensor anywhere"
    " inside a cat become one view of it repeated along the cat dim",
    (f"(rule ((CatCell l d) (= l (TCons a (TCons a r))) (= sa (shape a))) ((insert-demand sa d 2)) {_A})",
     "(rule ((CatCell l d) (= l (TCons a (TCons a r))) (= sa (shape a)) (= e (insert sa d 2)))"
     f" ((RunAlt l d (TCons {_repeat('e', '2')} r))))",
     "(rule ((CatCell l d) (= l (TCons (View (Expand (Unsqueeze a d) e) v) (TCons a r))) (= sa (shape a))"
     f" (= m (vec-get e d)) (= v (vec-set sa d (* m (vec-get sa d)))))"
     f" ((RunAlt l d (TCons {_repeat('(vec-set e d (+ m 1))', '(+ m 1)')} r))))"),
    CAT_CONTEXT + DERIVED["insert"].decls,
    rewrites=(frozenset({"Cat"}), frozenset({"Cat"})),  # a cat's list rebuilt: a new Cat e-node
)

# <Rel>(l, S, i, j, tail): l starts with the cells of pieces i..j-1 of S, all of one shape (equal sections),
# then tail; the run cannot be extended to the right (next cell not the next piece's, or the next piece
# has another size). <Rel>Start(l, c): nor to the left. Equal shapes are compared as shape facts (table
# lookups), so no vec-get ever reads past a split's sizes. A cell is a piece itself (cat on another dim
# than the split's) or a piece unsqueezed at the cat dim (a stack spelled as a cat, below).
def _equal_runs(rel: str, cell, guard: str = "") -> tuple[str, ...]:
    here, nxt, prev = cell("i"), cell("(+ i 1)"), cell("(- i 1)")
    # <Rel>Cell(l, S, i, r, c): the cell l of a cat on c holds piece i of S. Joined from the TCons
    # table directly, every rule below would scan all cons cells each iteration (see CatGet).
    at = f"({rel}Cell l S i r c) (= S (Split x s d))"
    # <Rel>Next / <Rel>Prev(S, i, c, g): g is the cell of piece i ± 1 (built in an action; see NEIGHBOURS)
    return (
        f"(relation {rel} (TList TTuple i64 i64 TList))",
        f"(relation {rel}Start (TList i64))",
        f"(relation {rel}Cell (TList TTuple i64 TList i64))",
        f"(relation {rel}Next (TTuple i64 i64 Tensor))",
        f"(relation {rel}Prev (TTuple i64 i64 Tensor))",
        f"(rule ((CatCell l c) (= l (TCons {here} r)) (= S (Split x s d)) {guard}) (({rel}Cell l S i r c)) {_A})",
        # the neighbours' cells exist, so "this cell is not the next piece's" is decidable
        f"(rule ({at} (< (+ i 1) (vec-length s))) ({nxt} ({rel}Next S i c {nxt})) {_A})",
        f"(rule ({at} (> i 0)) ({prev} ({rel}Prev S i c {prev})) {_A})",
        f"(rule ({at} (= r (TNil))) (({rel} l S i (+ i 1) r)) {_A})",
        f"(rule ({at} (= (+ i 1) (vec-length s))) (({rel} l S i (+ i 1) r)) {_A})",
        f"(rule ({at} (= r (TCons h u)) ({rel}Next S i c g) (!= h g)) (({rel} l S i (+ i 1) r)) {_A})",
        f"(rule ({at} (= r (TCons g u)) ({rel}Next S i c g) (NextOther S i)) (({rel} l S i (+ i 1) r)) {_A})",
        f"(rule ({at} ({rel} r S (+ i 1) j tail) (NextSame S i)) (({rel} l S i j tail)) {_A})",
        f"(rule ((= e (Cat l c))) (({rel}Start l c)) {_A})",
        # the cell before a run's first cell, found from that cell (<Rel>Cell), not from all cons cells
        f"(rule (({rel}Cell r S 0 u c) (= l (TCons h r)) (CatCell l c)) (({rel}Start r c)) {_A})",
        f"(rule (({rel}Cell r S i u c) ({rel}Prev S i c g) (= l (TCons h r)) (CatCell l c) (!= h g))"
        f" (({rel}Start r c)) {_A})",
        f"(rule (({rel}Cell r S i u c) ({rel}Prev S i c h) (PrevOther S i) (= l (TCons h r)) (CatCell l c))"
        f" (({rel}Start r c)) {_A})",
    )


# A stack whose list holds two consecutive pieces of a split (or of an unbind) and is not just that split's
# pieces in order (stack_split_all and unbind_stack cover those) is also the cat of its elements
# unsqueezed at the stack dim (built on demand: UnsqList(l, e, o), o is l with every element unsqueezed).
# StackRun: two consecutive pieces from here on; StackEdge: a run boundary from here on.
def _stack_cells(rel: str, piece) -> tuple[str, ...]:
    here, nxt, prev = piece("i"), piece("(+ i 1)"), piece("(- i 1)")
    at = f"({rel} l S i r e) (= S (Split x s d))"  # a cell relation, not a TCons scan (see CatGet)
    return (
        f"(relation {rel} (TList TTuple i64 TList i64))",
        f"(relation {rel}Next (TTuple i64 i64 Tensor))",
        f"(relation {rel}Prev (TTuple i64 i64 Tensor))",
        f"(rule ((StackCell l e) (= l (TCons {here} r)) (= S (Split x s d))) (({rel} l S i r e)) {_A})",
        # the neighbours' cells exist (built in an action with their cell, see NEIGHBOURS)
        f"(rule ({at} (< (+ i 1) (vec-length s))) ({nxt} ({rel}Next S i e {nxt})) {_A})",
        f"(rule ({at} (> i 0)) ({prev} ({rel}Prev S i e {prev})) {_A})",
        f"(rule ({at} ({rel}Next S i e g) (= r (TCons g u))) ((StackRun l e)) {_A})",
        f"(rule ({at} (= r (TCons h u)) ({rel}Next S i e g) (!= h g)) ((StackEdge l e)) {_A})",
        f"(rule ({at} (= r (TCons h u)) (= (+ i 1) (vec-length s))) ((StackEdge l e)) {_A})",
        f"(rule ({at} (= r (TNil)) (< (+ i 1) (vec-length s))) ((StackEdge l e)) {_A})",
        f"(rule ({at} (= t (Stack l e)) (> i 0)) ((StackEdge l e)) {_A})",
        f"(rule ((StackCell l e) (= l (TCons h r)) (= r (TCons {here} u)) (= i 0)) ((StackEdge l e)) {_A})",
        f"(rule (({rel} r S i u e) ({rel}Prev S i e g) (= l (TCons h r)) (StackCell l e) (!= h g))"
        f" ((StackEdge l e)) {_A})",
    )


STACK_AS_CAT = (
    "(relation StackCell (TList i64))",
    "(relation StackRun (TList i64))",
    "(relation StackEdge (TList i64))",
    "(relation UnsqDemand (TList i64))",
    "(relation UnsqList (TList i64 TList))",
    f"(rule ((= t (Stack l e))) ((StackCell l e)) {_A})",
    f"(rule ((StackCell l e) (= l (TCons h r))) ((StackCell r e)) {_A})",
    *_stack_cells("StackGet", lambda i: f"(Get S {i})"),
    *_stack_cells("StackUnbound", lambda i: f"(Squeeze (Get S {i}) d)"),
    f"(rule ((StackCell l e) (= l (TCons h r)) (StackRun r e)) ((StackRun l e)) {_A})",
    f"(rule ((StackCell l e) (= l (TCons h r)) (StackEdge r e)) ((StackEdge l e)) {_A})",
    f"(rule ((= t (Stack l e)) (StackRun l e) (StackEdge l e)) ((UnsqDemand l e)) {_A})",
    f"(rule ((UnsqDemand l e) (= l (TCons h r))) ((UnsqDemand r e)) {_A})",
    f"(rule ((UnsqDemand l e) (= l (TNil))) ((UnsqList l e l)) {_A})",
    f"(rule ((UnsqDemand l e) (= l (TCons h r)) (UnsqList r e o)) ((UnsqList l e (TCons (Unsqueeze h e) o))) {_A})",
)


def _run_rule(name: str, doc: str, rel: str, cell, cell_guard: str, run_guard: str,
              derived: dict[str, tuple[str, str]], out: str, stack: bool = False) -> Rule:
    """A maximal equal run of ≥ 2 cells (pieces i..j-1 of ``S = Split x s d``, m = j - i of k each;
    x's shape sx) becomes the one cell ``out``, which reads a = offset(s, i) and the ``derived``
    values (variable → (derived function, its arguments), demanded first)."""
    run = (f"({rel}Start l c) ({rel} l S i j tail) (>= (- j i) 2) (= S (Split x s d)) (= sx (shape x))"
           f" (= m (- j i)) (= k (vec-get s i)) {run_guard}")
    demands = " ".join(f"({fn}-demand {args})" for fn, args in derived.values())
    binds = " ".join(f"(= {v} ({fn} {args}))" for v, (fn, args) in derived.items())
    commands = (f"(rule ({run}) ((offset-demand s i) {demands}))",
                f"(rule ({run} (= a (offset s i)) {binds}) ((RunAlt l c (TCons {out} tail))))")
    if stack:
        commands += ("(rule ((= t (Stack l e)) (UnsqList l e o)) ((union t (Cat o e))))",)
    return Rule(
        name, "split_cat", doc, commands,
        NEIGHBOURS + (STACK_AS_CAT if stack else ()) + CAT_CONTEXT + SPLIT_RUNS[:4] + _equal_runs(rel, cell, cell_guard)
        + DERIVED["offset"].decls + DERIVED["splice"].decls + DERIVED["movedim-perm"].decls,
        # a cat's list rebuilt (a stack's: as a cat): a new Cat e-node
        rewrites=(frozenset({"Stack" if stack else "Cat"}), frozenset({"Cat"})),
    )


# the run's narrow unflattened (piece index at d), the piece index moved to the cat dim c
_UNFLAT = {"u": ("splice", "sx d (vec-of m k)"), "p": ("movedim-perm", "(+ (vec-length sx) 1) d c")}
_MOVED = "(Permute (View (Narrow x d a (* m k)) u) p)"

CAT_SPLIT_RUN_OTHER_DIM = _run_rule(
    "cat_split_run_other_dim",
    "split_cat with cat dim != split dim: a maximal run of consecutive equal pieces anywhere inside a cat"
    " is one narrow of the input, unflattened, its piece index moved to the cat dim and flattened",
    "EqRun", lambda i: f"(Get S {i})", "(!= c d)", "", _UNFLAT,
    f"(View {_MOVED} (vec-set (vec-set sx d k) c (* m (vec-get sx c))))")

STACK_SPLIT_RUN = _run_rule(
    "stack_split_run",
    "split_stack_to_cats: a maximal run of consecutive equal pieces anywhere inside a stack is one narrow"
    " of the input, unflattened, its piece index moved to the stack dim (the stack spelled as a cat of"
    " unsqueezed elements)",
    "UnsqRun", lambda i: f"(Unsqueeze (Get S {i}) c)", "", "", _UNFLAT, _MOVED, stack=True)

UNBIND_CAT_RUN = _run_rule(
    "unbind_cat_run",
    "unbind_cat_to_view with other tensors: a maximal run of consecutive unbind pieces anywhere inside a"
    " cat is one narrow of the input, its unbind dim moved to the cat dim and flattened into it",
    "UnbindRun", lambda i: f"(Squeeze (Get S {i}) d)", "", "(= k 1)", {"p": ("movedim-perm", "(vec-length sx) d c")},
    "(View (Permute (Narrow x d a m) p) (vec-set (vec-remove sx d) c (* m (vec-get (vec-remove sx d) c))))")

UNBIND_STACK_RUN = _run_rule(
    "unbind_stack_run",
    "unbind_stack with other tensors: a maximal run of consecutive unbind pieces anywhere inside a stack is"
    " one narrow of the input, its unbind dim moved to the stack dim",
    "UnbindStackRun", lambda i: f"(Unsqueeze (Squeeze (Get S {i}) d) c)", "", "(= k 1)",
    {"p": ("movedim-perm", "(vec-length sx) d c")}, "(Permute (Narrow x d a m) p)", stack=True)

SPLIT_CAT_HAND = [CAT_SPLIT_RUN, CAT_NARROW_RUN, CAT_REPEAT_RUN, CAT_SPLIT_RUN_OTHER_DIM, STACK_SPLIT_RUN, UNBIND_CAT_RUN,
                  UNBIND_STACK_RUN]
