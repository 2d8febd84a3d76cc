"""Shape and dtype analysis for e-nodes that rewrites create (original nodes are seeded by lowering).

Each rule derives the shape of a constructor from its inputs' shapes; ``shape`` merges by keeping the
first value, so a seeded fact is never overwritten. A constructor without a rule here gets no shape
when a rewrite creates it, and the cost model then never picks it. Rank-dependent rules (permute,
broadcasting) are generated per rank from small tables.
"""
from eqsat.rule import Rule
from eqsat.schema import ANALYSIS

from .derived import DERIVED

_S = ANALYSIS
MAX_RANK = 6


def _r(name: str, doc: str, *cmds: str, decls: tuple[str, ...] = ()) -> Rule:
    return Rule(name, _S, doc, tuple(cmds), decls)


def _permute(n: int) -> str:
    gets = " ".join(f"(vec-get s (vec-get p {i}))" for i in range(n))
    return f"(rule ((= e (Permute x p)) (= s (shape x)) (= {n} (vec-length p))) ((set (shape e) (vec-of {gets}))))"


def _pad(rank: int, m: int) -> str:
    """Zero padding of the last ``m`` dims of a rank-``rank`` shape (pads last dim first, as torch)."""
    def entry(k: int) -> str:
        j = rank - 1 - k
        return f"(+ (vec-get s {k}) (+ (vec-get p {2 * j}) (vec-get p {2 * j + 1})))" if j < m else f"(vec-get s {k})"
    return (f"(rule ((= e (Pad x p)) (= s (shape x)) (= {rank} (vec-length s)) (= {2 * m} (vec-length p)))"
            f" ((set (shape e) (vec-of {' '.join(entry(k) for k in range(rank))}))))")


def _aligned(var: str, rank: int, out_rank: int, k: int) -> str:
    """Entry k of a rank-``out_rank`` broadcast, read from a rank-``rank`` shape (missing dims are 1)."""
    j = k - (out_rank - rank)
    return f"(vec-get {var} {j})" if j >= 0 else "1"


def _broadcast(ranks: tuple[int, ...], ctor: str) -> str:
    """Shape of a pointwise op whose operands have these ranks: NumPy broadcasting, entry by entry."""
    names = "xyz"[: len(ranks)]
    out = max(ranks)
    entries = []
    for k in range(out):
        vals = [_aligned(f"s{v}", r, out, k) for v, r in zip(names, ranks)]
        expr = vals[0]
        for v in vals[1:]:
            expr = f"(max {expr} {v})"
        entries.append(expr)
    facts = " ".join(f"(= s{v} (shape {v})) (= {r} (vec-length s{v}))" for v, r in zip(names, ranks))
    args = " ".join(names)
    return f"(rule ((= e ({ctor} f {args})) {facts}) ((set (shape e) (vec-of {' '.join(entries)}))))"


_RANKS = range(0, MAX_RANK + 1)
_BINARY = [_broadcast((a, b), "Binary") for a in _RANKS for b in _RANKS if max(a, b) > 0] + [
    "(rule ((= e (Binary f x y)) (= 0 (vec-length (shape x))) (= 0 (vec-length (shape y))))"
    " ((set (shape e) (vec-pop (vec-of 0)))))"]
_TERNARY = [_broadcast((r, r, r), "Ternary") for r in range(1, MAX_RANK + 1)] + [
    "(rule ((= e (Ternary f x y z)) (= s (shape x)) (= s (shape y)) (= s (shape z))) ((set (shape e) s)))"]

# Reduce over sorted dims: keepdim sets each to 1; otherwise they are removed, last first.
_REDUCE = (
    "(function reduce-shape (IVec IVec i64 i64) IVec :merge old)",  # (shape, dims, keepdim, k done)
    f"(rule ((= e (Reduce f x dims keep)) (= s (shape x))) ((set (reduce-shape s dims keep 0) s)) :ruleset {ANALYSIS})",
    "(rule ((= r (reduce-shape s dims 1 k)) (< k (vec-length dims)))"
    f" ((set (reduce-shape s dims 1 (+ k 1)) (vec-set r (vec-get dims k) 1))) :ruleset {ANALYSIS})",
    "(rule ((= r (reduce-shape s dims 0 k)) (< k (vec-length dims)))"
    f" ((set (reduce-shape s dims 0 (+ k 1)) (vec-remove r (vec-get dims (- (- (vec-length dims) 1) k))))) :ruleset {ANALYSIS})",
)
_LIST_LEN = (
    "(function list-len (TList) i64 :merge old)",
    f"(rule ((= l (TNil))) ((set (list-len l) 0)) :ruleset {ANALYSIS})",
    f"(rule ((= l (TCons h r)) (= n (list-len r))) ((set (list-len l) (+ n 1))) :ruleset {ANALYSIS})",
)

