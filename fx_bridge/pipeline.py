"""The optimizer on one FX graph: lower → saturate → extract → raise, never worse than the input.

``optimize`` returns the new GraphModule and a :class:`Report`. Anything it cannot do safely raises
:class:`Unsupported` (or another error) and the backend keeps the original graph.
"""
from __future__ import annotations

import contextvars
import dataclasses
import functools
import logging
import resource
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import torch

from eqsat import driver
from eqsat.budget import Budget, price
from eqsat.cost import CostModel, ProgramCost
from eqsat.deadline import Allowance, Deadline, OutOfTime
from eqsat.driver import Built, Extracted, Problem
from eqsat.egraph import Session
from eqsat.partial import Partial, partials
from eqsat.provenance import rules_used
from eqsat.rule import Rule
from eqsat.serialized import EGraphView
from eqsat.sizes import SizeOverflow
from eqsat_rules.batch import POINTWISE_BATCHES
from eqsat_rules.batch_groups import BatchSource
from eqsat_rules.library import select, shape_rules

from eqsat_torch.safety import equivalence
from eqsat_torch.inductor import probe, compat, verify
from eqsat_torch.safety.aliasing import alias_signature, match_aliasing
from eqsat_torch.lowering.autocast import drop_noop_autocast
from eqsat_torch.scale.clusters import optimize_clusters
from eqsat_torch.safety.context import Context, switched_off
from eqsat_torch.safety.functionalize import functionalize_intermediates
from eqsat_torch.lowering.lower import lower, refuse_functorch
from eqsat_torch.lowering.lowered import Lowered, Unsupported
from eqsat_torch.lowering.random_nodes import random_nodes
from eqsat_torch.options import Options, device_of
from eqsat_torch.scale.regions import REGION_NODES, optimize_regions, windows
from eqsat_torch.raising.raising import raise_graph, refresh_fake_values
from eqsat_torch.report import Report
from eqsat_torch.lowering.symbolic import NotForEverySize, UnbackedSize, check_same_output_sizes
from eqsat_torch.inductor.compat import NewGuard
from eqsat_torch.safety.validation import ValidationError, validate  # noqa: F401  (ValidationError: re-exported)

log = logging.getLogger("eqsat")


# The phase-ordering baseline (search="greedy") runs one family at a time, in Optimus' order: split-cat
# normalisation first, then batch fusion, then the algebra; each family is saturated, extracted and
# lowered again before the next, so no rewrite can enable one of an earlier family.
GREEDY_ORDER = ("split_cat", "batch", "algebra")

# Inductor's lowering and scheduling of a graph (``probe``) take about this long per node:
# H200 host, a 231-node Dynamo graph 1.6 s, its post-grad graph 0.7 s. Verification is skipped where
# the budget left cannot pay for both candidates.
VERIFY_SECONDS_PER_NODE = 0.007

# Beyond the input and the optimizer's program, Inductor measures at most this many programs with
# some of the rewrites put back (``eqsat.partial``): where ours launches no fewer than the input, all
# of them (within seconds=); else only while measuring has taken at most this share of the graph's
# compile so far (optimizer and measuring): each costs one more lowering.
VERIFY_PARTIALS = 4
VERIFY_SHARE = 0.5

# Inductor's combo kernels in the compile the graph being optimized goes to: True/False, or "decide"
# (``optimize``'s ``combo``); read where Inductor decides, set for one ``optimize`` call.
_COMBO: contextvars.ContextVar[bool | str] = contextvars.ContextVar("eqsat_combo_kernels", default=False)

# Cutting a graph into regions (``split_module``) and inlining them back take about this long per node
# (this 2-core box: 3.5 s for the 16k nodes of an 8,192-piece split-cat); a budget that cannot pay for
# it optimizes the graph whole, where the clock stops lowering or building and the input is kept.
REGION_SECONDS_PER_NODE = 0.0003


@contextmanager
def _phase(report: Report, name: str):
    t0 = time.perf_counter()
    try:
        yield
    finally:
        _add_counts(report.phase_seconds, {name: time.perf_counter() - t0})


