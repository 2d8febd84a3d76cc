"""Outputs alias exactly as in eager: a program is values *and* which tensors share memory.

Rules are true as values, so ``cat(x.split(5, 1), 1)`` may be extracted as ``x`` itself; eager returns
a fresh tensor there, and a caller that mutates the output would then change its input. For every
output leaf we read, from the fake values the graph carries (Dynamo's ``example_value``, AOT's
``val``), whether it shares storage with a graph input or with an earlier output, and whether it *is*
that node. The optimized graph must agree: where it aliases and eager did not, the output gets a copy
(``clone``; the caller prices the result as written); where eager returned a distinct view and ours is the very same
node, a fresh view (``view_as`` / ``aten.alias``) of an input's storage (AOT regenerates those from the
input); a fresh view of a buffer the graph computes does not survive Inductor (its wrapper returns a
view in the buffer's layout as the buffer, ``codegen_reinterpret_view``; Inductor alone returns
``y = x * 2; return y, y.view_as(y)`` as one tensor), so that is refused, as is anything else.

A layout is part of the value a user sees too: ``cat(x.split(1, 0))`` of a transposed ``x`` is
contiguous in eager, and ``x`` is not, so ``.view(-1)`` works on one and raises on the other. Where the
optimized output's strides differ from eager's (size-1 dims aside), the copy writes eager's layout
(``permute → clone → permute back``); where eager's is no dense layout (a slice or an expand of a
buffer), a dense output of ours is as good, and any other is copied to the dense layout of eager's
dim order. Symbolic strides are ordered by their hints and compared as expressions. Inductor
gives a post-grad graph's output the strides it had before the passes (ours included), but only
their order where the output is a view (``GraphLowering.run_node``: ``require_stride_order``); so an
Aten output that became a view in another layout (a piece of a batched buffer, a slice) gets a
``clone``, whose exact strides Inductor then sets.

The post-grad pass appends the values it copies back into mutated inputs as trailing outputs. When a
user output is one of them, or a copy of one, Inductor returns the input's storage: it writes the value
straight into the input (reinplacing) and drops the copy as a no-op (``remove_noop_ops``; Inductor
alone gets ``x[:2] = 0; return x.clone()`` wrong so, see ``docs/upstream/``). No copy we could add
survives that, so such a program is refused unless the input program already had it.
"""
from __future__ import annotations

import dataclasses
import operator
from dataclasses import dataclass, field
from typing import Any, Iterable

import torch
from torch.fx.node import map_aggregate

from eqsat_torch.inductor import compat
from eqsat_torch.lowering.lowered import Unsupported
from eqsat_torch.lowering.symbolic import output_leaves


@dataclass(frozen=True)
class LeafAlias:
    """How one output leaf aliases: the inputs and earlier outputs whose storage it shares, and which
    of those it is identical to (the same FX node)."""

    inputs: frozenset[int]
    outputs: frozenset[int]
    same_node_as: frozenset[str]  # "in3" / "out1": the leaf is that very node
    layout: tuple | None = field(default=None, compare=False)  # (sizes, strides) of the leaf
    # a value copied back into an input: the user outputs that are it, a view of it or a copy of it
    copied_to_users: frozenset[int] = field(default=frozenset(), compare=False)

    @property
    def fresh(self) -> bool:
        return not self.inputs and not self.outputs


def _value(n: torch.fx.Node, key: str | None) -> Any:
    return n.meta.get(key) if key else compat.node_value(n)


