"""Autocast regions that change nothing are dropped before lowering.

Hugging Face rotary embeddings compute ``cos``/``sin`` inside ``torch.autocast(..., enabled=False)``
to keep them in float32 under mixed precision. Dynamo records the region as a pair of
``_enter_autocast``/``_exit_autocast`` nodes, an effect lowering cannot place, so every Llama-style
graph was skipped. Disabling autocast where it is already off is a no-op: the pair is removed when
its ``enabled`` argument is ``False`` and autocast is off for that device at compile time (Dynamo
guards on the global autocast state, so it is off when the graph runs too). Any other region stays,
and lowering skips the graph as before.
"""
from __future__ import annotations

import torch

from eqsat_torch.inductor import compat


def drop_noop_autocast(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A copy of ``gm`` without its no-op autocast regions; ``gm`` itself when it has none or when
    one of its regions is not a no-op."""
    enter, exit_ = compat.autocast_region_targets()
    enters = [n for n in gm.graph.nodes if n.op == "call_function" and n.target is enter]
    if not enters or not all(_is_noop(n) for n in enters):
        return gm
    exits = [u for n in enters for u in n.users]
    if not all(u.op == "call_function" and u.target is exit_ and not u.users for u in exits):
        return gm
    dropped = set(enters + exits)
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    for n in gm.graph.nodes:
        if n not in dropped:
            env[n] = graph.node_copy(n, env.__getitem__)
    return torch.fx.GraphModule(gm, graph)


def _is_noop(enter: torch.fx.Node) -> bool:
    """``_enter_autocast(device_type, dtype, enabled, cache_enabled)`` with ``enabled=False`` on a
    device whose autocast is off."""
    args = list(enter.args) + [None] * 4
    device, enabled = enter.kwargs.get("device_type", args[0]), enter.kwargs.get("enabled", args[2])
    return enabled is False and isinstance(device, str) and not torch.is_autocast_enabled(device)
