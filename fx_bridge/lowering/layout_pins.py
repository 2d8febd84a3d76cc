"""Layout pins: the nodes whose storage a layout reader (``as_strided``, ``stride``, …) looks at,
and the user's outputs that are views of a value the graph computes, with that value.

The lowerer makes each of them a unique opaque term, so no rule replaces a value whose strides or
offset some op or the user reads, and raising rebuilds it exactly as eager computed it.
"""
from __future__ import annotations

import operator
from typing import Any, Sequence

import torch
from torch.fx.node import map_aggregate

from eqsat_torch.inductor import compat
from eqsat_torch.lowering.symbolic import output_leaves
from eqsat_torch.safety.aliasing import inductor_view, is_dense


# Ops whose result depends on their input's memory layout (storage, offset, strides), not only on
# its values. Everything their input aliases is pinned: lowered as a unique opaque term, so no rule
# can replace it and it is raised exactly as eager computed it.
LAYOUT_READERS = {"as_strided", "as_strided_copy", "as_strided_scatter", "stride", "storage_offset",
                  "data_ptr", "untyped_storage", "is_contiguous", "set_"}


def layout_pinned(nodes: Sequence[torch.fx.Node]) -> set[torch.fx.Node]:
    """Every node whose value shares storage with the input of a layout reader (``as_strided``, …),
    walking back through views, multi-output views (split) and their bases up to the node that
    allocated the storage (or a graph input, whose layout the caller fixes)."""
    pinned: set[torch.fx.Node] = set()
    for reader in nodes:
        if reader.op not in ("call_function", "call_method") or compat.op_basename(reader.target) not in LAYOUT_READERS:
            continue
        for src in reader.all_input_nodes:
            key = compat.storage_key(compat.node_value(src))
            stack = [src] if key is not None else []
            while stack:
                m = stack.pop()
                if m in pinned or m.op not in ("call_function", "call_method"):
                    continue
                pinned.add(m)
                stack.extend(a for a in m.all_input_nodes if _shares(a, key))
    return pinned


def _shares(n: torch.fx.Node, key: Any) -> bool:
    leaves: list = []
    map_aggregate(compat.node_value(n), leaves.append)
    return any(compat.storage_key(v) == key for v in leaves if isinstance(v, torch.Tensor))


def view_outputs_pinned(graph: torch.fx.Graph, user_outputs: int | None = None) -> set[torch.fx.Node]:
    """The user's outputs (the first ``user_outputs`` leaves; None: all) that are views of a value
    the graph computes in a layout no dense tensor has (a column of a matrix, an expand), every view
    under them and that value. The strides of such a view follow the extent of what it views, which
    a rewrite may shrink: ``relu(x)[:, 0]`` computed from less, as ``relu(x[:, 0:1]).squeeze(1)``,
    has stride 1 where eager's is the row length, and no copy restores it (``match_aliasing`` copies
    an output into eager's layout where that is dense; Inductor gives one it computes as no view
    eager's strides). Pinned, no such rewrite is proposed; before, the equivalence check refused the
    whole graph's program for it (a model returning ``hidden[:, 0]`` lost every rewrite)."""
    leaves = output_leaves(graph)
    pinned: set[torch.fx.Node] = set()
    for n in leaves if user_outputs is None else leaves[:user_outputs]:
        value = compat.node_value(n) if isinstance(n, torch.fx.Node) else None
        if not isinstance(value, torch.Tensor) or is_dense((tuple(value.shape), value.stride())):
            continue
        views = []
        while _computed(n) and (src := _viewed(n)) is not None:
            views.append(n)
            n = src
        if views and _computed(n):  # a view of an input: aliasing keeps it (``match_aliasing``)
            # a piece of a pinned split or unbind is read off it as it is (no opaque piece of a tuple)
            pinned.update(m for m in views + [n] if m.target is not operator.getitem)
    return pinned


def _computed(n: Any) -> bool:
    return isinstance(n, torch.fx.Node) and n.op in ("call_function", "call_method")


def _viewed(n: torch.fx.Node) -> torch.fx.Node | None:
    """The node ``n`` is a view of, or None: by its Aten schema (a post-grad graph's traced values
    are no views of each other), else by the storage its traced value shares with an input's."""
    if inductor_view(n):  # a split's piece views the split, which views its input
        return n.args[0] if isinstance(n.args[0], torch.fx.Node) else None
    leaves: list = []
    map_aggregate(compat.node_value(n), leaves.append)  # a split's pieces share their input's storage
    key = next((compat.storage_key(v) for v in leaves if isinstance(v, torch.Tensor)), None)
    return next((a for a in n.all_input_nodes if _shares(a, key)), None) if key is not None else None