def optimize(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
             options: Options | dict | None = None,
             user_outputs: int | None = None, frozen_params: bool = False,
             train_step: bool = False, copied_back: int = 0,
             allowance: Allowance | None = None, combo: bool | str = "config",
             context: Context | None = None) -> tuple[torch.fx.GraphModule, Report]:
    """Optimize one graph. Raises :class:`Unsupported` when the graph must be left alone.
    ``user_outputs``: how many leading outputs the user sees (None: all; the post-grad pass says
    which outputs of an AOT graph are saved activations or gradients, see ``eqsat_torch.safety.aliasing``;
    ``copied_back``: how many trailing outputs it copies into mutated inputs). ``allowance``: the
    compile's optimizer time this graph draws from (None: ``seconds=`` for this graph alone).
    ``frozen_params``: the compiler after us folds parameters into constants (Inductor's
    ``freezing``), so a cat of weights is priced as free. ``train_step``: a backward will be derived
    from this graph (pre-grad, grad enabled), so it is priced too (``CostModel.train_step``). Both
    are facts of the compile: they are switched on in the default and in a user's cost model alike.
    ``combo``: Inductor's combo kernels in the compile after us: True/False, "config" (Inductor's
    config as it is now: a post-grad pass runs inside that compile), or "decide" (Inductor's count
    decides them with the program: ``Report.combo_kernels``); the cost model prices them unless off
    (``CostModel.combo_kernels``: they nearly always go on where Inductor decides).
    ``context``: the ambient state the graph means something in (None: captured now, as the
    pre-grad pass runs where Dynamo guarded it); it switches rules off and the result is checked in
    it (``eqsat_torch.safety.equivalence``) before it is returned."""
    ctx = context or Context.capture()
    opts = options if isinstance(options, Options) else Options.of(options)
    refuse_functorch(gm)
    base = opts.cost or CostModel.for_device(device_of(example_inputs))
    combo = compat.inductor_config_value("combo_kernels") if combo == "config" else combo
    cost = dataclasses.replace(base, frozen_params=base.frozen_params or frozen_params,
                               train_step=base.train_step or train_step,
                               combo_kernels=base.combo_kernels or combo in (True, "decide"))
    if cost != opts.cost:
        opts = dataclasses.replace(opts, cost=cost)
    if not cost.batch_pointwise:
        opts = dataclasses.replace(opts, disabled=(*opts.disabled, *POINTWISE_BATCHES))
    report = Report(graph_nodes=len(gm.graph.nodes))
    report.context_disabled = switched_off(select(opts.families, opts.disabled, opts.extra_rules), ctx,
                                           {x.device.type for x in example_inputs if isinstance(x, torch.Tensor)})
    if report.context_disabled:
        opts = dataclasses.replace(opts, disabled=(*opts.disabled, *report.context_disabled))
    setting = _COMBO.set(combo)
    with (allowance or Allowance(opts.seconds)).deadline() as deadline:  # every phase and round
        report.budget_seconds = deadline.seconds
        try:
            new_gm, report = _optimize(gm, example_inputs, opts, report, deadline, Outputs(user_outputs, copied_back))
            if new_gm is not gm:
                with _phase(report, "equivalence"):
                    new_gm = equivalence.checked(gm, new_gm, example_inputs, ctx, report, user_outputs)
            if new_gm is not gm:
                compat.keep_dynamo_identity(gm, new_gm)
            return new_gm, report
        finally:
            _COMBO.reset(setting)
            report.peak_rss_mb = _peak_rss_mb()
            if deadline.hit:
                report.stop_reason = f"time budget ({deadline.hit})"


@dataclass(frozen=True)
class Outputs:
    """Which output leaves are what (see ``optimize``): the user's first, values copied back last."""

    user: int | None = None
    copied_back: int = 0


