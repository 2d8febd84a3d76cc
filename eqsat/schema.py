"""The tensor term language as an egglog program: sorts, constructors and analysis tables.

Tensors are one sort; multi-output ops build a ``TTuple`` read back with ``Get``; variadic tensor
arguments are cons lists (``TList``) so rules over "all pieces of a split" join on ordinary tables
instead of indexing into vectors. Static int lists (sizes, shapes, permutations) are ``IVec``.
Pointwise ops are one constructor per arity taking the op key as a string, so a rule about "every
pointwise op" is written once. Every dim is non-negative: lowering normalises them.

The constructors and the dtype facts are generated from the op registry (``eqsat.ops``).
"""
from __future__ import annotations

import json

from . import ops

# Constructors whose e-nodes are tensor programs (the rest of the serialized e-graph is analysis).
TERM_SORTS = (ops.TENSOR, ops.TTUPLE, ops.TLIST)

# A bound name (``Program.let``) is a row of a name function, one per term sort: egglog's global
# ``let`` makes a table per name, and every later command pays for all of them (40k lets: ~1 ms a
# command; a 4,096-way split→cat took 13 s to load); a constructor unioned with its term leaves
# every later rule iteration slower the more unions there were (4,000 names: 5× per iteration).
NAME_CTORS = {"Name": ops.TENSOR, "NameTuple": ops.TTUPLE, "NameList": ops.TLIST}

# Rulesets: one per rule family plus the analysis (shapes, dtypes, derived functions, list
# relations), which always runs to a fixpoint. Rules that add analysis commands name it from here.
ANALYSIS = "analysis"

# Equalities inserted from Python (horizontal fusion groups) are ``Same`` rows, unioned by one rule in
# one run: a top-level ``union`` per pair rebuilds the whole e-graph each time (4 s for 700 pairs).
SEED_RULESET = "seed"
SEED_RULE = f'(rule ((Same a b)) ((union a b)) :ruleset {SEED_RULESET} :name "same")'

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")

ANALYSIS_TABLES = """
(function shape (Tensor) IVec :merge old)
(function dtype (Tensor) String :merge old)
(relation IsParam (Tensor))
(relation Same (Tensor Tensor))
(relation KeepsDtype (String))
(relation KeepsIntDtype (String))
(relation BoolResult (String))
(relation FloatDtype (String))
"""


def sorts() -> str:
    """The ``datatype*`` declaration of every constructor in the registry, then the analysis tables."""
    by_sort: dict[str, list[str]] = {s: [] for s in TERM_SORTS}
    for ctor, (args, sort) in ops.constructors().items():
        by_sort[sort].append(f"({ctor}{''.join(' ' + a for a in args)})")
    body = "\n".join(f"  ({sort}\n" + "\n".join(f"    {c}" for c in cs) + ")" for sort, cs in by_sort.items())
    names = "\n".join(f"(function {f} (String) {sort} :merge old)" for f, sort in NAME_CTORS.items())
    return f"(sort IVec (Vec i64))\n(datatype*\n{body})\n{names}\n{ANALYSIS_TABLES}"


def dtype_facts() -> list[str]:
    """The dtype facts the analysis rules read: which op keys keep / set which dtypes."""
    facts = [f"({rel} {json.dumps(k)})" for rel, keys in ops.dtype_facts().items() for k in keys]
    return facts + [f"(FloatDtype {json.dumps(d)})" for d in FLOAT_DTYPES]
