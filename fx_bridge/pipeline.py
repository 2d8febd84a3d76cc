"""The optimizer on one FX graph: lower → saturate → extract → raise, never worse than the input.

``optimize`` returns the new GraphModule and a :class:`Report`. Anything it cannot do safely raises
:class:`Unsupported` (or another error) and the backend keeps the original graph.
"""
from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from typing import Any, Sequence

import torch

from eqsat.cost import CostModel
from eqsat.egraph import Session
from eqsat.cost import ProgramCost
from eqsat.extract import bottom_up, extract
from eqsat.provenance import rules_used
from eqsat.rule import Rule
from eqsat.serialized import parse
from rules.library import select, shape_rules

from .horizontal import horizontal_unions
from .aliasing import alias_signature, match_aliasing
from .functionalize import functionalize_intermediates
from .lower import Lowered, Unsupported, lower, random_nodes
from .options import Options
from .original import original_program
from .raising import raise_graph, refresh_fake_values
from .report import Report
from .validation import ValidationError, validate  # noqa: F401  (ValidationError: re-exported)

log = logging.getLogger("eqsat")


# The phase-ordering baseline ("greedy" mode) runs one family at a time, in Optimus' order: split-cat
# normalisation first, then batch fusion, then the algebra; each family is saturated, extracted and
# lowered again before the next, so no rewrite can enable one of an earlier family.
GREEDY_ORDER = ("split_cat", "batch", "algebra")


@contextmanager
def _phase(report: Report, name: str):
    t0 = time.perf_counter()
    try:
        yield
    finally:
        report.phase_seconds[name] = report.phase_seconds.get(name, 0.0) + time.perf_counter() - t0


def optimize(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
             options: Options | dict | None = None,
             user_outputs: int | None = None) -> tuple[torch.fx.GraphModule, Report]:
    """Optimize one graph. Raises :class:`Unsupported` when the graph must be left alone.
    ``user_outputs``: how many leading outputs the user sees (None: all; the post-grad pass says
    which outputs of an AOT graph are saved activations or gradients, see ``fx_bridge.aliasing``)."""
    opts = options if isinstance(options, Options) else Options.of(options)
    report = Report(graph_nodes=len(gm.graph.nodes))
    if report.graph_nodes > opts.max_graph_nodes:
        raise Unsupported(f"{report.graph_nodes} nodes > max_graph_nodes={opts.max_graph_nodes}")
    rules = select(opts.families, opts.disabled, opts.extra_rules)
    original = gm
    with _phase(report, "lower"):
        gm = functionalize_intermediates(gm, example_inputs)
        low = lower(gm, example_inputs)
    present = {r.family for r in rules}
    families = [None] if opts.mode == "saturate" else (
        [f for f in GREEDY_ORDER if f in present] + sorted(present - set(GREEDY_ORDER)))
    aliasing = alias_signature(gm, strict_outputs=user_outputs)  # eager's: every round keeps it
    current_gm, current_low = gm, low
    for fam in families:
        fam_rules = rules if fam is None else [r for r in rules if r.family == fam]
        current_gm, changed = _one_round(current_gm, current_low, fam_rules, opts, report, example_inputs,
                                         aliasing, user_outputs)
        report.changed |= changed
        if fam is not None and families[-1] != fam and changed:
            with _phase(report, "lower"):
                current_low = lower(current_gm, example_inputs)
    if not report.changed and not opts.always_raise:
        return original, report
    if opts.validate and current_gm is not original:
        with _phase(report, "validate"):
            validate(original, current_gm, example_inputs, random_nodes(original), report, user_outputs)
    return current_gm, report


def _one_round(gm, low: Lowered, rules: list[Rule], opts: Options, report: Report,
               example_inputs, aliasing: list, user_outputs: int | None) -> tuple[torch.fx.GraphModule, bool]:
    cost = opts.cost or CostModel.for_device(_device_of(example_inputs))
    with _phase(report, "build"):
        session = Session(rules, shape_rules())
        session.commands(low.commands)
        before = _input_cost(session, low, cost)
        inserted: dict[str, str] = {}
        if opts.horizontal and _has_family(rules, "batch"):
            unions = horizontal_unions(low, opts.disabled)
            inserted = unions.inserted
            session.commands(unions)
            for k, v in unions.counts.items():  # groups offered; the extractor decides which stay
                report.rules_fired[k] = report.rules_fired.get(k, 0) + v
    with _phase(report, "saturate"):
        sat = session.saturate(opts.budget)
    report.egraph_sizes.extend(sat.sizes)
    report.stop_reason = sat.stop_reason
    for k, v in sat.fired.items():
        report.rules_fired[k] = report.rules_fired.get(k, 0) + v
    with _phase(report, "extract"):
        view = parse(session.serialize())
        roots = [view.lets[let] for let in low.roots]
        original, fx_of_enode, input_nodes = original_program(low, view)
        ex = extract(view, roots, cost, opts.ilp_seconds, original=original)
    report.extractor, report.ilp_status, report.ilp_gap = ex.extractor, ex.ilp_status, ex.gap
    if not report.cost_before:
        report.cost_before, report.kernels_before = before.cost, before.kernels
    improved = ex.cost < before.cost * (1 - 1e-9)
    if not improved:
        report.cost_after, report.kernels_after = before.cost, before.kernels
        if not opts.always_raise:
            return gm, False
    else:
        report.cost_after, report.kernels_after = ex.cost, ex.after.kernels
        for k, v in rules_used(view, ex.choice, input_nodes, rules, report.rules_fired, inserted).items():
            report.rules_used[k] = report.rules_used.get(k, 0) + v
    with _phase(report, "raise"):
        new_gm = raise_graph(low, view, ex.choice, roots, example_inputs, fx_of_enode)
        try:
            repair = match_aliasing(aliasing, new_gm, low.dialect, user_outputs)
        except Unsupported as e:
            report.notes.append(f"kept the input program: {e}")
            report.cost_after, report.kernels_after = before.cost, before.kernels
            return gm, False
        if repair.copies or repair.views:
            refresh_fake_values(new_gm, example_inputs, low.dialect)
    if repair.copies:  # priced: a copy kernel each, reading and writing the output once
        report.alias_copies += repair.copies
        report.cost_after += cost.copy_cost(repair.copies, repair.copied_bytes)
        report.kernels_after += repair.copies
        if improved and report.cost_after >= before.cost * (1 - 1e-9):
            report.notes.append(f"kept the input program: {repair.copies} output copies needed to alias "
                                "like eager cost more than the rewrite saves")
            report.cost_after, report.kernels_after = before.cost, before.kernels
            report.rules_used.clear()
            if not opts.always_raise:
                return gm, False
            improved = False
    return new_gm, improved


def _input_cost(session: Session, low: Lowered, cost: CostModel) -> ProgramCost:
    """The input program's cost, priced before any rule ran: one e-node per class, so this is the
    program exactly as written (after saturation, classes it shares with rewrites are merged)."""
    view = parse(session.serialize())
    roots = [view.lets[let] for let in low.roots]
    return cost.program_cost(view, bottom_up(view, roots, cost.node_cost), roots)


def _has_family(rules: list[Rule], family: str) -> bool:
    return any(r.family == family for r in rules)


def _device_of(example_inputs: Sequence[Any]) -> str:
    devices = {x.device.type for x in example_inputs if isinstance(x, torch.Tensor)}
    return "cuda" if "cuda" in devices else "cpu"
