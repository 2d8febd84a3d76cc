"""The optimizer as Inductor's post-grad pass: the same lower → saturate → extract → raise on the
functional Aten graphs AOTAutograd produces, forward and backward.

Inductor calls ``post_grad_custom_pre_pass(graph)`` and expects the graph changed in place, so the pass
optimizes a copy and, only when the copy is complete and lints, swaps the body of ``graph`` for it.
Any failure leaves ``graph`` untouched and logs a warning: Inductor compiles what it was given.

Input mutation survives functionalization as an epilogue of ``aten.copy_(input, new_value)`` nodes
after every read. The pass lifts that epilogue off (the new values become extra outputs), optimizes
the functional body, and appends the same copies after the new body, so they still run last.
An in-place view op (``squeeze_``, ``unsqueeze_``, ``t_``: decompositions of 1-D ``linear`` leave them)
whose operand is an intermediate it alone uses only changes that tensor's metadata: it becomes its
functional overload. Mutation anywhere else makes lowering refuse the graph (``Unsupported``).

``Options.post_grad_disabled`` (default: nothing) names rules or families switched off here on top of
``disabled``; a GPU compile (the Triton cost model) leaves pointwise batches to Inductor here as in
the pre-grad pass (``CostModel.batch_pointwise``). Batch fusion and narrow merging used to be off after
autograd, when the cost model charged a copy for every cat input a matmul writes; priced as Inductor
does it (``out=`` into the slice), they pay in backward graphs too (recsys_tower tiny, CPU training
step: 38 → 30 launches).
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
from typing import Any

import torch
from torch.fx.node import map_arg

from eqsat.budget import least_price, price
from eqsat.deadline import Allowance

from eqsat_torch import artifacts, cache
from eqsat_torch.inductor import compat, compose
from eqsat_torch.cache.key import source_hash
from eqsat_torch.safety.context import Context
from eqsat_torch.safety.fallback import kept_original
from eqsat_torch.lowering.symbolic import output_leaves
from eqsat_torch.safety.aliasing import view_base
from eqsat_torch.safety.noop_outputs import refuse_new_merges
from eqsat_torch.safety.reinplaced_outputs import refuse_reinplaced_outputs
from eqsat_torch.options import Options, device_of
from eqsat_torch.report import Report

# Options that cannot change what the pass emits, and why; every other option (a new one included)
# is part of the cache key.
_NOT_OUTPUT_OPTIONS = {
    "inner": "the compiler after the pass", "post_grad": "the pass only runs when it is on",
    "extra_rules": "not fingerprintable: no caching", "cost": "not fingerprintable: no caching",
    "check": "user rules are checked before any pass runs", "cache": "where results are kept, not what they are",
}
_OUTPUT_OPTIONS = tuple(f.name for f in dataclasses.fields(Options) if f.name not in _NOT_OUTPUT_OPTIONS)


class EqsatPostGradPass(compat.CustomGraphPass):
    """``torch._inductor.config.post_grad_custom_pre_pass = EqsatPostGradPass(options)``."""

    def __init__(self, options: Options | None = None, then: tuple = (), reports: list[Report] | None = None,
                 allowance: Allowance | None = None, combo_decides: bool = False):
        options = options or Options()
        self.options = dataclasses.replace(options, disabled=(*options.disabled, *options.post_grad_disabled))
        self.then = then  # passes the user had installed, run after ours
        self.reports = reports if reports is not None else []
        self.allowance = allowance  # the compile's optimizer time, shared with the pre-grad pass
        # combo kernels are ours to decide (``compose``): Inductor's count of each graph's program
        # decides them for that graph's compile
        self.combo_decides = combo_decides

    def uuid(self) -> Any:
        """Stable across processes for the FX graph cache: our sources plus the options that change
        the output. User rules or a custom cost model cannot be fingerprinted: no caching then. (What
        the budget left for this graph is no key: a cached program was found within the budget.)"""
        if self.options.extra_rules or self.options.cost is not None:
            return None
        then = [p.uuid() if hasattr(p, "uuid") else None for p in self.then]
        if None in then:
            return None
        opts = repr([(k, getattr(self.options, k)) for k in _OUTPUT_OPTIONS])
        return hashlib.sha256(f"{source_hash()}|{opts}|{then}|{self.combo_decides}".encode()).hexdigest()

    def __call__(self, graph: torch.fx.Graph) -> None:
        report = optimize_graph_in_place(graph, self.options, self.allowance, cached=True,
                                         combo="decide" if self.combo_decides else "config")
        if self.combo_decides:
            compose.decide_in_compile(report)
        self.reports.append(report)
        for p in self.then:
            p(graph)


def optimize_graph_in_place(graph: torch.fx.Graph, options: Options, allowance: Allowance | None = None,
                            cached: bool = False, combo: bool | str = "config") -> Report:
    """Optimize a post-grad graph in place; on any failure leave it untouched and say why.
    ``cached``: through the persistent cache (``eqsat_torch.cache``), as the pass Inductor runs does.
    ``combo``: as ``pipeline.optimize``'s. All of it (taking the body out, the checks, splicing) is
    spent from ``allowance``."""
    with allowance.deadline() if allowance is not None else contextlib.nullcontext():
        return _optimize_graph_in_place(graph, options, allowance, cached, combo)


def _optimize_graph_in_place(graph: torch.fx.Graph, options: Options, allowance: Allowance | None,
                             cached: bool, combo: bool | str) -> Report:
    try:
        artifacts.graph_before("post_grad", graph)
        why = allowance.short_of(_least_price(len(graph.nodes))) if allowance is not None else None
        if why is not None:
            return _over_budget(graph, allowance, why)
        body, epilogue, inputs = functional_body(graph)
        user = compat.aot_user_outputs(graph)

        def run() -> tuple[torch.fx.GraphModule, Report]:
            from eqsat_torch.pipeline import optimize  # the optimizer's imports (egglog) only when it runs: not on a cache hit
            return optimize(body, inputs, options, user, copied_back=len(epilogue), allowance=allowance,
                            combo=combo, context=Context.capture().for_aten())

        new_gm, report = (cache.optimized("post_grad", body, inputs, options, device_of(inputs),
                                          {"user_outputs": user, "copied_back": len(epilogue), "combo": combo},
                                          run, allowance)
                          if cached else run())
        if new_gm is not body:
            rewritten = _with_body(graph, new_gm.graph, epilogue)
            refuse_new_merges(graph, rewritten, user)
            refuse_reinplaced_outputs(graph, rewritten)
            _replace_body(graph, new_gm.graph, epilogue)
            _keep_user_layouts(graph, user)
            compat.mark_eager_rounding(graph)
    except Exception as e:  # never break a compile over a graph we cannot improve safely
        report = kept_original(e, len(graph.nodes), " post-grad")
    artifacts.graph_after("post_grad", graph, report)
    return report


def _keep_user_layouts(graph: torch.fx.Graph, user: int | None) -> None:
    """A user-visible output that is a piece of a buffer the graph computes keeps eager's strides.
    Inductor gives a user-visible output the strides recorded before the post-grad passes exactly
    where the output is no view, but only their order where it is a view; the buffer under it has a
    flexible layout, and a piece of it can come back as a view of a buffer laid out otherwise (soak
    seed 4000485t: a ``sum`` of shape (2, 12, 2) laid out with strides (2, 4, 1), output 1 a slice of
    it with strides (16, 4, 1) where eager's are (8, 2, 1)). The buffer is pinned to its own strides
    (``compat.realize_to_strides``), so its pieces have eager's."""
    outs = output_leaves(graph)
    visible = outs if user is None else outs[:user]
    for n in visible:
        if not isinstance(n, torch.fx.Node):
            continue
        root = view_base(n)
        val, base = n.meta.get("val"), root.meta.get("val")
        if (root is not n and root.op == "call_function" and isinstance(val, torch.Tensor)
                and isinstance(base, torch.Tensor) and val.numel() < base.numel()):
            compat.realize_to_strides(root)


def _least_price(n: int) -> float:
    """The least the pass costs on a graph of ``n`` nodes where it optimizes anything: taking the
    body out and splicing it back, and the optimizer's cheapest way through it."""
    return price("splice", n) + least_price(n)


def _over_budget(graph: torch.fx.Graph, allowance: Allowance, why: str) -> Report:
    """The compile's optimizer time left cannot pay for the pass (``why``: ``Allowance.short_of``)."""
    n = len(graph.nodes)
    report = Report(graph_nodes=n, budget_seconds=allowance.left(), stop_reason="time budget (splice)")
    report.notes.append(f"budget: the post-grad pass on {n} nodes is {why}; skipped, the graph kept")
    return report


def functional_body(graph: torch.fx.Graph) -> tuple[torch.fx.GraphModule, list[torch.fx.Node], list]:
    """What the pass optimizes, leaving ``graph`` alone: a copy without the input-copy epilogue
    (see ``_lift_epilogue``), sole-use in-place views made functional; the epilogue; the inputs' fake values."""
    body, epilogue = _lift_epilogue(graph)
    _functionalize_sole_use_views(body.graph)
    return body, epilogue, [compat.node_value(n) for n in body.graph.nodes if n.op == "placeholder"]


def _functionalize_sole_use_views(graph: torch.fx.Graph) -> None:
    for n in graph.nodes:
        functional = compat.aten_functional_view(n.target) if n.op == "call_function" else None
        base = n.args[0] if n.args else None
        if (functional is not None and isinstance(base, torch.fx.Node) and base.op == "call_function"
                and len(base.users) == 1):
            n.target = functional


def _is_input_copy(n: torch.fx.Node) -> bool:
    return (n.op == "call_function" and n.target is torch.ops.aten.copy_.default and not n.users
            and isinstance(n.args[0], torch.fx.Node) and n.args[0].op == "placeholder")


def _lift_epilogue(graph: torch.fx.Graph) -> tuple[torch.fx.GraphModule, list[torch.fx.Node]]:
    """A GraphModule of ``graph`` without its trailing input copies, whose output is
    ``(outputs, [copied values])``; and those copy nodes, in order."""
    nodes = list(graph.nodes)
    output = nodes[-1]
    k = len(nodes) - 1
    while k > 0 and _is_input_copy(nodes[k - 1]):
        k -= 1
    epilogue = nodes[k:-1]
    new = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    for n in nodes[:k]:
        env[n] = new.node_copy(n, env.__getitem__)
    sources = [env[c.args[1]] if isinstance(c.args[1], torch.fx.Node) else c.args[1] for c in epilogue]
    new.output((map_arg(output.args[0], env.__getitem__), sources))
    owner = graph.owning_module if graph.owning_module is not None else torch.nn.Module()
    return torch.fx.GraphModule(owner, new), epilogue


def _with_body(graph: torch.fx.Graph, new: torch.fx.Graph, epilogue: list[torch.fx.Node]) -> torch.fx.Graph:
    """A copy of ``graph`` with ``new``'s body (``_replace_body`` on the copy); ``graph`` is left alone."""
    copy, env = torch.fx.Graph(owning_module=graph.owning_module), {}
    copy.output(copy.graph_copy(graph, env))
    _replace_body(copy, new, [env[c] for c in epilogue])
    return copy


def _replace_body(graph: torch.fx.Graph, new: torch.fx.Graph, epilogue: list[torch.fx.Node]) -> None:
    """Swap ``graph``'s nodes for ``new``'s, keeping ``graph``'s placeholders and re-appending the
    input copies after the new body. ``new``'s output is ``(outputs, [copied values])``."""
    new.lint()
    old_output = next(n for n in reversed(graph.nodes) if n.op == "output")
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    old_body = [n for n in graph.nodes if n.op not in ("placeholder", "output")]
    env = dict(zip((n for n in new.nodes if n.op == "placeholder"), placeholders))
    new_output = None
    with graph.inserting_before(old_output):
        for n in new.nodes:
            if n.op == "output":
                new_output = n
            elif n.op != "placeholder":
                env[n] = graph.node_copy(n, env.__getitem__)
        outputs, sources = map_arg(new_output.args[0], env.__getitem__)
        for copy, src in zip(epilogue, sources):
            graph.node_copy(copy, lambda a, c=copy, s=src: s if a is c.args[1] else a)
    old_output.args = (outputs,)
    for n in reversed(old_body):
        graph.erase_node(n)
    graph.lint()
