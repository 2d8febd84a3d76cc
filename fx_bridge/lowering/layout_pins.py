"""Layout pins: the nodes whose storage a layout reader (``as_strided``, ``stride``, …) looks at.

The lowerer makes each of them a unique opaque term, so no rule replaces a value whose strides or
offset some op reads, and raising rebuilds it exactly as eager computed it.
"""
from __future__ import annotations

from typing import Any, Sequence

import torch
from torch.fx.node import map_aggregate

from eqsat_torch.inductor import compat


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
