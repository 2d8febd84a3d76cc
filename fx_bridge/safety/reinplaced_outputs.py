"""Outputs Inductor would write into a mutated input.

A functional graph with input mutation ends in ``copy_(input, final)``. Inductor's post-grad pass
``reinplace_inplaceable_ops`` then runs a scatter whose base is that input in place, into the input,
and checks only the uses of the input's own storage after it, ignoring those past the epilogue,
where the graph's outputs are read. So an output that *is* such a scatter (an intermediate version
of the input) comes back as the input itself, holding its final value: soak seed 4000778, where
``cat(split(x))`` of an input after ``x[:, 3:4].copy_(...)`` and before ``x[2:].mul_(-1)`` is that
version, and a rewrite to it returned the input (an alias, and the later writes in it). Eager's
output is a fresh tensor, and so is Inductor's as long as something (the ``cat``) copies it.

The pass refuses a program that returns a version of a mutated input at an output where the input
program did not.
"""
from __future__ import annotations

import torch

from eqsat_torch.inductor import compat
from eqsat_torch.lowering.lowered import Unsupported
from eqsat_torch.lowering.symbolic import output_leaves
from eqsat_torch.safety.aliasing import view_base


def refuse_reinplaced_outputs(before: torch.fx.Graph, after: torch.fx.Graph) -> None:
    """Raise :class:`Unsupported` where an output of ``after`` is a version of a mutated input
    (``_versions``) that the same output of ``before`` is not."""
    was, now = _versions(before), _versions(after)
    for i, (a, b) in enumerate(zip(was, now)):
        if b is not None and a != b:
            raise Unsupported(f"output {i} would be input {b!r} itself after Inductor's reinplacing "
                              "(an intermediate version of that mutated input)")


def _versions(graph: torch.fx.Graph) -> list[str | None]:
    """Per output, the mutated input it is an intermediate version of (a view of one included), by
    name; None where it is none."""
    ops = compat.inductor_reinplaceable_ops()
    mutated = {n.args[0] for n in graph.nodes
               if n.op == "call_function" and n.target is torch.ops.aten.copy_.default
               and isinstance(n.args[0], torch.fx.Node) and n.args[0].op == "placeholder"}
    memo: dict[torch.fx.Node, torch.fx.Node | None] = {}

    def input_of(n: torch.fx.Node) -> torch.fx.Node | None:
        """The mutated input whose buffer ``n`` would be written into, following scatter bases."""
        if n in memo:
            return memo[n]
        memo[n] = None
        found = None
        if n.op == "placeholder":
            found = n if n in mutated else None
        elif n.op == "call_function" and n.target in ops:
            for k in ops[n.target]:
                arg = n.args[k] if k < len(n.args) else None
                if isinstance(arg, torch.fx.Node):
                    found = found or input_of(view_base(arg))
        memo[n] = found
        return found

    found = []
    for leaf in output_leaves(graph):
        base = view_base(leaf) if isinstance(leaf, torch.fx.Node) else None
        hit = input_of(base) if base is not None and base.op != "placeholder" else None
        found.append(hit.name if hit is not None else None)
    return found
