"""Outputs Inductor's ``remove_noop_ops`` would merge into one tensor.

Inductor runs ``remove_noop_ops`` right after the post-grad pass. It reads the outputs' storages once,
before it drops anything, so when an output that is a no-op of an intermediate (a full slice, a
clone) is dropped, the intermediate becomes an output it does not know, and a later clone of that
intermediate, itself an output, is dropped too: two outputs come back as one tensor object. Inductor
alone does it (torch 2.13: ``y = x * 2; return y.clone(), y.clone()`` returns one tensor twice), and
a rewrite can make the shape that triggers it (soak seed 3010674: ``stack(unbind(t))`` found equal to
``t``, kept apart by a clone, while ``t``'s full ``slice_scatter`` is dropped). The pass runs that
removal on copies of the graph before and after it and refuses a program that comes out with output
pairs merged which the input's does not merge.
"""
from __future__ import annotations

import itertools

import torch

from . import torch_compat
from .lower import Unsupported


def refuse_new_merges(before: torch.fx.Graph, after: torch.fx.Graph) -> None:
    """Raise :class:`Unsupported` where ``remove_noop_ops`` merges outputs of ``after`` it keeps
    apart in ``before``."""
    new = _merged_after_removal(after) - _merged_after_removal(before)
    if new:
        i, j = min(new)
        raise Unsupported(f"Inductor's remove_noop_ops would return outputs {i} and {j} as one tensor")


def _merged_after_removal(graph: torch.fx.Graph) -> set[tuple[int, int]]:
    """Output pairs that are one node, or one storage, once ``remove_noop_ops`` ran on a copy."""
    copy = torch.fx.Graph()
    copy.output(copy.graph_copy(graph, {}))
    owner = graph.owning_module if graph.owning_module is not None else torch.nn.Module()
    gm = torch.fx.GraphModule(owner, copy)
    torch_compat.inductor_remove_noop_ops(gm.graph)
    out = next(n for n in reversed(gm.graph.nodes) if n.op == "output").args[0]
    leaves = list(out) if isinstance(out, (tuple, list)) else [out]
    keys = [(n, torch_compat.storage_key(n.meta.get("val"))) if isinstance(n, torch.fx.Node) else None
            for n in leaves]
    return {(i, j) for (i, a), (j, b) in itertools.combinations(enumerate(keys), 2)
            if a is not None and b is not None and (a[0] is b[0] or a[1] is not None and a[1] == b[1])}

