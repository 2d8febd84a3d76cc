"""Wide split/cat clusters, optimized as units (issue 30).

A window of the topological order that cuts a split from its getitems' consumers loses the whole
Optimus rewrite, and one cluster of 4,096 pieces is too large for one e-graph in seconds. So a large
graph is first made two-level (``chunked``: a split of more than ``CHUNK_PIECES`` pieces becomes a split
into chunks, each split into its pieces; a cat of more than ``CHUNK_PIECES`` tensors a cat of cats —
the same values, views and strides), then each chunk's split with everything that reads only it
(``clusters``) is optimized as one unit and spliced back in place. Chunks are alike, so a cluster of
the same structure as one already optimized reuses its result (``structure``). What is left (one
pointwise op per chunk, a cat of the chunks) is small enough for the graph to be optimized whole.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Iterator

import torch

from eqsat_torch.inductor import compat
from eqsat_torch.scale.regions import copy_into
from eqsat_torch.lowering.targets import canonical_name

# Pieces per chunk. Optimizing the split→sigmoid·2→cat→split→tanh+1→cat model whole (this 2-core
# box, CPU seconds): 16 pieces (66 nodes) 0.44 s, 64 pieces (246 nodes) 0.68 s, 256 pieces (966
# nodes) 2.87 s: past ~64 pieces the time grows faster than the pieces.
CHUNK_PIECES = 64

# A split of fewer pieces is no cluster of its own: an e-graph per split would cost more than the
# split saves (it is optimized with the rest of the graph).
MIN_PIECES = 16

# Nodes per cluster at most: a chain of splits below a seed joins its cluster up to this size.
MAX_CLUSTER_NODES = 4096

SPLITS = ("split", "split_with_sizes")


def _split_parts(n: torch.fx.Node) -> tuple[torch.fx.Node, int, list[int]] | None:
    """(input, dim, piece sizes) of a split every user of which is a getitem; None otherwise."""
    if n.op not in ("call_function", "call_method") or canonical_name(n) not in SPLITS:
        return None
    x, val = n.args[0], compat.node_value(n)
    if not isinstance(x, torch.fx.Node) or not isinstance(val, (tuple, list)) or not val:
        return None
    if not all(u.op == "call_function" and u.target is operator.getitem and isinstance(u.args[1], int)
               for u in n.users):
        return None
    ndim = val[0].dim()
    d = n.args[2] if len(n.args) > 2 else n.kwargs.get("dim", 0)
    if not isinstance(d, int) or not -ndim <= d < ndim:
        return None
    d %= ndim
    sizes = [t.shape[d] for t in val]
    return (x, d, sizes) if all(isinstance(s, int) for s in sizes) else None


def _cat_parts(n: torch.fx.Node) -> tuple[list, int] | None:
    """(tensors, dim) of a cat of a list of nodes; None otherwise."""
    if n.op != "call_function" or canonical_name(n) != "cat" or not isinstance(n.args[0], (list, tuple)):
        return None
    d = n.args[1] if len(n.args) > 1 else n.kwargs.get("dim", 0)
    return (list(n.args[0]), d) if isinstance(d, int) else None


def _chunks(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def _with_value(node: torch.fx.Node, like: torch.fx.Node, value: Any) -> torch.fx.Node:
    """``node`` with ``value`` under the meta keys ``like`` has (Dynamo's or AOT's)."""
    for key in ("example_value", "val"):
        if key in like.meta:
            node.meta[key] = value
    return node


def _split_call(graph: torch.fx.Graph, aten: bool, x: torch.fx.Node, sizes: list[int], d: int) -> torch.fx.Node:
    if aten:
        return graph.call_function(torch.ops.aten.split_with_sizes.default, (x, sizes, d))
    return graph.call_function(torch.split, (x, sizes), {"dim": d})


@dataclass
class TwoLevel:
    """``chunked``'s graph, its new top-level splits (glue: no cluster's seed) and its inner cats."""

    graph: torch.fx.Graph
    glue: set[torch.fx.Node]
    inner_cats: set[torch.fx.Node]

    def flatten_cats(self) -> None:
        """A cat of inner cats that no unit replaced reads their tensors again: an inner cat is a
        copy more, which only pays when the unit replacing it is cheaper."""
        alive = set(self.graph.nodes)
        for n in list(self.inner_cats & alive):
            for top in list(n.users):
                tensors, d = _cat_parts(top)
                top.args, top.kwargs = ([t for p in tensors for t in (p.args[0] if p is n else [p])],), {"dim": d}
            if not n.users:
                self.graph.erase_node(n)


def chunked(gm: torch.fx.GraphModule, pieces: int | None = None) -> TwoLevel:
    """A copy of ``gm``'s graph where every split of more than ``pieces`` pieces and every cat of
    more than ``pieces`` tensors is two-level. A graph, not a module: its code is generated once
    its clusters are replaced (15k nodes: ~1 s)."""
    pieces = pieces or CHUNK_PIECES
    wide = [n for n in gm.graph.nodes if (p := _split_parts(n)) and len(p[2]) > pieces
            or (c := _cat_parts(n)) and len(c[0]) > pieces]
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    output = graph.graph_copy(gm.graph, env)
    graph.output(output)
    two = TwoLevel(graph, set(), set())
    for old in wide:
        n = env[old]
        aten = compat.is_aten(n.target)
        with graph.inserting_before(n):
            if (parts := _split_parts(n)) is not None:
                two.glue.add(_two_level_split(graph, n, aten, *parts, pieces))
            else:
                two.inner_cats.update(_two_level_cat(graph, n, *_cat_parts(n), pieces))
    return two


def _two_level_split(graph, n, aten: bool, x, d: int, sizes: list[int], pieces: int) -> torch.fx.Node:
    groups = _chunks(list(range(len(sizes))), pieces)
    chunk_sizes = [sum(sizes[i] for i in g) for g in groups]
    top = _with_value(_split_call(graph, aten, x, chunk_sizes, d), n,
                      torch.split(compat.node_value(x), chunk_sizes, d))
    pieces_of = compat.node_value(n)  # a chunk's pieces are views of the input as they were
    inner, first = [], {}
    for j, g in enumerate(groups):
        chunk = _with_value(graph.call_function(operator.getitem, (top, j)), n, compat.node_value(top)[j])
        inner.append(_with_value(_split_call(graph, aten, chunk, [sizes[i] for i in g], d), n,
                                 tuple(pieces_of[i] for i in g)))
        first.update({i: (j, g[0]) for i in g})
    for user in list(n.users):
        i = user.args[1] % len(sizes)
        j, start = first[i]
        user.args = (inner[j], i - start)
    graph.erase_node(n)
    return top


def _two_level_cat(graph, n, tensors: list, d: int, pieces: int) -> list[torch.fx.Node]:
    whole = compat.node_value(n)
    d %= whole.dim()
    parts = []
    for group in _chunks(tensors, pieces):  # a new contiguous tensor each, as cat makes
        shape = list(whole.shape)
        shape[d] = sum(compat.node_value(t).shape[d] for t in group)
        part = graph.call_function(n.target, (group,), {"dim": d})
        parts.append(_with_value(part, n, whole.new_empty(shape)))
    n.args, n.kwargs = (parts,), {"dim": d}
    return parts


def clusters(graph: torch.fx.Graph, glue: set[torch.fx.Node] = frozenset()) -> list[list[torch.fx.Node]]:
    """The clusters of ``gm`` in topological order: a split of ``MIN_PIECES`` pieces or more (not in
    ``glue``), with every node all of whose inputs are in its cluster (its getitems, the chains on
    them, the cat that reads only them). A cluster's only inputs from outside are its split's, so it
    can be replaced in place by any graph of those inputs."""
    of: dict[torch.fx.Node, int] = {}
    members: list[list[torch.fx.Node]] = []
    for n in graph.nodes:
        if n.op in ("placeholder", "output", "get_attr"):
            continue
        owners = {of.get(a) for a in n.all_input_nodes}
        if len(owners) == 1 and (c := owners.pop()) is not None and len(members[c]) < MAX_CLUSTER_NODES:
            of[n] = c
            members[c].append(n)
        elif n not in glue and (parts := _split_parts(n)) is not None and len(parts[2]) >= MIN_PIECES:
            of[n] = len(members)
            members.append([n])
    return members


@dataclass
class Unit:
    """A cluster's nodes, and its inputs and outputs in the enclosing graph."""

    nodes: list[torch.fx.Node]
    inputs: list[torch.fx.Node]
    outputs: list[torch.fx.Node]

    def module(self, root: torch.fx.GraphModule) -> torch.fx.GraphModule:
        """The cluster as a graph of its own: a placeholder per input, an output per output."""
        graph = torch.fx.Graph()
        env: dict[torch.fx.Node, torch.fx.Node] = {}
        for k, a in enumerate(self.inputs):
            env[a] = graph.placeholder(f"in_{k}")
            env[a].meta = dict(a.meta)
        for n in self.nodes:
            env[n] = graph.node_copy(n, lambda a: env[a])
        graph.output(tuple(env[o] for o in self.outputs))
        return torch.fx.GraphModule(root, graph)


