"""The tensor term language as an egglog program: sorts, constructors and analysis tables.

Tensors are one sort; multi-output ops build a ``TTuple`` read back with ``Get``; variadic tensor
arguments are cons lists (``TList``) so rules over "all pieces of a split" join on ordinary tables
instead of indexing into vectors. Static int lists (sizes, shapes, permutations) are ``IVec``.
Pointwise ops are one constructor per arity taking the op key as a string, so a rule about "every
pointwise op" is written once. Every dim is non-negative: lowering normalises them.
"""

SORTS = r"""
(sort IVec (Vec i64))
(datatype*
  (Tensor
    (Input String)
    (Param String)
    (Scalar String)
    (NoneT)
    (Unary String Tensor)
    (Binary String Tensor Tensor)
    (Ternary String Tensor Tensor Tensor)
    (Reduce String Tensor IVec i64)
    (Softmax String Tensor i64)
    (LayerNorm Tensor IVec Tensor Tensor String)
    (Linear Tensor Tensor Tensor)
    (Mm Tensor Tensor)
    (Bmm Tensor Tensor)
    (Matmul Tensor Tensor)
    (Addmm Tensor Tensor Tensor)
    (Baddbmm Tensor Tensor Tensor)
    (Narrow Tensor i64 i64 i64)
    (View Tensor IVec)
    (Permute Tensor IVec)
    (Expand Tensor IVec)
    (Unsqueeze Tensor i64)
    (Squeeze Tensor i64)
    (Contiguous Tensor)
    (Cat TList i64)
    (Stack TList i64)
    (Get TTuple i64))
  (TTuple
    (Split Tensor IVec i64)
    (Opaque String TList))
  (TList
    (TNil)
    (TCons Tensor TList)))
(function shape (Tensor) IVec :merge old)
(function dtype (Tensor) String :merge old)
(relation IsParam (Tensor))
(relation Same (Tensor Tensor))
"""

# Constructors whose e-nodes are tensor programs (the rest of the serialized e-graph is analysis).
TERM_SORTS = ("Tensor", "TTuple", "TList")

# Rulesets: one per rule family plus the shape analysis, which always runs to a fixpoint.
SHAPE_RULESET = "analysis"

# Equalities inserted from Python (horizontal fusion groups) are ``Same`` rows, unioned by one rule in
# one run: a top-level ``union`` per pair rebuilds the whole e-graph each time (4 s for 700 pairs).
SEED_RULESET = "seed"
SEED_RULE = f'(rule ((Same a b)) ((union a b)) :ruleset {SEED_RULESET} :name "same")'
