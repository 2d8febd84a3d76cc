"""The tensor term language as egglog declarations: sorts, constructors and analysis tables.

Tensors are one sort; multi-output ops build a ``TTuple`` read back with ``Get``; variadic tensor
arguments are cons lists (``TList``) so rules over "all pieces of a split" join on ordinary tables
instead of indexing into vectors. Static int lists (sizes, shapes, permutations) are ``IVec``.
Pointwise ops are one constructor per arity taking the op key as a string, so a rule about "every
pointwise op" is written once. Every dim is non-negative: lowering normalises them.

The constructors and the dtype facts are generated from the op registry (``eqsat.ops``); the tables
are typed declarations (``eqsat.rulelang``) that ``eqsat.to_egglog`` prints.
"""
from __future__ import annotations

from . import ops, to_egglog
from .rulelang import DTYPE, IVEC, STR, TENSOR, Clause, Function, Lit, Relation, Var, union

# Constructors whose e-nodes are tensor programs (the rest of the serialized e-graph is analysis).
TERM_SORTS = (ops.TENSOR, ops.TTUPLE, ops.TLIST)

# A bound name (``Program.let``) is a row of a name function, one per term sort: egglog's global
# ``let`` makes a table per name, and every later command pays for all of them (40k lets: ~1 ms a
# command; a 4,096-way split→cat took 13 s to load); a constructor unioned with its term leaves
# every later rule iteration slower the more unions there were (4,000 names: 5× per iteration).
NAME_CTORS = {"Name": ops.TENSOR, "NameTuple": ops.TTUPLE, "NameList": ops.TLIST}

# Loading in bulk (``eqsat.bulk``): a term of each sort numbered by an i64, unioned with its definition
# as the definition's row loads; the rows are deleted once the load is done (nothing reads them).
ID_CTORS = {"LoadId": ops.TENSOR, "LoadIdTuple": ops.TTUPLE, "LoadIdList": ops.TLIST}

# Rulesets: one per rule family plus the analysis (shapes, dtypes, derived functions, list
# relations), which always runs to a fixpoint. Rules that add analysis commands name it from here.
ANALYSIS = "analysis"

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")

# The analysis tables: shapes and dtypes (seeded by lowering, derived for new terms), parameters,
# the pairs horizontal fusion inserts, and the dtype facts of op keys.
SHAPE = Function("shape", (TENSOR,), IVEC)
DTYPE_OF = Function("dtype", (TENSOR,), DTYPE)
IsParam = Relation("IsParam", (TENSOR,))
Same = Relation("Same", (TENSOR, TENSOR))
KeepsDtype = Relation("KeepsDtype", (STR,))
KeepsIntDtype = Relation("KeepsIntDtype", (STR,))
BoolResult = Relation("BoolResult", (STR,))
FloatDtype = Relation("FloatDtype", (STR,))
TABLES = (SHAPE, DTYPE_OF, IsParam, Same, KeepsDtype, KeepsIntDtype, BoolResult, FloatDtype)

# Equalities inserted from Python (horizontal fusion groups) are ``Same`` rows, unioned by one rule in
# one run: a top-level ``union`` per pair rebuilds the whole e-graph each time (4 s for 700 pairs).
SEED_RULESET = "seed"
_a, _b = Var("a", TENSOR), Var("b", TENSOR)
SEED_RULE = Clause((Same(_a, _b),), (union(_a, _b),))


def sorts() -> str:
    """The egglog declarations of the term language: constructors, name functions, analysis tables."""
    names = [Function(f, (STR,), sort) for f, sort in NAME_CTORS.items()]
    ctors = {**ops.constructors(), **{c: ((ops.INT,), sort) for c, sort in ID_CTORS.items()}}
    return "\n".join([to_egglog.datatype(ctors, TERM_SORTS)]
                     + [to_egglog.declaration(d) for d in names + list(TABLES)])


def declared_names() -> set[str]:
    """Names the schema declares in egglog: constructors, name functions and tables."""
    return set(ops.constructors()) | set(NAME_CTORS) | set(ID_CTORS) | {d.name for d in TABLES}


def dtype_facts() -> list:
    """The dtype facts the analysis rules read: which op keys keep / set which dtypes (rows to add)."""
    table = {"KeepsDtype": KeepsDtype, "KeepsIntDtype": KeepsIntDtype, "BoolResult": BoolResult}
    facts = [table[rel](Lit(k, STR)) for rel, keys in ops.dtype_facts().items() for k in keys]
    return facts + [FloatDtype(Lit(d, STR)) for d in FLOAT_DTYPES]