def unit_of(nodes: list[torch.fx.Node]) -> Unit | None:
    """The cluster ``nodes`` as a unit; None when one of its outputs is not a tensor."""
    inside = set(nodes)
    inputs = list(dict.fromkeys(a for n in nodes for a in n.all_input_nodes if a not in inside))
    outputs = [n for n in nodes if any(u not in inside for u in n.users)]
    if not outputs or not all(isinstance(compat.node_value(o), torch.Tensor) for o in outputs):
        return None
    return Unit(nodes, inputs, outputs)


def structure(unit: Unit) -> str:
    """What the unit computes, node names aside: ops, constants, its inputs' shapes, strides, dtypes
    and devices, and which nodes it outputs. Two units with one structure are one function of their
    inputs."""
    index = {a: k for k, a in enumerate(unit.inputs)}
    rows = [_meta(compat.node_value(a)) for a in unit.inputs]
    for n in unit.nodes:
        index[n] = len(index)
        args = torch.fx.node.map_arg((n.args, n.kwargs), lambda a: _Ref(index[a]))
        rows.append(f"{n.op}|{n.target if isinstance(n.target, str) else _label(n.target)}|{args!r}")
    rows.append(repr([index[o] for o in unit.outputs]))
    return "\n".join(rows)


def _meta(v: Any) -> str:
    if isinstance(v, torch.Tensor):
        return f"{tuple(v.shape)}|{v.stride()}|{v.dtype}|{v.device}|{v.requires_grad}"
    return repr(v)