def _optimize(gm, example_inputs, opts: Options, report: Report, deadline: Deadline,
              outputs: Outputs, whole: bool = False) -> tuple[torch.fx.GraphModule, Report]:
    if not whole and len(gm.graph.nodes) > REGION_NODES and opts.search == "saturate" and not outputs.copied_back:
        return _by_units(gm, example_inputs, opts, report, deadline, outputs)
    if len(gm.graph.nodes) > opts.max_graph_nodes:  # too big to build at once
        raise Unsupported(f"{len(gm.graph.nodes)} nodes > max_graph_nodes={opts.max_graph_nodes}")
    rules = select(opts.families, opts.disabled, opts.extra_rules)
    original = gm
    n = len(gm.graph.nodes)  # lowering's scan and raising cannot stop: priced before they start
    if not deadline.affords("lower", n, price("raise", n)):
        report.notes.append(deadline.why_not("lower", n))
        return original, report
    with _phase(report, "lower"):
        gm = functionalize_intermediates(drop_noop_autocast(gm), example_inputs)
        try:
            low = lower(gm, example_inputs, deadline)
        except OutOfTime:
            low = None
    if low is None or deadline.out_of_time("lower"):
        report.notes.append("kept the input program: the time budget ran out while lowering")
        return original, report
    present = {r.family for r in rules}
    families = [None] if opts.search == "saturate" else (
        [f for f in GREEDY_ORDER if f in present] + sorted(present - set(GREEDY_ORDER)))
    aliasing = alias_signature(gm, None, outputs.user, outputs.copied_back)  # eager's: every round keeps it
    current_gm, current_low = gm, low
    alternatives = None  # the programs between input and ours, from the one round of saturate mode
    for fam in families:
        fam_rules = rules if fam is None else [r for r in rules if r.family == fam]
        try:
            result = _one_round(current_gm, current_low, fam_rules, opts, report, example_inputs,
                                aliasing, outputs, deadline)
        except OutOfTime as e:  # nothing of this round is usable; earlier rounds' results stay
            report.notes.append(f"kept this round's input program: {e}")
            break
        current_gm = result.gm
        report.changed |= result.changed
        alternatives = result.partials if fam is None else None
        if fam is not None and families[-1] != fam and result.changed:
            with _phase(report, "lower"):
                current_low = lower(current_gm, example_inputs)
    if not report.changed and not opts.always_raise:
        return original, report
    if report.changed and _verifies(opts, example_inputs):
        current_gm = _inductor_decides(original, current_gm, example_inputs, current_low.dialect, report, deadline,
                                       opts.cost.frozen_params, alternatives)
        if current_gm is original:
            return original, report
    if opts.validate and current_gm is not original:
        with _phase(report, "validate"):
            validate(original, current_gm, example_inputs, random_nodes(original), report, outputs.user,
                     layouts=current_low.dialect == "torch")
    return current_gm, report


def _by_units(gm, example_inputs, opts: Options, report: Report, deadline: Deadline,
              outputs: Outputs) -> tuple[torch.fx.GraphModule, Report]:
    """A graph larger than ``REGION_NODES``: its wide split/cat clusters optimized as units
    (``eqsat_torch.scale.clusters``), then what is left whole when it is small enough, else window by
    window (``eqsat_torch.scale.regions``). Every unit, window or pass keeps its result as it finishes."""
    one = _region_optimizer(opts, deadline)
    t0 = time.perf_counter()
    try:
        if not deadline.affords("units", len(gm.graph.nodes)):  # cutting and splicing cannot stop
            raise OutOfTime(deadline.why_not("units", len(gm.graph.nodes)))
        gm, units, replaced = optimize_clusters(gm, one)
    except Exception as e:  # e.g. a size Dynamo left symbolic: the windows below still run
        report.notes.append(e.args[0] if isinstance(e, OutOfTime) else f"no split/cat units: {type(e).__name__}: {e}")
        units, replaced = [], 0
    _merge(report, units)
    inside = sum(sum(r.phase_seconds.values()) for r in units)  # "units": cutting and splicing them
    _add_counts(report.phase_seconds, {"units": time.perf_counter() - t0 - inside})
    if replaced:
        report.notes.append(f"{replaced} split/cat clusters optimized as units ({len(units)} structures); "
                            f"{len(gm.graph.nodes)} nodes left")
    if deadline.out_of_time("regions"):  # lowering 15k nodes alone took 13 s on a loaded box
        report.notes.append("the rest of the graph kept as it is: the time budget ran out before it")
        return gm, report
    if len(gm.graph.nodes) <= REGION_NODES:
        rest = Report(graph_nodes=len(gm.graph.nodes))
        try:
            gm, rest = _optimize(gm, example_inputs, opts, rest, deadline, outputs, whole=True)
        except Exception as e:  # the clusters' results stay
            if not report.changed:
                raise
            rest.notes.append(f"the graph after its clusters kept as it is: {type(e).__name__}: {e}")
        _merge(report, [rest])
        report.stop_reason = rest.stop_reason or report.stop_reason
        return gm, report
    fits = deadline.left() > REGION_SECONDS_PER_NODE * len(gm.graph.nodes)  # before windows: it cannot stop
    part = windows(gm, REGION_NODES) if fits else {}
    if (fits and len(set(part.values())) > 1
            and not any(n.op == "get_attr" for n in gm.graph.nodes)):  # inlined attributes get new names
        return _by_regions(gm, part, opts, report, deadline)
    if not report.changed and len(gm.graph.nodes) <= opts.max_graph_nodes:
        return _optimize(gm, example_inputs, opts, report, deadline, outputs, whole=True)
    if not report.changed:
        report.notes.append(f"kept the input program: no unit or region finished, and {len(gm.graph.nodes)} "
                            f"nodes > max_graph_nodes={opts.max_graph_nodes} cannot be built at once")
    return gm, report


