"""The optimizer on one FX graph, one straight path: plan → for each part lower → saturate/extract →
raise → aliasing → Inductor decides → validate → assemble; never worse than the input.

``optimize`` returns the new GraphModule and a :class:`Report`. Anything it cannot do safely raises
:class:`Unsupported` (or another error) and the backend keeps the original graph. The plan (which
parts, how they are put back) is ``eqsat_torch.scale.plan``; Inductor's decision is
``eqsat_torch.inductor.decide``; ``optimize_part`` never calls back into either's caller.
"""
from __future__ import annotations

import dataclasses
import functools
import logging
import resource
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import torch

from eqsat import driver
from eqsat.budget import Budget, least_price, price
from eqsat.cost import CostModel, ProgramCost
from eqsat.deadline import Allowance, Deadline, OutOfTime
from eqsat.driver import Built, Extracted, Problem
from eqsat.egraph import Session
from eqsat.partial import Partial, partials
from eqsat.provenance import rules_used
from eqsat.rule import Rule
from eqsat.ops import Ctor
from eqsat.serialized import EGraphView, ENode
from eqsat.terms import Ref
from eqsat.sizes import SizeOverflow
from eqsat_rules.batch import POINTWISE_BATCHES
from eqsat_rules.batch_groups import BatchSource
from eqsat_rules.library import select, shape_rules

from eqsat_torch.safety import equivalence
from eqsat_torch.inductor import compat, decide
from eqsat_torch.safety.aliasing import alias_signature, match_aliasing
from eqsat_torch.lowering.autocast import drop_noop_autocast
from eqsat_torch.safety.context import Context, switched_off
from eqsat_torch.safety.functionalize import functionalize_intermediates
from eqsat_torch.lowering.lower import lower, refuse_functorch
from eqsat_torch.lowering.lowered import Lowered, Unsupported
from eqsat_torch.lowering.random_nodes import random_nodes
from eqsat_torch.options import Options, device_of
from eqsat_torch.scale.plan import Outputs, Part, Plan
from eqsat_torch.raising.raising import raise_graph, refresh_fake_values
from eqsat_torch.report import Report, add_counts, timed
from eqsat_torch.lowering.symbolic import NotForEverySize, UnbackedSize, check_same_output_sizes
from eqsat_torch.inductor.compat import NewGuard
from eqsat_torch.safety.validation import ValidationError, validate  # noqa: F401  (ValidationError: re-exported)

log = logging.getLogger("eqsat")


# The phase-ordering baseline (search="greedy") runs one family at a time, in Optimus' order: split-cat
# normalisation first, then batch fusion, then the algebra; each family is saturated, extracted and
# lowered again before the next, so no rewrite can enable one of an earlier family.
GREEDY_ORDER = ("split_cat", "batch", "algebra")


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
    allowance = allowance or Allowance(opts.seconds)
    if not _affords_anything(allowance, report):
        return gm, report
    report.context_disabled = switched_off(select(opts.families, opts.disabled, opts.extra_rules), ctx,
                                           {x.device.type for x in example_inputs if isinstance(x, torch.Tensor)})
    if report.context_disabled:
        opts = dataclasses.replace(opts, disabled=(*opts.disabled, *report.context_disabled))
    setting = decide.COMBO.set(combo)
    # every phase and round; the checks of what they return (``check``) run in the time they leave
    report.budget_seconds = allowance.left()
    with allowance.deadline(reserve=price("check", len(gm.graph.nodes))) as deadline:
        try:
            new_gm = _optimize_by_parts(gm, example_inputs, opts, report, deadline, Outputs(user_outputs, copied_back))
            if new_gm is not gm:
                with timed(report, "equivalence"):
                    new_gm = equivalence.checked(gm, new_gm, example_inputs, ctx, report, user_outputs)
            if new_gm is not gm:
                compat.keep_dynamo_identity(gm, new_gm)
            return new_gm, report
        finally:
            decide.COMBO.reset(setting)
            report.peak_rss_mb = _peak_rss_mb()
            if deadline.hit:
                report.stop_reason = f"time budget ({deadline.hit})"