@dataclass(frozen=True)
class _Ref:
    i: int

    def __repr__(self) -> str:
        return f"%{self.i}"


def _label(target: Any) -> str:
    return f"{getattr(target, '__module__', '')}.{getattr(target, '__qualname__', repr(target))}"


def splice(graph: torch.fx.Graph, unit: Unit, new: torch.fx.GraphModule) -> None:
    """Replace the cluster of ``unit`` in ``graph`` by ``new`` (a graph of ``unit.inputs`` without
    attributes), in place: inserted before the cluster's split, which every one of its users follows."""
    with graph.inserting_before(unit.nodes[0]):
        out = copy_into(graph, new, new, f"unit_{unit.nodes[0].name}", unit.inputs)
    for old, value in zip(unit.outputs, out):
        old.replace_all_uses_with(value)
    for n in reversed(unit.nodes):
        graph.erase_node(n)


class Units:
    """``gm`` made two-level (``chunked``) and its clusters (``clusters``) as units, met in
    topological order (``each``). A unit of a structure met before reuses that one's result; a result
    is spliced back before the next unit is read, whose input may be its output (``use``)."""

    def __init__(self, gm: torch.fx.GraphModule):
        self.gm = gm
        self.two = chunked(gm)
        self.done: dict[str, torch.fx.GraphModule | None] = {}
        self.replaced = 0

    def each(self) -> Iterator[tuple[Unit, str]]:
        """Every unit and its structure (``structure``), each read after the ones before were spliced."""
        for nodes in clusters(self.two.graph, self.two.glue):
            unit = unit_of(nodes)
            if unit is not None:
                yield unit, structure(unit)

    def use(self, unit: Unit, key: str) -> None:
        """Splice the result of ``key``'s structure in place of ``unit`` (when it kept one)."""
        if self.done[key] is not None:
            splice(self.two.graph, unit, self.done[key])
            self.replaced += 1

    def keep(self, key: str, sub: torch.fx.GraphModule, new: torch.fx.GraphModule) -> None:
        """``new``, the optimized ``sub``, is the result of ``key``'s structure unless it is ``sub``
        itself or reads attributes (a unit is a graph of its inputs only)."""
        keep = new is not sub and not any(n.op == "get_attr" for n in new.graph.nodes)
        self.done[key] = new if keep else None

    def assembled(self) -> torch.fx.GraphModule:
        """The graph with every kept unit spliced back; ``gm`` itself when none was."""
        if not self.replaced:
            return self.gm
        self.two.flatten_cats()
        self.two.graph.lint()
        return torch.fx.GraphModule(self.gm, self.two.graph)
