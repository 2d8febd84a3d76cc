"""Outputs alias exactly as in eager: a program is values *and* which tensors share memory.

Rules are true as values, so ``cat(x.split(5, 1), 1)`` may be extracted as ``x`` itself; eager returns
a fresh tensor there, and a caller that mutates the output would then change its input. For every
output leaf we read, from the fake values the graph carries (Dynamo's ``example_value``, AOT's
``val``), whether it shares storage with a graph input or with an earlier output, and whether it *is*
that node. The optimized graph must agree: where it aliases and eager did not, the output gets a copy
(``clone``; the caller prices the result as written); where eager returned a distinct view and ours is the very same
node, a fresh view (``view_as`` / ``aten.alias``); anything else cannot be repaired and is refused.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.fx.node import map_aggregate

from . import torch_compat
from .lower import Unsupported


@dataclass(frozen=True)
class LeafAlias:
    """How one output leaf aliases: the inputs and earlier outputs whose storage it shares, and which
    of those it is identical to (the same FX node)."""

    inputs: frozenset[int]
    outputs: frozenset[int]
    same_node_as: frozenset[str]  # "in3" / "out1": the leaf is that very node

    @property
    def fresh(self) -> bool:
        return not self.inputs and not self.outputs


def _value(n: torch.fx.Node, key: str | None) -> Any:
    return n.meta.get(key) if key else torch_compat.node_value(n)


def output_leaves(gm: torch.fx.GraphModule) -> list[Any]:
    """The output's leaves in order (FX nodes, or constants)."""
    out = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    leaves: list[Any] = []
    map_aggregate(out.args[0], leaves.append)
    return leaves


def alias_signature(gm: torch.fx.GraphModule, key: str | None = None,
                    strict_outputs: int | None = None) -> list[LeafAlias | None]:
    """One ``LeafAlias`` per output leaf (None for non-tensor leaves); fake values read from
    ``meta[key]``, or the recorded value when ``key`` is None. Sharing a storage with an input
    always counts. Two outputs alias when they share a storage if both are among the first
    ``strict_outputs`` (None: all), the ones the user sees; otherwise only when their memory
    ranges overlap: activations an AOT forward graph saves for its backward, and gradients, may be
    disjoint slices of one batched buffer (batch fusions write them so)."""
    sources = [n for n in gm.graph.nodes if n.op in ("placeholder", "get_attr")]
    leaves = output_leaves(gm)
    return _signature(sources, [_value(n, key) for n in sources], leaves,
                      [_value(x, key) if isinstance(x, torch.fx.Node) else None for x in leaves], strict_outputs)


def _signature(sources: list, source_vals: list, leaves: list, leaf_vals: list,
               strict_outputs: int | None) -> list[LeafAlias | None]:
    """``sources``/``leaves`` are the identities (FX nodes, or the tensors themselves), ``*_vals``
    the tensors whose storages are compared."""
    source_keys = [torch_compat.storage_key(v) for v in source_vals]
    leaf_keys = [torch_compat.storage_key(v) for v in leaf_vals]
    sig: list[LeafAlias | None] = []
    for i, (leaf, k) in enumerate(zip(leaves, leaf_keys)):
        if k is None:
            sig.append(None)
            continue
        ins = frozenset(j for j, sk in enumerate(source_keys) if sk == k)
        outs = frozenset(j for j in range(i) if leaf_keys[j] == k
                         and (_strict(i, j, strict_outputs) or _overlap(leaf_vals[i], leaf_vals[j])))
        same = {f"in{j}" for j in ins if sources[j] is leaf} | {f"out{j}" for j in outs if leaves[j] is leaf}
        sig.append(LeafAlias(ins, outs, frozenset(same)))
    return sig


def _strict(i: int, j: int, strict_outputs: int | None) -> bool:
    return strict_outputs is None or max(i, j) < strict_outputs


def _overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    """The element ranges two tensors of one storage span intersect (conservative for strides)."""
    def span(t):
        if t.numel() == 0:
            return 0, 0
        first = t.storage_offset()
        return first, first + sum((n - 1) * abs(st) for n, st in zip(t.shape, t.stride())) + 1
    (a0, a1), (b0, b1) = span(a), span(b)
    return a0 < b1 and b0 < a1


@dataclass
class Repair:
    copies: int = 0          # outputs that now get a clone
    views: int = 0           # outputs that now get a fresh view of themselves


def match_aliasing(original: list[LeafAlias | None], gm: torch.fx.GraphModule, dialect: str,
                   strict_outputs: int | None = None) -> Repair:
    """Make ``gm``'s outputs alias as ``original`` says (``gm`` carries fresh fake values in
    ``meta['val']``); raises :class:`Unsupported` where no copy or view can restore it."""
    new = alias_signature(gm, "val", strict_outputs)
    leaves = output_leaves(gm)
    if len(new) != len(original):
        raise Unsupported("optimized graph has a different output structure")
    repair = Repair()
    replace: dict[int, torch.fx.Node] = {}
    out_node = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    for i, (want, got) in enumerate(zip(original, new)):
        if want is None or got is None or want == got:
            continue
        leaf = leaves[i]
        with gm.graph.inserting_before(out_node):
            if want.fresh:
                replace[i] = _clone(gm.graph, leaf, dialect)
                repair.copies += 1
            elif (want.inputs, want.outputs) == (got.inputs, got.outputs) and want.same_node_as < got.same_node_as:
                replace[i] = _fresh_view(gm.graph, leaf, dialect)
                repair.views += 1
            else:
                raise Unsupported(f"output {i} would alias {_describe(got)} where eager's aliases {_describe(want)}")
    if replace:
        it = iter(range(len(leaves)))
        out_node.args = (map_aggregate(out_node.args[0], lambda x: replace.get(next(it), x)),)
        gm.recompile()
    return repair


def _clone(graph: torch.fx.Graph, x: torch.fx.Node, dialect: str) -> torch.fx.Node:
    if dialect == "aten":
        return graph.call_function(torch.ops.aten.clone.default, (x,))
    return graph.call_function(torch.clone, (x,))


def _fresh_view(graph: torch.fx.Graph, x: torch.fx.Node, dialect: str) -> torch.fx.Node:
    if dialect == "aten":
        return graph.call_function(torch.ops.aten.alias.default, (x,))
    return graph.call_method("view_as", (x, x))


def _describe(a: LeafAlias) -> str:
    parts = [f"input {j}" for j in sorted(a.inputs)] + [f"output {j}" for j in sorted(a.outputs)]
    return ", ".join(parts) or "nothing"


def real_signature(inputs: list[Any], outputs: list[Any],
                   strict_outputs: int | None = None) -> list[LeafAlias | None]:
    """The same signature for real tensors after a run (validation compares eager's and ours)."""
    return _signature(inputs, inputs, outputs, outputs, strict_outputs)