_INSERT = DERIVED["insert"].decls

SHAPE_RULES: list[Rule] = [
    _r("shape_unary", "pointwise unary keeps the shape",
       "(rule ((= e (Unary f x)) (= s (shape x))) ((set (shape e) s)))"),
    _r("shape_binary", "NumPy broadcasting of the two operands (ranks 0–6)", *_BINARY),
    _r("shape_ternary", "broadcasting of three operands of one rank, or equal shapes", *_TERNARY),
    _r("shape_narrow", "narrow sets the extent of one dim",
       "(rule ((= e (Narrow x d st l)) (= s (shape x))) ((set (shape e) (vec-set s d l))))"),
    _r("shape_split_piece", "piece i of a split has extent sizes[i] along the split dim",
       "(rule ((= e (Get (Split x sizes d) i)) (= s (shape x))) ((set (shape e) (vec-set s d (vec-get sizes i)))))"),
    _r("shape_view", "view/expand carry their result shape",
       "(rule ((= e (View x s))) ((set (shape e) s)))",
       "(rule ((= e (Expand x s))) ((set (shape e) s)))"),
    _r("shape_permute", "permute reorders the dims (ranks 1–6)", *[_permute(n) for n in range(1, MAX_RANK + 1)]),
    _r("shape_squeeze", "squeeze removes a size-1 dim",
       "(rule ((= e (Squeeze x d)) (= s (shape x)) (= 1 (vec-get s d))) ((set (shape e) (vec-remove s d))))"),
    _r("shape_unsqueeze", "unsqueeze inserts a 1 at the dim",
       "(rule ((= e (Unsqueeze x d)) (= s (shape x))) ((insert-demand s d 1)))",
       "(rule ((= e (Unsqueeze x d)) (= s (shape x)) (= t (insert s d 1))) ((set (shape e) t)))",
       decls=_INSERT),
    _r("shape_stack", "stack inserts the number of tensors at the dim",
       "(rule ((= e (Stack l d)) (= l (TCons x r)) (= s (shape x)) (= n (list-len l))) ((insert-demand s d n)))",
       "(rule ((= e (Stack l d)) (= l (TCons x r)) (= s (shape x)) (= n (list-len l)) (= t (insert s d n)))"
       " ((set (shape e) t)))",
       decls=_INSERT + _LIST_LEN),
    _r("shape_pad", "zero padding adds its pads to the padded dims (ranks 1–6)",
       *[_pad(r, m) for r in range(1, MAX_RANK + 1) for m in range(1, r + 1)]),
    _r("shape_contiguous", "contiguous keeps the shape",
       "(rule ((= e (Contiguous x)) (= s (shape x))) ((set (shape e) s)))"),
    _r("shape_reduce", "reduce sets its (sorted) dims to 1, or removes them",
       "(rule ((= e (Reduce f x dims keep)) (= s (shape x)) (= t (reduce-shape s dims keep (vec-length dims))))"
       " ((set (shape e) t)))",
       decls=_REDUCE),
    _r("shape_norms", "softmax and layer_norm keep the shape",
       "(rule ((= e (Softmax f x d)) (= s (shape x))) ((set (shape e) s)))",
       "(rule ((= e (LayerNorm x n w b eps)) (= s (shape x))) ((set (shape e) s)))"),
    _r("shape_linear", "linear replaces the last dim with the weight's rows",
       "(rule ((= e (Linear x w b)) (= s (shape x)) (= t (shape w)))"
       " ((set (shape e) (vec-set s (- (vec-length s) 1) (vec-get t 0)))))"),
    _r("shape_matmuls", "mm/addmm: (n, k)·(k, m); bmm/baddbmm: batched; matmul: ND·2D or equal-rank batched",
       "(rule ((= e (Mm a b)) (= s (shape a)) (= t (shape b))) ((set (shape e) (vec-of (vec-get s 0) (vec-get t 1)))))",
       "(rule ((= e (Addmm c a b)) (= s (shape a)) (= t (shape b))) ((set (shape e) (vec-of (vec-get s 0) (vec-get t 1)))))",
       "(rule ((= e (Bmm a b)) (= s (shape a)) (= t (shape b)))"
       " ((set (shape e) (vec-of (vec-get s 0) (vec-get s 1) (vec-get t 2)))))",
       "(rule ((= e (Baddbmm c a b)) (= s (shape a)) (= t (shape b)))"
       " ((set (shape e) (vec-of (vec-get s 0) (vec-get s 1) (vec-get t 2)))))",
       "(rule ((= e (Matmul a b)) (= s (shape a)) (= t (shape b)) (>= (vec-length s) 2) (= 2 (vec-length t)))"
       " ((set (shape e) (vec-set s (- (vec-length s) 1) (vec-get t 1)))))",
       "(rule ((= e (Matmul a b)) (= s (shape a)) (= t (shape b)) (> (vec-length s) 2) (= (vec-length s) (vec-length t)))"
       " ((set (shape e) (vec-set s (- (vec-length s) 1) (vec-get t (- (vec-length t) 1))))))"),
    _r("shape_cat", "cat sums the extents of its pieces along the dim",
       "(rule ((= e (Cat l d))) ((CatExtentDemand l d)))",
       "(rule ((CatExtentDemand l d) (= l (TCons x rest))) ((CatExtentDemand rest d)))",
       "(rule ((CatExtentDemand l d) (= l (TNil))) ((set (cat-extent l d) 0)))",
       "(rule ((CatExtentDemand l d) (= l (TCons x rest)) (= s (shape x)) (= n (cat-extent rest d)))"
       " ((set (cat-extent l d) (+ n (vec-get s d)))))",
       "(rule ((= e (Cat l d)) (= l (TCons x rest)) (= s (shape x)) (= n (cat-extent l d)))"
       " ((set (shape e) (vec-set s d n))))",
       decls=("(relation CatExtentDemand (TList i64))", "(function cat-extent (TList i64) i64 :merge old)")),
]

