"""Outputs Inductor's ``remove_noop_ops`` would merge into one tensor.

Inductor runs ``remove_noop_ops`` right after the post-grad pass. It reads the outputs' storages once,
before it drops anything, so when an output that is a no-op of an intermediate (a full slice, a
clone) is dropped, the intermediate becomes an output it does not know, and a later clone of that
intermediate, itself an output, is dropped too: two outputs come back as one tensor object. Inductor
alone does it (torch 2.13: ``y = x * 2; return y.clone(), y.clone()`` returns one tensor twice), and
a rewrite can make the shape that triggers it (soak seed 3010674: ``stack(unbind(t))`` found equal to
``t``, kept apart by a clone, while ``t``'s full ``slice_scatter`` is dropped). The pass runs that
removal on copies of the graph before and after it and refuses a program that comes out with output
pairs merged which the input's does not merge. Two outputs that share a storage (two views of one
value) are merged further when they become one node: the removal drops the ``alias`` a rewrite keeps
them apart with (its guard against making a view "is" its source compares the node with the output
node's args, a 1-tuple holding the list, so it never holds; soak seed 3001290: ``split(t, n)[0]`` and
``chunk(t, 1, 1)[0]`` rewritten to ``t`` and ``alias(t)`` came back as one tensor).
"""
from __future__ import annotations

import itertools

import torch

from eqsat_torch.inductor import compat
from eqsat_torch.safety.aliasing import view_base
from eqsat_torch.lowering.lowered import Unsupported
from eqsat_torch.lowering.symbolic import output_leaves


def refuse_new_merges(before: torch.fx.Graph, after: torch.fx.Graph, user: int | None = None) -> None:
    """Raise :class:`Unsupported` where ``remove_noop_ops`` merges outputs of ``after`` it keeps
    apart in ``before``. ``user``: how many leading outputs of an AOT graph the user sees (None: all).
    The rest are only read: a forward graph's activations saved for the backward, and a backward
    graph's gradients (``user`` 0), which autograd's accumulation copies where it cannot steal them
    (Inductor alone returns one tangent as the gradient of both ``x`` and ``y`` in ``x + y``)."""
    was = _merged_after_removal(before)
    new = sorted((i, j) for (i, j), level in _merged_after_removal(after).items()
                 if level > was.get((i, j), 0) and (user is None or j < user))
    if new:
        i, j = new[0]
        raise Unsupported(f"Inductor's remove_noop_ops would return outputs {i} and {j} as one tensor")


# How far two outputs are merged: one storage; one a view of the other itself (autograd reads a view's
# requires_grad from its base: soak seed 3009133t, ``stack([x])`` rewritten to ``unsqueeze(x)``, the
# no_grad clone eager's output 0 is dropped, and output 0 came back a view of output 2, which requires
# grad, so it did too); one tensor object.
SAME_STORAGE, VIEW_OF_OTHER, SAME_NODE = 1, 2, 3


def _merged_after_removal(graph: torch.fx.Graph) -> dict[tuple[int, int], int]:
    """Output pairs that are one node (``SAME_NODE``), one a view of the other (``VIEW_OF_OTHER``)
    or one storage (``SAME_STORAGE``), once ``remove_noop_ops`` ran on a copy."""
    copy = _copy(graph)
    inputs_before = {n: _input_nodes(n) for n in copy.nodes}
    compat.inductor_remove_noop_ops(copy)
    storage = _storages_after_removal(copy, inputs_before)
    keys = [(n, storage(compat.storage_key(n.meta.get("val")))) if isinstance(n, torch.fx.Node)
            else None for n in output_leaves(copy)]
    return {(i, j): (SAME_NODE if a[0] is b[0] else VIEW_OF_OTHER if view_base(b[0]) is a[0] or view_base(a[0]) is b[0]
                     else SAME_STORAGE)
            for (i, a), (j, b) in itertools.combinations(enumerate(keys), 2)
            if a is not None and b is not None and (a[0] is b[0] or a[1] is not None and a[1] == b[1])}


def outputs_after_removal(graph: torch.fx.Graph) -> list:
    """The output leaves Inductor returns once ``remove_noop_ops`` ran (on a copy): a dropped clone
    of a view is the view itself."""
    copy = _copy(graph)
    compat.inductor_remove_noop_ops(copy)
    return output_leaves(copy)


def _copy(graph: torch.fx.Graph) -> torch.fx.Graph:
    copy = torch.fx.Graph(owning_module=graph.owning_module)  # no GraphModule: its codegen cost 0.4 s at 5k nodes
    copy.output(copy.graph_copy(graph, {}))
    return copy


def _input_nodes(n: torch.fx.Node) -> list:
    out: list = []
    torch.fx.node.map_arg((n.args, n.kwargs), out.append)
    return out


def _storages_after_removal(graph: torch.fx.Graph, inputs_before: dict):
    """Storage keys as they are once the removal ran: a dropped clone's storage is its source's. The
    meta values are not updated (soak seed 3003918: ``clone(t)``, an output, and a view of another
    clone of ``t`` both read ``t``'s storage once the clones are dropped), so every argument the
    removal rewired joins the storage it held to the one it holds now."""
    parent: dict = {}

    def find(k):
        while parent.get(k, k) != k:
            k = parent[k]
        return k

    for n in graph.nodes:
        for was, now in zip(inputs_before.get(n, ()), _input_nodes(n)):
            a, b = (find(compat.storage_key(x.meta.get("val"))) for x in (was, now))
            if was is not now and a is not None and b is not None and a != b:
                parent[a] = b
    return lambda k: None if k is None else find(k)