def _region_optimizer(opts: Options, deadline: Deadline):
    """``optimize_one`` of a region or unit: its result, or its input when it fails or the clock
    stopped before it (never worse)."""
    def one(sub, inputs):
        r = Report(graph_nodes=len(sub.graph.nodes))
        if deadline.out_of_time("regions"):  # not even lowered: 1.4 s a window of 8,192 pieces' graph
            r.notes.append("region kept its input: the time budget ran out before it")
            return sub, r
        try:
            return _optimize(sub, inputs, opts, r, deadline, Outputs(), whole=True)
        except Exception as e:  # never worse: this window stays as written
            r.notes.append(f"region kept its input: {type(e).__name__}: {e}")
            return sub, r
    return one


def _by_regions(gm, part: dict, opts: Options, report: Report, deadline: Deadline) -> tuple[torch.fx.GraphModule, Report]:
    """A graph larger than ``REGION_NODES``, optimized window by window (``eqsat_torch.scale.regions``): each
    window keeps its result, a window that fails or that the clock stops keeps its input."""
    new_gm, regions = optimize_regions(gm, part, _region_optimizer(opts, deadline))
    _merge(report, regions)
    report.stop_reason = "; ".join(dict.fromkeys(r.stop_reason for r in regions if r.stop_reason))
    report.notes.append(f"optimized as {len(regions)} regions of at most {REGION_NODES} nodes each, "
                        f"{sum(r.changed for r in regions)} changed")
    if not report.changed and not opts.always_raise:
        return gm, report
    return new_gm, report


def _merge(report: Report, regions: list[Report]) -> None:
    """The regions' counts, sizes, costs and notes added into ``report``."""
    for r in regions:
        for into, more in ((report.rules_fired, r.rules_fired), (report.rules_used, r.rules_used),
                           (report.phase_seconds, r.phase_seconds)):
            _add_counts(into, more)
        report.egraph_sizes.extend(r.egraph_sizes)
        report.changed |= r.changed
        report.cost_before += r.cost_before
        report.cost_after += r.cost_after
        report.kernels_before += r.kernels_before
        report.kernels_after += r.kernels_after
        report.alias_copies += r.alias_copies
        report.notes.extend(r.notes)
    measured = [r for r in regions if r.inductor_launches]  # each region or unit was decided on its own
    before = len(report.inductor_winner.split(", ")) if report.inductor_winner else 0
    for k, r in enumerate(measured, before):
        prefix = f"{k}/" if len(measured) + before > 1 else ""
        report.inductor_launches.update({prefix + name: v for name, v in r.inductor_launches.items()})
    report.inductor_winner = ", ".join(w for w in (report.inductor_winner, *(r.inductor_winner for r in measured)) if w)


def _verifies(opts: Options, example_inputs: Sequence[Any]) -> bool:
    """``verify=None``: Inductor decides on a GPU compile; ``True`` also where the GPU cost model
    prices a CPU graph (Inductor then schedules it for an H200 it has not got)."""
    wanted = device_of(example_inputs) == "cuda" if opts.verify is None else opts.verify
    return wanted and opts.cost.gpu and probe.available("cuda")