def _affords_anything(allowance: Allowance, report: Report) -> bool:
    """Whether the time left pays for the cheapest way through: lowering and raising the graph and
    checking the result (the plan's cuts cost more per node). Asked before anything else runs, so a
    graph far too big for ``seconds=`` costs nothing (the rules are not even compiled)."""
    why = allowance.short_of(least_price(report.graph_nodes))
    if why is None:
        return True
    report.budget_seconds, report.stop_reason = allowance.left(), "time budget (lower)"
    report.notes.append(f"budget: lowering, raising and checking {report.graph_nodes} nodes are {why}; "
                        "skipped, the graph kept")
    return False


def _optimize_by_parts(gm, example_inputs, opts: Options, report: Report, deadline: Deadline,
                       outputs: Outputs) -> torch.fx.GraphModule:
    """Plan, optimize every part the same way, assemble (``eqsat_torch.scale.plan``)."""
    plan = Plan(gm, example_inputs, opts, report, deadline, outputs)
    for part in plan.parts():  # the plan splices each result back before it yields the next part
        part.result = _optimize_kept(part, opts, deadline)
    return plan.gm


def _optimize_kept(part: Part, opts: Options, deadline: Deadline) -> torch.fx.GraphModule:
    """``optimize_part``, or the part's input where the plan says a failure keeps it."""
    if part.clock_first and deadline.out_of_time("regions"):  # not lowered: 1.4 s a window of 8,192 pieces
        part.report.notes.append(f"{part.kept_note}: the time budget ran out before it")
        return part.gm
    if not part.kept_note:
        return optimize_part(part.gm, part.inputs, opts, part.report, deadline, part.outputs)
    try:
        return optimize_part(part.gm, part.inputs, opts, part.report, deadline, part.outputs)
    except Exception as e:  # never worse: this part stays as written
        part.report.notes.append(f"{part.kept_note}: {type(e).__name__}: {e}")
        return part.gm


def optimize_part(gm, example_inputs, opts: Options, report: Report, deadline: Deadline,
                  outputs: Outputs) -> torch.fx.GraphModule:
    """One graph, straight through: lower → saturate/extract (a round a rule family when
    search="greedy") → raise → aliasing → Inductor decides → validate. Never calls the plan."""
    if len(gm.graph.nodes) > opts.max_graph_nodes:  # too big to build at once
        raise Unsupported(f"{len(gm.graph.nodes)} nodes > max_graph_nodes={opts.max_graph_nodes}")
    rules = select(opts.families, opts.disabled, opts.extra_rules)
    original = gm
    n = len(gm.graph.nodes)  # lowering's scan and raising cannot stop: priced before they start
    if not deadline.affords("lower", n, price("raise", n)):
        report.notes.append(deadline.why_not("lower", n))
        return original
    with timed(report, "lower"):
        gm = functionalize_intermediates(drop_noop_autocast(gm), example_inputs)
        try:
            low = lower(gm, example_inputs, deadline, outputs.views_seen)
        except OutOfTime:
            low = None
    if low is None or deadline.out_of_time("lower"):
        report.notes.append("kept the input program: the time budget ran out while lowering")
        return original
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
            with timed(report, "lower"):
                current_low = lower(current_gm, example_inputs, user_outputs=outputs.views_seen)
    if not report.changed and not opts.always_raise:
        return original
    device = decide.probe_device(opts, example_inputs) if report.changed else None
    if device is not None:
        current_gm = decide.inductor_decides(original, current_gm, example_inputs, current_low.dialect, report,
                                              deadline, opts.cost.frozen_params, alternatives, device)
        if current_gm is original:
            return original
    if opts.validate and current_gm is not original:
        with timed(report, "validate"):
            validate(original, current_gm, example_inputs, random_nodes(original), report, outputs.user,
                     layouts=current_low.dialect == "torch")
    return current_gm


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
    add_counts(report.rules_fired, built.offered.counts)  # groups offered; the extractor decides which stay
    report.egraph_sizes.extend(sat.sizes)
    report.stop_reason = sat.stop_reason
    add_counts(report.rules_fired, sat.fired)
    used_before = dict(report.rules_used)  # a round that keeps its input credits no rule
    _record(report, built, ex, rules)
    before, improved = built.before, ex.extraction.improved
    if not improved and (not opts.always_raise or deadline.hit):  # out of time: no raising for nothing
        return Round(gm, False)
    if not deadline.affords("raise", len(gm.graph.nodes)):
        report.notes.append(deadline.why_not("raise", len(gm.graph.nodes)))
        report.cost_after, report.kernels_after, report.rules_used = before.cost, before.kernels, used_before
        return Round(gm, False)
    with timed(report, "raise"):
        try:
            new_gm, repair = _raise_checked(gm, low, ex, ex.extraction.choice, example_inputs, aliasing, outputs)
        except (Unsupported, SizeOverflow, UnbackedSize, NotForEverySize, NewGuard) as e:
            report.notes.append(f"kept the input program: {e}")
            report.cost_after, report.kernels_after = before.cost, before.kernels
            report.rules_used = used_before
            return Round(gm, False)
    if repair.copies:  # priced with the program: a copy may fuse with its producer, as Inductor fuses it
        report.alias_copies += repair.copies
        with timed(report, "price"):
            after = _price_with_copies(cost, low, ex, repair.copied)
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


