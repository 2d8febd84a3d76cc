"""Shape and dtype analysis for e-nodes that rewrites create (original nodes are seeded by lowering).

Each rule derives the shape of a constructor from its inputs' shapes; ``shape`` merges by keeping the
first value, so a seeded fact is never overwritten. A constructor without a rule here gets no shape
when a rewrite creates it, and the cost model then never picks it.
"""
from eqsat.rule import Rule

_S = "analysis"


def _r(name: str, doc: str, *cmds: str, decls: tuple[str, ...] = ()) -> Rule:
    return Rule(name, _S, doc, tuple(cmds), decls)


_PERMUTE = [
    "(rule ((= e (Permute x p)) (= s (shape x)) (= {n} (vec-length p))) ((set (shape e) (vec-of {gets}))))".format(
        n=n, gets=" ".join(f"(vec-get s (vec-get p {i}))" for i in range(n)))
    for n in range(1, 7)
]

SHAPE_RULES: list[Rule] = [
    _r("shape_unary", "pointwise unary keeps the shape",
       "(rule ((= e (Unary f x)) (= s (shape x))) ((set (shape e) s)))"),
    _r("shape_binary", "equal shapes, or a rank-0 operand broadcast against the other",
       "(rule ((= e (Binary f x y)) (= s (shape x)) (= s (shape y))) ((set (shape e) s)))",
       "(rule ((= e (Binary f x y)) (= s (shape x)) (= t (shape y)) (= 0 (vec-length t))) ((set (shape e) s)))",
       "(rule ((= e (Binary f x y)) (= s (shape x)) (= t (shape y)) (= 0 (vec-length s))) ((set (shape e) t)))"),
    _r("shape_ternary", "equal shapes",
       "(rule ((= e (Ternary f x y z)) (= s (shape x)) (= s (shape y)) (= s (shape z))) ((set (shape e) s)))"),
    _r("shape_narrow", "narrow sets the extent of one dim",
       "(rule ((= e (Narrow x d st l)) (= s (shape x))) ((set (shape e) (vec-set s d l))))"),
    _r("shape_split_piece", "piece i of a split has extent sizes[i] along the split dim",
       "(rule ((= e (Get (Split x sizes d) i)) (= s (shape x))) ((set (shape e) (vec-set s d (vec-get sizes i)))))"),
    _r("shape_view", "view/expand carry their result shape",
       "(rule ((= e (View x s))) ((set (shape e) s)))",
       "(rule ((= e (Expand x s))) ((set (shape e) s)))"),
    _r("shape_permute", "permute reorders the dims (ranks 1–6)", *_PERMUTE),
    _r("shape_squeeze", "squeeze removes a size-1 dim",
       "(rule ((= e (Squeeze x d)) (= s (shape x)) (= 1 (vec-get s d))) ((set (shape e) (vec-remove s d))))"),
    _r("shape_contiguous", "contiguous keeps the shape",
       "(rule ((= e (Contiguous x)) (= s (shape x))) ((set (shape e) s)))"),
    _r("shape_linear", "linear replaces the last dim with the weight's rows",
       "(rule ((= e (Linear x w b)) (= s (shape x)) (= t (shape w)))"
       " ((set (shape e) (vec-set s (- (vec-length s) 1) (vec-get t 0)))))"),
    _r("shape_cat", "cat sums the extents of its pieces along the dim",
       "(rule ((= e (Cat l d))) ((CatExtentDemand l d)))",
       "(rule ((CatExtentDemand l d) (= l (TCons x rest))) ((CatExtentDemand rest d)))",
       "(rule ((CatExtentDemand l d) (= l (TNil))) ((set (cat-extent l d) 0)))",
       "(rule ((CatExtentDemand l d) (= l (TCons x rest)) (= s (shape x)) (= n (cat-extent rest d)))"
       " ((set (cat-extent l d) (+ n (vec-get s d)))))",
       "(rule ((= e (Cat l d)) (= l (TCons x rest)) (= s (shape x)) (= n (cat-extent l d)))"
       " ((set (shape e) (vec-set s d n))))",
       decls=("(relation CatExtentDemand (TList i64))", "(function cat-extent (TList i64) i64 :merge old)")),
    _r("dtype_views", "views and copies keep the dtype",
       *[f"(rule ((= e ({c})) (= t (dtype x))) ((set (dtype e) t)))" for c in (
           "Narrow x a b c", "View x s", "Permute x s", "Expand x s", "Unsqueeze x d", "Squeeze x d",
           "Contiguous x", "Get (Split x s d) i")],
       "(rule ((= e (Cat (TCons x r) d)) (= t (dtype x))) ((set (dtype e) t)))",
       "(rule ((= e (Stack (TCons x r) d)) (= t (dtype x))) ((set (dtype e) t)))"),
]