def alias_signature(gm: torch.fx.GraphModule, key: str | None = None,
                    strict_outputs: int | None = None, copied_back: int = 0) -> list[LeafAlias | None]:
    """One ``LeafAlias`` per output leaf (None for non-tensor leaves); fake values read from
    ``meta[key]``, or the recorded value when ``key`` is None. Sharing a storage with an input
    always counts. Two outputs alias when they share a storage if both are among the first
    ``strict_outputs`` (None: all), the ones the user sees; otherwise only when their memory
    ranges overlap: activations an AOT forward graph saves for its backward, and gradients, may be
    disjoint slices of one batched buffer (batch fusions write them so). The last ``copied_back``
    leaves are values the post-grad pass copies into mutated inputs (``copied_to_users``)."""
    sources = [n for n in gm.graph.nodes if n.op in ("placeholder", "get_attr")]
    leaves = output_leaves(gm)
    sig = _signature(sources, [_value(n, key) for n in sources], leaves,
                     [_value(x, key) if isinstance(x, torch.fx.Node) else None for x in leaves], strict_outputs)
    user = len(leaves) if strict_outputs is None else strict_outputs
    for i in range(len(leaves) - copied_back, len(leaves)):
        if sig[i] is not None:
            k = compat.storage_key(_value(leaves[i], key))
            users = frozenset(j for j in range(min(user, i)) if isinstance(leaves[j], torch.fx.Node)
                              and compat.storage_key(_value(_through_copies(leaves[j]), key)) == k)
            sig[i] = dataclasses.replace(sig[i], copied_to_users=users)
    return sig


def _through_copies(n: torch.fx.Node) -> torch.fx.Node:
    """The node a chain of ``aten.clone`` / ``aten.alias`` copies (Inductor may drop them)."""
    while n.op == "call_function" and n.target in (torch.ops.aten.clone.default, torch.ops.aten.alias.default):
        n = n.args[0]
    return n


def _signature(sources: list, source_vals: list, leaves: list, leaf_vals: list,
               strict_outputs: int | None) -> list[LeafAlias | None]:
    """``sources``/``leaves`` are the identities (FX nodes, or the tensors themselves), ``*_vals``
    the tensors whose storages are compared."""
    source_keys = [compat.storage_key(v) for v in source_vals]
    leaf_keys = [compat.storage_key(v) for v in leaf_vals]
    sig: list[LeafAlias | None] = []
    for i, (leaf, k) in enumerate(zip(leaves, leaf_keys)):
        if k is None:
            sig.append(None)
            continue
        ins = frozenset(j for j, sk in enumerate(source_keys) if sk == k)
        outs = frozenset(j for j in range(i) if leaf_keys[j] == k
                         and (_strict(i, j, strict_outputs) or _overlap(leaf_vals[i], leaf_vals[j])))
        same = {f"in{j}" for j in ins if sources[j] is leaf} | {f"out{j}" for j in outs if leaves[j] is leaf}
        val = leaf_vals[i]
        sig.append(LeafAlias(ins, outs, frozenset(same), (tuple(val.shape), tuple(val.stride()))))
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
    # output leaf → None for a plain clone, or the dim order a Torch-IR copy in eager's layout is
    # made contiguous in (``_copy_in_layout``): what prices the copies without lowering again
    copied: dict[int, tuple[int, ...] | None] = field(default_factory=dict)


