"""Anytime at scale: a graph too large for one e-graph is optimized window by window.

Issue 30: a 15k-node Dynamo graph either fit its budget whole or was handed back unchanged. Here the
graph is cut into windows of its topological order (``REGION_NODES`` nodes each, a work count, so
the cut is the same on every machine), each window becomes a submodule (``split_module``), each is
optimized on its own under the one deadline of the compile, and the submodules are inlined back. A
window the clock stops keeps its input; every window finished before keeps its result, so a huge
graph improves region by region instead of all or nothing.
"""
from __future__ import annotations

import operator
from typing import Any, Iterator

import torch
from torch.fx.passes.split_module import split_module

from eqsat_torch.inductor import compat
from eqsat_torch.lowering.grad_dead import GRAD_DEAD, grad_dead_nodes

# FX nodes per window: the 1,024-piece two-stage model (3,846 nodes) optimizes whole to one kernel.
REGION_NODES = 4096


def windows(gm: torch.fx.GraphModule, size: int) -> dict[torch.fx.Node, int]:
    """Window of every computing node: ``size`` nodes of the topological order each; a ``getitem``
    stays with the node whose tuple it reads (a tuple never crosses a window) and is not counted.
    A window never ends inside a grad-mode region (``no_grad`` in a graph compiled with grad, …): one
    ending in it cannot be lowered (it ends in another mode than it starts in), and the next, which
    ``split_module`` opens with the region's switch, read its inputs as if made in the region; both
    kept their input, and the first left the mode switched for whatever the next became."""
    part: dict[torch.fx.Node, int] = {}
    base, switch = torch.is_grad_enabled(), compat.grad_mode_switch()
    window, count, inside = 0, 0, False
    for n in gm.graph.nodes:
        if n.op in ("placeholder", "output"):
            continue
        if n.target is operator.getitem and isinstance(n.args[0], torch.fx.Node) and n.args[0] in part:
            part[n] = part[n.args[0]]
            continue
        if count >= size and not inside:
            window, count = window + 1, 0
        part[n] = window
        count += 1
        if n.op == "call_function" and n.target is switch:
            inside = (n.args[0] if n.args else n.kwargs.get("mode")) != base
    return part


def cut(gm: torch.fx.GraphModule, part: dict[torch.fx.Node, int]) -> torch.fx.GraphModule:
    """``gm`` as one submodule per window of ``part`` (``windows``), called in order."""
    dead = grad_dead_nodes(gm)  # a window's outputs are not the graph's: its lowering reads these marks
    for n in dead:
        n.meta[GRAD_DEAD] = True
    try:
        return split_module(gm, None, lambda n: part[n], keep_original_order=True)
    finally:
        for n in dead:
            del n.meta[GRAD_DEAD]


def pieces(top: torch.fx.GraphModule) -> Iterator[tuple[str, torch.fx.GraphModule, list[Any]]]:
    """Each window of ``cut``'s module in order: its attribute name, submodule and example inputs
    (replace it with ``setattr(top, name, new)``, then ``inline(top)``)."""
    for node in top.graph.nodes:
        if node.op == "call_module":
            sub = getattr(top, node.target)
            yield node.target, sub, [_example(p) for p in sub.graph.nodes if p.op == "placeholder"]


def _example(placeholder: torch.fx.Node) -> Any:
    meta = placeholder.meta
    return meta.get("example_value", meta.get("val"))


def inline(top: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """One flat graph: every ``call_module`` of ``top`` replaced by its submodule's nodes."""
    graph = torch.fx.Graph()
    root = torch.nn.Module()
    env: dict[torch.fx.Node, Any] = {}
    for node in top.graph.nodes:
        if node.op == "call_module":
            env[node] = copy_into(graph, root, getattr(top, node.target), node.target,
                                   [_load(env, a) for a in node.args])
        elif node.op == "call_function" and node.target is operator.getitem and isinstance(env.get(node.args[0]), tuple):
            env[node] = env[node.args[0]][node.args[1]]
        elif node.op == "get_attr":
            env[node] = _get_attr(graph, root, top, node.target, node.target.replace(".", "_"), node)
        else:
            env[node] = graph.node_copy(node, lambda n: _load(env, n))
    for node in graph.nodes:
        node.meta.pop(GRAD_DEAD, None)  # the windows' marks (cut) end with them
    graph.lint()
    return torch.fx.GraphModule(root, graph)


def _load(env: dict, n: Any) -> Any:
    return torch.fx.node.map_arg(n, lambda x: env[x])


def copy_into(graph: torch.fx.Graph, root: torch.nn.Module, sub: torch.fx.GraphModule, prefix: str,
               args: list[Any]) -> Any:
    """Copy ``sub``'s nodes into ``graph`` with its placeholders bound to ``args``; its output value."""
    env: dict[torch.fx.Node, Any] = {}
    placeholders = iter(args)
    for node in sub.graph.nodes:
        if node.op == "placeholder":
            env[node] = next(placeholders)
        elif node.op == "output":
            return torch.fx.node.map_arg(node.args[0], lambda x: env[x])
        elif node.op == "get_attr":
            env[node] = _get_attr(graph, root, sub, node.target, f"{prefix}_{node.target.replace('.', '_')}", node)
        else:
            env[node] = graph.node_copy(node, lambda n: env[n])
    raise ValueError(f"{prefix} has no output")


def _get_attr(graph: torch.fx.Graph, root: torch.nn.Module, owner: torch.nn.Module, target: str, name: str,
              node: torch.fx.Node) -> torch.fx.Node:
    value = owner
    for part in target.split("."):
        value = getattr(value, part)
    if not hasattr(root, name):
        if isinstance(value, torch.nn.Parameter):
            root.register_parameter(name, value)
        elif isinstance(value, torch.Tensor):
            root.register_buffer(name, value)
        else:
            setattr(root, name, value)
    new = graph.get_attr(name)
    new.meta = dict(node.meta)
    return new