def _inductor_decides(original, optimized, example_inputs, dialect: str, report: Report,
                      deadline: Deadline, frozen: bool = False,
                      alternatives: Callable[[int], list[Alternative]] | None = None) -> torch.fx.GraphModule:
    """Our program, the input, or one between them (ours with some rewrites put back,
    ``alternatives``), whichever Inductor's own lowering and scheduler count the fewest launches for
    (``eqsat_torch.inductor.verify``): the model proposes, Inductor decides (issue 29). With no time left
    nothing is measured, and the note says so; the programs between are measured within ``seconds=``
    where ours lost, else only while the measuring stays within ``VERIFY_SHARE`` of the compile."""
    per_node = VERIFY_SECONDS_PER_NODE * len(optimized.graph.nodes)
    if deadline.out_of_time("verify", per_node + VERIFY_SECONDS_PER_NODE * len(original.graph.nodes)):
        report.notes.append("not measured by Inductor: too little of the time budget is left")
        return optimized
    before, start = report.optimizer_seconds, time.perf_counter()

    def keep_going(measured: dict) -> bool:
        """Within ``seconds=``; and ours lost to the input (the programs between are what can still
        beat Inductor alone), or measuring is within its share of the compile."""
        if deadline.left() <= per_node:  # seconds= (not marked as the budget's stop: the program is decided)
            return False
        ours, base = measured.get("optimized"), measured.get(verify.INPUT)
        Launches = probe.Launches
        lost = not isinstance(ours, Launches) or (isinstance(base, Launches)
                                                  and verify.best_key(ours, combo) >= verify.best_key(base, combo))
        spent = time.perf_counter() - start
        return lost or spent <= VERIFY_SHARE * (before + spent)

    combo = None if _COMBO.get() == "decide" else bool(_COMBO.get())
    with _phase(report, "verify"):
        between = {a.name: a for a in (alternatives(VERIFY_PARTIALS) if alternatives else [])}
        choice = verify.choose([(verify.INPUT, original), ("optimized", optimized),
                                *((name, a.make) for name, a in between.items())],
                               lambda g: _count(g, example_inputs, dialect, frozen, combo), keep_going, combo)
    report.inductor_launches = {name: m if isinstance(m, str) else (m.combined if combo else m).total
                                for name, m in choice.measured.items()}
    record_combo(report, choice, combo)
    report.inductor_launches.update({name: f"same as {other}" for name, other in choice.same_as.items()})
    report.inductor_launches.update({name: "not measured: seconds= or the share of compile time for measuring ran out"
                                     for name in choice.not_measured})
    report.inductor_winner = choice.name
    report.notes.append(f"Inductor decides: {choice.note}")
    if choice.name == verify.INPUT:
        report.changed, report.rules_used, report.alias_copies = False, {}, 0
        report.cost_after, report.kernels_after = report.cost_before, report.kernels_before
        return original
    if choice.name in between:
        chosen = between[choice.name]
        report.rules_used = dict(chosen.partial.rules_used)
        report.cost_after, report.kernels_after = chosen.price()
        report.alias_copies = chosen.alias_copies
    return choice.gm


def _count(gm, example_inputs, dialect: str, frozen: bool, combo: bool | None) -> probe.Launches:
    """Inductor's count of ``gm``, with combo kernels too unless they are off."""
    launches = probe.count_launches(gm, example_inputs, "cuda", dialect, frozen, combo=combo is not False)
    if combo and launches.combined is None:
        raise probe.ProbeError("combo kernels are on but this torch's cannot be counted")
    return launches


def record_combo(report: Report, choice: verify.Choice, combo: bool | None) -> None:
    """Whether the compile uses combo kernels, and the chosen program's launches without and with
    them (``Report.combo_kernels``, ``Report.combo_launches``)."""
    counted = choice.measured.get(choice.name)
    if isinstance(counted, probe.Launches) and counted.combined is not None:
        report.combo_launches = {"without": counted.total, "with": counted.combined.total}
    if combo is not None or isinstance(counted, probe.Launches):  # else left for the backend
        report.combo_kernels = choice.combo if combo is None else combo


@dataclass
class Round:
    """One build → saturate → extract → raise round: the graph it ends with, whether it changed, and
    (when it did) the programs between its input and its result (``Alternative``; the argument: how
    many at most)."""

    gm: torch.fx.GraphModule
    changed: bool
    partials: Callable[[int], list[Alternative]] | None = None


@dataclass
class Alternative:
    """A program between a round's input and its result (``eqsat.partial``), raised only when
    ``make`` is called (Inductor may never get to measure it)."""

    name: str
    partial: Partial
    raise_it: Callable[[Partial], tuple[torch.fx.GraphModule, int]]  # the GraphModule, its alias copies
    price_it: Callable[[Partial], ProgramCost]
    alias_copies: int = 0

    def make(self) -> torch.fx.GraphModule:
        gm, self.alias_copies = self.raise_it(self.partial)
        return gm

    def price(self) -> tuple[float, int]:
        """The cost model's price of the program and its launches (what the report predicts)."""
        cost = self.price_it(self.partial)
        return cost.cost, cost.kernels