def _price_with_copies(cost: CostModel, low: Lowered, ex: Extracted,
                       copied: Mapping[int, tuple[int, ...] | None]) -> ProgramCost:
    """The extracted program with the copies ``match_aliasing`` added to its outputs (leaf → None: a
    clone; a dim order: a copy made contiguous in that order between two permutes), priced by the
    cost model as the program it is: a copy may fuse with its producer, as Inductor fuses it. The
    copies are e-nodes over the outputs' classes in a copy of the view: nothing is lowered again."""
    view, choice = ex.view, dict(ex.extraction.choice)
    grown = dataclasses.replace(view, nodes=dict(view.nodes), classes=dict(view.classes), sort=dict(view.sort),
                                shape=dict(view.shape), dtype=dict(view.dtype))

    def add(ctor: str, args: list, like: str, shape) -> str:
        cls = f"alias_copy_{len(grown.nodes)}"
        grown.nodes[cls] = ENode(cls, ctor, cls, args)
        grown.classes[cls], grown.sort[cls], choice[cls] = [cls], "Tensor", cls
        if shape is not None:
            grown.shape[cls] = shape
        if like in view.dtype:
            grown.dtype[cls] = view.dtype[like]
        return cls

    leaves: list[Any] = []
    torch.fx.node.map_aggregate(low.output, leaves.append)
    outputs = [view.lets[x.let] for x in leaves if isinstance(x, Ref)]
    effects = list(ex.input.roots[:len(ex.input.roots) - len(outputs)])
    classes = {i: view.lets[x.let] for i, x in enumerate(leaves) if isinstance(x, Ref)}
    made: dict[tuple, str] = {}  # one class a copy term, as the e-graph would hold it
    for i, order in copied.items():
        root = classes[i]
        if (root, order) not in made:
            made[root, order] = _copy_class(add, view.shape.get(root), root, order)
        classes[i] = made[root, order]
    roots = effects + [classes[i] for i, x in enumerate(leaves) if isinstance(x, Ref)]
    return cost.program_cost(grown, choice, roots)


def _copy_class(add: Callable[[str, list, str, Any], str], shape, root: str, order: tuple[int, ...] | None) -> str:
    if order is None:
        return add(Ctor.CONTIGUOUS, [("class", root)], root, shape)
    back = tuple(sorted(range(len(order)), key=order.__getitem__))
    moved_shape = None if shape is None else tuple(shape[d] for d in order)
    moved = add(Ctor.PERMUTE, [("class", root), ("lit", order)], root, moved_shape)
    copy = add(Ctor.CONTIGUOUS, [("class", moved)], root, moved_shape)
    return add(Ctor.PERMUTE, [("class", copy), ("lit", back)], root, shape)


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
    add_counts(report.rules_used, rules_used(ex.view, x.choice, ex.input.nodes_of_class, rules,
                                              report.rules_fired, built.offered.inserted))


def _peak_rss_mb() -> float:
    """Peak resident memory of this process so far (ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if peak > 2**32 else peak / 1024


def _has_family(rules: list[Rule], family: str) -> bool:
    return any(r.family == family for r in rules)