# -- dtypes ------------------------------------------------------------------------------------------
# Which op keys keep or set which dtype (``KeepsDtype``, ``KeepsIntDtype``, ``BoolResult``) and which
# dtypes are floating (``FloatDtype``) are facts the session seeds from the op registry (eqsat.ops).
SHAPE_RULES += [
    _r("dtype_views", "views and copies keep the dtype",
       *[f"(rule ((= e ({c})) (= t (dtype x))) ((set (dtype e) t)))" for c in (
           "Narrow x a b c", "View x s", "Permute x s", "Expand x s", "Unsqueeze x d", "Squeeze x d",
           "Contiguous x", "Pad x p", "Get (Split x s d) i")],
       "(rule ((= e (Cat (TCons x r) d)) (= t (dtype x))) ((set (dtype e) t)))",
       "(rule ((= e (Stack (TCons x r) d)) (= t (dtype x))) ((set (dtype e) t)))"),
    _r("dtype_pointwise", "dtype-preserving ops keep a floating dtype; integer dtypes only through ops that"
       " cannot promote (relu, add, …); a Python int keeps a non-bool dtype, a float a floating one;"
       " comparisons give bool",
       *[rule.format(keep=keep, guard=guard) for keep, guard in (("KeepsDtype", "(FloatDtype t)"),
                                                                   ("KeepsIntDtype", '(!= t "bool")'))
         for rule in (
             "(rule ((= e (Unary f x)) ({keep} f) (= t (dtype x)) {guard}) ((set (dtype e) t)))",
             "(rule ((= e (Binary f x y)) ({keep} f) (= t (dtype x)) (= t (dtype y)) {guard}) ((set (dtype e) t)))",
             '(rule ((= e (Binary f x y)) ({keep} f) (= t (dtype x)) (= "scalar" (dtype y)) {guard}) ((set (dtype e) t)))',
             '(rule ((= e (Binary f x y)) ({keep} f) (= t (dtype y)) (= "scalar" (dtype x)) {guard}) ((set (dtype e) t)))',
             "(rule ((= e (Ternary f c x y)) ({keep} f) (= t (dtype x)) (= t (dtype y)) {guard}) ((set (dtype e) t)))")],
       '(rule ((= e (Binary f x y)) (KeepsDtype f) (= t (dtype x)) (= "scalar_float" (dtype y)) (FloatDtype t)) ((set (dtype e) t)))',
       '(rule ((= e (Binary f x y)) (KeepsDtype f) (= t (dtype y)) (= "scalar_float" (dtype x)) (FloatDtype t)) ((set (dtype e) t)))',
       '(rule ((= e (Unary f x)) (BoolResult f)) ((set (dtype e) "bool")))',
       '(rule ((= e (Binary f x y)) (BoolResult f)) ((set (dtype e) "bool")))'),
    _r("dtype_compute", "matmuls, norms and float reductions keep their (first) input's dtype",
       *[f"(rule ((= e ({c})) (= t (dtype x))) ((set (dtype e) t)))" for c in (
           "Linear x w b", "Mm x b", "Bmm x b", "Matmul x b", "Addmm c x b", "Baddbmm c x b",
           "Softmax f x d", "LayerNorm x n w b eps")],
       "(rule ((= e (Reduce f x dims keep)) (= t (dtype x)) (FloatDtype t)) ((set (dtype e) t)))"),
]