def match_aliasing(original: list[LeafAlias | None], gm: torch.fx.GraphModule, dialect: str,
                   strict_outputs: int | None = None, copied_back: int = 0) -> Repair:
    """Make ``gm``'s outputs alias as ``original`` says, and (Torch IR) keep their layouts; ``gm``
    carries fresh fake values in ``meta['val']``. The last ``copied_back`` leaves are values the
    post-grad pass copies into mutated inputs. Raises :class:`Unsupported` where no copy or view can
    restore it."""
    new = alias_signature(gm, "val", strict_outputs, copied_back)
    leaves = output_leaves(gm)
    if len(new) != len(original):
        raise Unsupported("optimized graph has a different output structure")
    user = len(leaves) if strict_outputs is None else strict_outputs
    for want, got in zip(original[len(leaves) - copied_back:], new[len(leaves) - copied_back:]):
        if want is not None and got is not None and got.copied_to_users - want.copied_to_users:
            raise Unsupported(f"output {min(got.copied_to_users - want.copied_to_users)} would be a value "
                              "copied back into a mutated input, which Inductor returns as the input itself")
    repair = Repair()
    replace: dict[int, torch.fx.Node] = {}
    copied: set[int] = set()
    # alone in eager (fresh, and no later output a view of it) but read by a later output of ours:
    # it gets the copy, so the later one keeps the storage eager gives it (issue 30: ``reshape(cat([p]))``
    # found equal to ``p``, a piece whose later views are outputs too, alone or with that piece in eager)
    alone = {i for i, w in enumerate(original) if w is not None and w.fresh} - _read_later(original)
    to_copy = alone & _read_later(new)
    out_node = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    for i, (want, got) in enumerate(zip(original, new)):
        if want is None or got is None:
            continue
        got = _after_repairs(got, replace, copied)
        target = dense_like(want.layout)
        # eager's is a slice or an expand of a buffer (no copy has it) and ours is dense: as good
        relayout = (i < user and not same_layout(want.layout, got.layout)
                    and not (is_dense(got.layout) and not same_layout(want.layout, target))
                    and (dialect == "torch" or want.fresh and inductor_view(leaves[i])))
        if relayout and dialect == "aten" and any(w is not None and i in w.outputs for w in original[i + 1:]):
            raise Unsupported(f"output {i} would need a copy in eager's layout, and a later output is a view of it")
        if want == got and not relayout and i not in to_copy:
            continue
        leaf = leaves[i]
        with gm.graph.inserting_before(out_node):
            if want.fresh and relayout and dialect == "aten":
                # Inductor gives an output it computes (no view) eager's strides; its
                # ``remove_noop_ops`` drops a clone whose strides are its source's, so the clone
                # asks for another layout than the view's: eager's, when that is contiguous
                if not same_layout(want.layout, _contiguous(want.layout[0])):
                    raise Unsupported(f"output {i} would be a view in strides {got.layout[1]} where eager's, "
                                      f"{want.layout[1]}, are no contiguous tensor's")
                replace[i] = gm.graph.call_function(torch.ops.aten.clone.default, (leaf,),
                                                    {"memory_format": torch.contiguous_format})
                copied.add(i)
                repair.copied[i] = None
            elif want.fresh and relayout:
                replace[i] = _copy_in_layout(gm.graph, leaf, target)
                copied.add(i)
                repair.copied[i] = tuple(_dim_order(target[1]))
            elif want.fresh:
                replace[i] = _clone(gm.graph, leaf, dialect)
                copied.add(i)
                repair.copied[i] = None
            elif want != got and not ((want.inputs, want.outputs) == (got.inputs, got.outputs)
                                      and want.same_node_as < got.same_node_as):
                raise Unsupported(f"output {i} would alias {_describe(got)} where eager's aliases {_describe(want)}")
            elif relayout:
                raise Unsupported(f"output {i} has strides {got.layout[1]} where eager's, a view, has {want.layout[1]}")
            elif not got.inputs:
                raise Unsupported(f"output {i} would be {_describe(got)} itself where eager's is a view of it; Inductor "
                                  "returns a view of a buffer in the buffer's layout as the buffer")
            else:
                replace[i] = _fresh_view(gm.graph, leaf, dialect)
                repair.views += 1
    repair.copies = len(copied)
    if replace:
        it = iter(range(len(leaves)))
        out_node.args = (map_aggregate(out_node.args[0], lambda x: replace.get(next(it), x)),)
        gm.recompile()
    return repair


def _read_later(signature: list[LeafAlias | None]) -> set[int]:
    """The outputs some later output shares storage with."""
    return {j for a in signature if a is not None for j in a.outputs}