def _one_round(gm, low: Lowered, rules: list[Rule], opts: Options, report: Report,
               example_inputs, aliasing: list, outputs: Outputs, deadline: Deadline) -> Round:
    cost = opts.cost
    if opts.horizontal and not deadline.affords("horizontal", len(gm.graph.nodes)):  # cannot stop: priced
        report.notes.append(deadline.why_not("horizontal", len(gm.graph.nodes)))
        opts = dataclasses.replace(opts, horizontal=False)
    problem = problem_of(low, rules, opts)  # its candidates are found while building (the build phase)
    res = driver.optimize(problem, rules, cost, budget_of(opts), shape_rules(), deadline, report.phase_seconds)
    built, sat, ex = res.built, res.saturation, res.extracted
    _add_counts(report.rules_fired, built.offered.counts)  # groups offered; the extractor decides which stay
    report.egraph_sizes.extend(sat.sizes)
    report.stop_reason = sat.stop_reason
    _add_counts(report.rules_fired, sat.fired)
    used_before = dict(report.rules_used)  # a round that keeps its input credits no rule
    _record(report, built, ex, rules)
    before, improved = built.before, ex.extraction.improved
    if not improved and (not opts.always_raise or deadline.hit):  # out of time: no raising for nothing
        return Round(gm, False)
    if not deadline.affords("raise", len(gm.graph.nodes)):
        report.notes.append(deadline.why_not("raise", len(gm.graph.nodes)))
        report.cost_after, report.kernels_after, report.rules_used = before.cost, before.kernels, used_before
        return Round(gm, False)
    with _phase(report, "raise"):
        try:
            new_gm, repair = _raise_checked(gm, low, ex, ex.extraction.choice, example_inputs, aliasing, outputs)
        except (Unsupported, SizeOverflow, UnbackedSize, NotForEverySize, NewGuard) as e:
            report.notes.append(f"kept the input program: {e}")
            report.cost_after, report.kernels_after = before.cost, before.kernels
            report.rules_used = used_before
            return Round(gm, False)
    if repair.copies:  # priced as written: a copy may fuse with its producer, as Inductor fuses it
        report.alias_copies += repair.copies
        with _phase(report, "price"):
            after = build(lower(new_gm, example_inputs), [], opts, cost).before
        report.cost_after, report.kernels_after = after.cost, after.kernels
        if improved and after.cost >= before.cost * (1 - 1e-9):
            report.notes.append(f"kept the input program: {repair.copies} output copies needed to alias "
                                "like eager cost more than the rewrite saves")
            report.rules_used = used_before
            if not opts.always_raise:
                report.cost_after, report.kernels_after = before.cost, before.kernels
                return Round(gm, False)
            improved = False
    if not improved:
        return Round(new_gm, improved)
    return Round(new_gm, improved, functools.partial(_alternatives, gm, low, ex, built.offered.inserted, rules,
                                                     dict(report.rules_fired), example_inputs, aliasing, outputs,
                                                     cost))


def _raise_checked(gm, low: Lowered, ex: Extracted, choice, example_inputs, aliasing: list, outputs: Outputs):
    """The program ``choice`` raised, its output sizes checked against ``gm``'s and its outputs
    aliasing as eager's (``match_aliasing``): the GraphModule and the repair made."""
    new_gm = raise_program(low, ex, example_inputs, choice)
    if low.sizes:
        check_same_output_sizes(gm, new_gm)
    repair = match_aliasing(aliasing, new_gm, low.dialect, outputs.user, outputs.copied_back)
    if repair.copies or repair.views:
        refresh_fake_values(new_gm, example_inputs, low.dialect)
    return new_gm, repair


def _alternatives(gm, low: Lowered, ex: Extracted, inserted: Mapping[str, str], rules: list[Rule], fired: dict,
                  example_inputs, aliasing: list, outputs: Outputs, cost: CostModel, most: int) -> list[Alternative]:
    """At most ``most`` programs between the round's input and its result (``eqsat.partial``)."""
    found = partials(ex.view, ex.input.roots, ex.extraction.choice, ex.input.choice, ex.input.nodes_of_class,
                     rules, fired, inserted, most)

    def raise_it(p: Partial) -> tuple[torch.fx.GraphModule, int]:
        new_gm, repair = _raise_checked(gm, low, ex, p.choice, example_inputs, aliasing, outputs)
        return new_gm, repair.copies

    def price_it(p: Partial) -> ProgramCost:
        return cost.program_cost(ex.view, p.choice, ex.input.roots)

    return [Alternative(p.name, p, raise_it, price_it) for p in found]


