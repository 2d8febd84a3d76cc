"""The Optimus batch family (torch/_inductor/fx_passes/group_batch_fusion.py) as a table of rules.

A batch fusion is not a rewrite egglog runs: "these n independent, identical ops" is a set, and
matching sets inside egglog enumerates subsets (and a rule that batches would match its own output).
Each row here says which terms a fusion reads (``ctors``, and ``op`` for a pointwise op of its own),
how a term keys its group (``match``), what the group becomes (``build``) and what a group must
satisfy (``distinct``: operands no two members may share; ``admits``: a guard on the whole group).
``eqsat_rules.batch_groups`` reads the rows, finds the independent groups in Python and offers each
member's piece of the batched form as a union; the extractor keeps a fusion only where the cost
model says it pays. Switch one off by name (``disabled=["batch_linear"]``) or the whole family
(``disabled=["batch"]``); the report counts the groups each row offered. The ``Rule``s of
``BATCH_RULES`` carry the names and docs: their egglog commands are empty on purpose.

A pointwise op gets a row of its own from its registry row (``eqsat.ops.Op.batch``); the others are
batched by ``batch_unary`` / ``batch_binary``. ``group_linear`` is Optimus' fbgemm grouped GEMM in
open ops (zero padding to the largest shape, one bmm): more FLOPs and bytes for fewer launches.

Not provided, and why:
- ``batch_dropout``: dropout in training is random and effectful (lowered as an opaque op keyed by
  its node and kept as an extraction root), so a batched copy would run *in addition to* the
  originals, and it would change the random stream; in eval it lowers to the identity.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from eqsat import ops
from eqsat.ops import Ctor
from eqsat.rule import Rule
from eqsat.terms import Term

from eqsat_rules.batch_forms import (
    Build,
    Ctx,
    Match,
    all_operands,
    build_batch_linear,
    build_batch_mm,
    build_binary,
    build_group_linear,
    build_layernorm,
    build_linear_lhs,
    build_unary,
    input_operand,
    match_batch_linear,
    match_batch_mm,
    match_binary,
    match_group_linear,
    match_layernorm,
    match_linear_lhs,
    match_unary,
    shapes_differ,
)

FAMILY = "batch"


@dataclass(frozen=True)
class BatchRule:
    """One batch fusion: its name and doc, the constructors it reads (``op``: only terms of that
    pointwise op, which it takes from the generic row of its constructor), how a term keys its group,
    what the group becomes, the operands members may not share, and a guard on a group."""

    name: str
    doc: str
    ctors: tuple[str, ...]
    match: Match
    build: Build
    op: str | None = None
    distinct: Callable[[Term], set] | None = None
    admits: Callable[[Ctx, list[Term]], bool] | None = None


def _unary_row(name: str, rule: str) -> BatchRule:
    return BatchRule(rule, f"independent {name} of equal attributes, shape and dtype → stack, one {name}, unbind",
                     (Ctor.UNARY,), match_unary, build_unary, op=name)


def _binary_row(name: str, rule: str) -> BatchRule:
    return BatchRule(rule, f"independent {name} of equal attributes and operand shapes/dtypes; a shared operand"
                           f" is broadcast, not stacked → stack, one {name}, unbind",
                     (Ctor.BINARY,), match_binary, build_binary, op=name)


@lru_cache(maxsize=4)
def _rows(version: int) -> tuple[BatchRule, ...]:
    named = [op for op in ops.pointwise() if op.batch]
    return (
        BatchRule("batch_linear", "independent linears with equal input/weight/bias shapes and dtypes"
                  " → stack inputs and weights, one bmm (baddbmm with biases), unbind",
                  (Ctor.LINEAR,), match_batch_linear, build_batch_linear, distinct=input_operand),
        BatchRule("group_linear", "independent linears of different shapes on distinct inputs (same leading dims"
                  " and float dtype) → zero-pad inputs and weights to the largest K and N, stack, one bmm, narrow"
                  " each output to its N, add its bias",
                  (Ctor.LINEAR,), match_group_linear, build_group_linear, distinct=input_operand, admits=shapes_differ),
        BatchRule("batch_mm", "independent mm/addmm of equal shapes (the Aten form of linear after AOTAutograd)"
                  " → stack operands, one bmm/baddbmm, unbind",
                  (Ctor.MM, Ctor.ADDMM), match_batch_mm, build_batch_mm, distinct=all_operands),
        BatchRule("batch_linear_lhs", "linears (or mm/addmm) reading the same input, any output widths"
                  " → concatenate weights (and biases), one linear/mm/addmm, split the output",
                  (Ctor.LINEAR, Ctor.MM, Ctor.ADDMM), match_linear_lhs, build_linear_lhs),
        BatchRule("batch_layernorm", "independent layer_norms with equal shapes, normalized_shape, eps, affine"
                  " → stack, one layer_norm without affine, multiply/add the stacked affine, unbind",
                  (Ctor.LAYER_NORM,), match_layernorm, build_layernorm),
        *(_unary_row(op.name, op.batch) for op in named if op.ctor == Ctor.UNARY),
        # detach is a key with no registry row (``eqsat.ops.FREE_UNARIES``)
        _unary_row("detach", "batch_detach"),
        BatchRule("batch_unary", "any other pointwise unary op, equal attributes, shape and dtype"
                  " → stack, one op, unbind", (Ctor.UNARY,), match_unary, build_unary),
        *(_binary_row(op.name, op.batch) for op in named if op.ctor == Ctor.BINARY),
        BatchRule("batch_binary", "any other pointwise binary op, as batch_add", (Ctor.BINARY,), match_binary,
                  build_binary),
    )


def batch_table() -> tuple[BatchRule, ...]:
    """The table, with a row for each pointwise row's ``batch`` (registered ones too); a term reads its
    rows in this order (the order of its groups)."""
    return _rows(ops.version())


BATCH_TABLE = batch_table()  # the built-in rows
BATCH_RULES = [Rule(r.name, FAMILY, r.doc, ()) for r in BATCH_TABLE]
# Left to Inductor in the Aten graphs of a GPU compile: there the pointwise ops still apart are mostly a
# decomposed layer norm's, which Triton fuses with the norm's reductions; stacked across two norms they
# cost launches the GPU model does not see (H200, BART inference under freezing: the post-grad batches
# were priced one launch fewer, and the program measured one more than Inductor alone, 76 vs 75). The
# Dynamo graph's batches (interformer's per-feature clamps) stay.
POINTWISE_BATCHES = tuple(r.name for r in BATCH_TABLE if set(r.ctors) <= ops.KEYED_POINTWISE)
