"""Grad-dead analysis: the nodes whose value requires grad yet passes none to the graph's outputs.

Lowering records them (``Lowered.grad_dead``) so a rewrite may detach them; the scale stage marks
a window's nodes from the whole graph's liveness (``GRAD_DEAD``).
"""
from __future__ import annotations

import torch

from eqsat_torch.inductor import compat
from eqsat_torch.lowering.node_values import _requires_grad


# Node meta of a window's node (``eqsat_torch.scale.regions``) whose value passes no gradient to the outputs of
# the whole graph: in the window it may be an output (read by a later window's ``no_grad`` region),
# which says nothing of its gradient.
GRAD_DEAD = "eqsat_grad_dead"


def grad_live(nodes: list[torch.fx.Node], carrying: set[torch.fx.Node]) -> set[torch.fx.Node]:
    """The nodes of ``carrying`` with a path to an output through ``carrying`` alone; an output edge of
    a node marked ``GRAD_DEAD`` is no such path."""
    live: set[torch.fx.Node] = set()
    for n in reversed(nodes):
        if n in carrying and any(u in live or (u.op == "output" and not n.meta.get(GRAD_DEAD)) for u in n.users):
            live.add(n)
    return live


def grad_dead_nodes(gm: torch.fx.GraphModule) -> set[torch.fx.Node]:
    """Nodes whose value requires grad yet passes none to the graph's outputs (as ``Lowered.grad_dead``,
    for a whole graph before it is cut into windows)."""
    if not torch.is_grad_enabled():
        return set()
    nodes = list(gm.graph.nodes)
    carrying = {n for n in nodes if n.op != "output" and _requires_grad(compat.node_value(n))}
    return carrying - grad_live(nodes, carrying)