def _after_repairs(got: LeafAlias, replaced: Iterable[int], copied: set[int]) -> LeafAlias:
    """``got`` once the earlier outputs ``replaced`` have their copy (``copied``) or fresh view: a
    copy shares no storage with this leaf any more, and neither is the very node this leaf is. Read
    before the repairs, a view of an output that eager computes afresh and we found equal to another
    (``cat(split(r))`` → ``r``) seemed to alias both, though the one gets a copy (issue 30)."""
    return dataclasses.replace(got, outputs=got.outputs - copied,
                               same_node_as=got.same_node_as - {f"out{j}" for j in replaced})


def inductor_view(n: Any) -> bool:
    """Inductor lowers Aten node ``n`` to a view of another buffer (a view op, ``_unsafe_view``, a
    split's piece), whose strides it keeps only in order. Read from the op's schema: the fake values
    recorded are detached copies, which are no views."""
    if not isinstance(n, torch.fx.Node) or n.op != "call_function":
        return False
    if n.target is operator.getitem and isinstance(n.args[0], torch.fx.Node):
        return inductor_view(n.args[0])
    if n.target is torch.ops.aten._unsafe_view.default:
        return True
    schema = getattr(n.target, "_schema", None)
    return bool(schema is not None and schema.returns and schema.returns[0].alias_info is not None
                and not schema.is_mutable)


def view_base(n: torch.fx.Node) -> torch.fx.Node:
    """The node ``n`` is a view of (``n`` itself where it is none), through views and the pieces
    of a split, as Inductor reads them (``inductor_view``)."""
    while inductor_view(n):
        src = n.args[0].args[0] if n.target is operator.getitem else n.args[0]
        if not isinstance(src, torch.fx.Node):
            break
        n = src
    return n


def same_layout(a: tuple | None, b: tuple | None) -> bool:
    """Equal strides on every dim of size > 1 (a size-1 dim's stride is never used); symbolic sizes
    and strides are compared as expressions, so no guard is added."""
    if a is None or b is None:
        return a is b
    (sa, ta), (sb, tb) = a, b
    if len(sa) != len(sb) or any(n == 0 for n in sa if isinstance(n, int)):
        return len(sa) == len(sb)
    return all(str(x) == str(y) for n, x, y in zip(sa, ta, tb) if not (isinstance(n, int) and n == 1))


def is_dense(layout: tuple) -> bool:
    return same_layout(layout, dense_like(layout))


def dense_like(layout: tuple) -> tuple:
    """The dense layout with ``layout``'s dim order (strides by size, ties by position): the layout
    itself when it is dense, the contiguous-most copy of it when it is not (a slice's, an expand's).
    Symbolic strides are ordered by their hints."""
    sizes, strides = layout
    dense, step = [0] * len(sizes), 1
    for d in reversed(_dim_order(strides)):
        dense[d] = step
        step = step * sizes[d]
    return sizes, tuple(dense)


def _dim_order(strides: tuple) -> list[int]:
    """Dims outermost first: by stride, largest first (symbolic ones by their hints), ties by position."""
    return sorted(range(len(strides)), key=lambda d: (-_hint(strides[d]), d))


def _hint(v: Any) -> int:
    return v if isinstance(v, int) else compat.symint_hint(v) or 0


def _contiguous(sizes: tuple) -> tuple:
    """A contiguous tensor's layout of ``sizes``."""
    strides, step = [], 1
    for size in reversed(sizes):
        strides.insert(0, step)
        step = step * size
    return tuple(sizes), tuple(strides)


def _copy_in_layout(graph: torch.fx.Graph, x: torch.fx.Node, layout: tuple) -> torch.fx.Node:
    """A Torch-IR copy of ``x`` with the dense ``layout``: permuted to its dim order, made
    contiguous, permuted back."""
    order = _dim_order(layout[1])
    back = sorted(range(len(order)), key=order.__getitem__)
    moved = graph.call_function(torch.permute, (x, tuple(order)))
    copy = graph.call_function(torch.clone, (moved,), {"memory_format": torch.contiguous_format})
    return graph.call_function(torch.permute, (copy, tuple(back)))


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
