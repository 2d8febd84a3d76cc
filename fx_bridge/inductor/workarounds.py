"""Inductor config that keeps a graph out of a known Inductor miscompile (issue 28).

Each entry is a pattern of the graph we hand to Inductor, the config that avoids the miscompile, and
the standalone reproducer in ``docs/upstream/`` that shows Inductor alone getting it wrong. The
config applies only to graphs holding the pattern, so other graphs keep Inductor's defaults.
"""
from __future__ import annotations

from typing import Callable

import torch

from eqsat import ops

from eqsat_torch.inductor import compat

_JOINS = {torch.stack, torch.cat, torch.concat, torch.ops.aten.stack.default, torch.ops.aten.cat.default}


def _joins_a_shared_operand(gm: torch.fx.GraphModule) -> bool:
    """A stack/cat of a value that something else reads too (BART's batched linears stack the
    residual stream). Inductor writes such an operand straight into its slot of the joined buffer;
    its in-place buffer reuse then lets a later kernel take over that slot and, once the joined
    buffer's last reader is done, hands the whole buffer to another kernel while the slot is live
    (docs/upstream/inductor_stack_slot_reuse.py: max error 111, torch 2.13 CPU, no freezing)."""
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in _JOINS and node.args:
            operands = node.args[0] if isinstance(node.args[0], (list, tuple)) else ()
            if any(isinstance(x, torch.fx.Node) and len(x.users) > 1 for x in operands):
                return True
    return False


_LOW_PRECISION = (torch.float16, torch.bfloat16)


def _ties_low_precision_floats(gm: torch.fx.GraphModule) -> bool:
    """A max/min or an equality over float16/bfloat16 values (soak seeds 4000053 and 4001911, H200,
    torch 2.11). Inductor's Triton kernels compute a fused low-precision chain in float32 and round only
    what they store, so the amax backward's ``eq(amax(s), s)`` compares the rounded maximum with the
    unrounded ``s``: no element ties, the tie count is 0, and every gradient through the max is NaN
    (``docs/upstream/inductor_lowp_tie_mask.py``; pytorch#195214). Any materialisation of ``s`` (a cat
    of its splits, which eqsat removes) hid it. ``emulate_precision_casts`` rounds every eager op's
    output as eager does, so both sides of the comparison are the same float16 values. The ops that
    tie are their rows' ``exact_tie`` (``eqsat.ops.exact_ties``)."""
    ties = ops.exact_ties()
    for node in gm.graph.nodes:
        if node.op in ("call_function", "call_method") and compat.op_basename(node.target) in ties:
            values = [compat.node_value(a) for a in node.args if isinstance(a, torch.fx.Node)]
            if any(isinstance(v, torch.Tensor) and v.dtype in _LOW_PRECISION for v in values):
                return True
    return False


# (pattern, Inductor config avoiding it, reproducer)
WORKAROUNDS: tuple[tuple[Callable[[torch.fx.GraphModule], bool], dict, str], ...] = (
    (_joins_a_shared_operand, {"inplace_buffers": False}, "docs/upstream/inductor_stack_slot_reuse.py"),
    (_ties_low_precision_floats, {"emulate_precision_casts": True}, "docs/upstream/inductor_lowp_tie_mask.py"),
)


def config_for(gm: torch.fx.GraphModule, config: dict) -> dict:
    """``config`` (the user's Inductor options) plus every workaround ``gm`` needs; a setting the
    user gave explicitly is theirs to keep."""
    extra: dict = {}
    for applies, settings, _ in WORKAROUNDS:
        if applies(gm):
            extra.update(settings)
    return {**extra, **config}