def price_input(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], cost: CostModel) -> tuple[Built, Lowered]:
    """The graph lowered as ``optimize`` lowers it, in a session with no rules; ``built.before`` is
    its price before any rule runs (what the calibration compares with Inductor)."""
    low = lower(functionalize_intermediates(drop_noop_autocast(gm), example_inputs), example_inputs)
    return build(low, [], Options(), cost), low


# The engine's work limits the options do not set (``eqsat.budget.Budget``: analysis passes, ILP
# columns and nodes, hill-climb steps).
WORK = Budget()


def budget_of(opts: Options) -> Budget:
    """The engine's work budget: ``WORK`` with the options' iterations, e-graph rows and seconds."""
    return dataclasses.replace(WORK, iterations=opts.iterations, nodes=opts.max_nodes, seconds=opts.seconds,
                               ilp_seconds=opts.ilp_seconds)


def problem_of(low: Lowered, rules: list[Rule], opts: Options) -> Problem:
    """The lowered graph as the engine's problem, with the batch fusions as a candidate source when
    the batch family runs."""
    problem = _input_of(low)
    if opts.horizontal and _has_family(rules, "batch"):
        problem.candidates = [BatchSource(low, opts.disabled)]
    return problem


def build(low: Lowered, rules: list[Rule], opts: Options, cost: CostModel,
          deadline: Deadline | None = None) -> Built:
    """A session with the rules and the input program, priced as written (``Built.before``), plus the
    batch candidates when the batch family runs (``eqsat.driver.build``)."""
    return driver.build(problem_of(low, rules, opts), rules, cost, shape_rules(), deadline)


def extract_program(built: Built, low: Lowered, cost: CostModel, opts: Options,
                    deadline: Deadline | None = None) -> Extracted:
    """The cheapest program in the saturated e-graph; the input program when nothing is cheaper."""
    return driver.extract(built, _input_of(low), cost, budget_of(opts), deadline)


def view_of(session: Session, low: Lowered) -> EGraphView:
    """The e-graph as extraction reads it (a symbolic graph's shapes at Dynamo's size hints)."""
    return driver.view_of(session, _input_of(low))


def _input_of(low: Lowered) -> Problem:
    return Problem(low.program, low.originals, low.roots, sizes=low.sizes.table if low.sizes else None)


def raise_program(low: Lowered, ex: Extracted, example_inputs, choice=None) -> torch.fx.GraphModule:
    """The chosen program (or ``choice``, another program of the same e-graph) as a GraphModule;
    input e-nodes keep their FX node's name and metadata."""
    fx_of_enode: dict[str, torch.fx.Node] = {}
    for let, enode in ex.input.enode_of_let.items():
        if let in low.node_of_let:
            fx_of_enode.setdefault(enode, low.node_of_let[let])
    return raise_graph(low, ex.view, ex.extraction.choice if choice is None else choice, ex.input.roots,
                       example_inputs, fx_of_enode)


def _record(report: Report, built: Built, ex: Extracted, rules: list[Rule]) -> None:
    """Costs before/after (the first round's input is the graph's), extractor and the rules used."""
    x = ex.extraction
    report.extractor, report.ilp_status, report.ilp_gap = x.extractor, x.ilp_status, x.gap
    if x.search_cut:
        report.notes.append("the fusion search stopped at its work limit (Budget.search_steps) or the "
                            "time budget: a larger budget may find a cheaper program")
    if not report.cost_before:
        report.cost_before, report.kernels_before = built.before.cost, built.before.kernels
    if not x.improved:
        report.cost_after, report.kernels_after = built.before.cost, built.before.kernels
        return
    report.cost_after, report.kernels_after = x.cost, x.after.kernels
    _add_counts(report.rules_used, rules_used(ex.view, x.choice, ex.input.nodes_of_class, rules,
                                              report.rules_fired, built.offered.inserted))


def _add_counts(into: dict, more: Mapping) -> None:
    """``into[k] += more[k]`` for every key (report fields stay plain dicts)."""
    total = Counter(into)
    total.update(more)
    into.update(total)


def _peak_rss_mb() -> float:
    """Peak resident memory of this process so far (ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if peak > 2**32 else peak / 1024


def _has_family(rules: list[Rule], family: str) -> bool:
    return any(r.family == family for r in rules)
