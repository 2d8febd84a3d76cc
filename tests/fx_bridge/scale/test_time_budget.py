"""``seconds=`` bounds the whole optimizer, and what it stops with is correct and no costlier.

The wide split→sigmoid→cat on 2,048 pieces (with its horizontal candidates) takes ~6 s to lower,
build, saturate and extract on this 2-core box idle, and two to three times that under a full test
run's load. A fixed budget either let it finish or cut it before its first iteration, depending on the
load; so the budget follows the phases of the uncut run just made in the same process: the optimizer
must stop on time, keep the rewrites found so far (anytime), and extract the best program among them.
"""
import re
import time

import pytest
import torch

from bench.scripts.pipeline_scale import split_pointwise_cat
from eqsat.cost import CostModel
from eqsat.driver import EXTRACT_SHARE
from eqsat_torch import optimize
from eqsat_torch.inductor import compat
from eqsat_torch.lowering.lower import lower
from eqsat_torch.options import Options
from eqsat_torch.pipeline import build

# The budgeted run should stop halfway through the uncut run's rewriting: between the end of the input's
# analysis (the first iteration's rewrites, cat_split_all among them, are found right after it and kept
# even when the clock stops the analysis that follows) and saturation. A share of the whole uncut run
# (0.85) stopped it nowhere once building got faster: saturation ended before 75 % of that budget.
# Halfway (0.5) left too little margin once the build got faster again (clean-clone CI with two xdist
# workers: a budget of 1.40 s against an uncut run of 1.37 s); a quarter of the way keeps the premise.
REWRITING_SHARE = 0.25


def _size_reads(monkeypatch) -> list[float]:
    """perf_counter() at each e-graph size the saturation reads: after the input's analysis, then
    after each iteration."""
    from eqsat.egraph import Session

    reads, size = [], Session.size
    monkeypatch.setattr(Session, "size", lambda self: reads.append(time.perf_counter()) or size(self))
    return reads


def _slack(seconds: float) -> float:
    return 0.1 * seconds + 0.5  # 10 %, plus one egglog command that cannot be interrupted


def _price(gm, inputs) -> float:
    """The program cost of ``gm`` as written, lowered and priced afresh (no rules)."""
    gm = torch.fx.GraphModule(gm, gm.graph)
    compat.propagate_fake(gm, inputs)
    for n in gm.graph.nodes:
        n.meta["example_value"] = n.meta.get("val")
    cost = CostModel.for_device("cpu")
    return build(lower(gm, inputs), [], Options(), cost).before.cost


@pytest.mark.slow  # timing-dependent: the budget follows this machine's speed, measured just before
@pytest.mark.full  # out of CI: since split/cat units, the graph often saturates before the derived budget
def test_seconds_bounds_a_graph_that_takes_longer_and_the_partial_result_is_correct(monkeypatch):
    gm, inputs = split_pointwise_cat(2048, identity_cat=True)
    expected = gm(*inputs)
    reads = _size_reads(monkeypatch)
    t0 = time.perf_counter()
    _, uncut = optimize(gm, inputs, {"seconds": 120.0})
    uncut_seconds = time.perf_counter() - t0
    assert uncut.stop_reason == "saturated" and len(reads) > 2, uncut.summary()
    stop_at = (reads[0] - t0) + REWRITING_SHARE * (reads[-1] - reads[0])
    seconds = stop_at / (1 - EXTRACT_SHARE)  # building and saturating stop at 1 - EXTRACT_SHARE of it
    assert seconds < uncut_seconds, (seconds, uncut.phase_seconds)
    t0 = time.perf_counter()
    new_gm, report = optimize(gm, inputs, {"seconds": seconds})
    elapsed = time.perf_counter() - t0
    assert elapsed <= seconds + _slack(seconds), (elapsed, seconds, report.phase_seconds)
    assert report.stop_reason.startswith("time budget ("), report.stop_reason
    assert report.peak_rss_mb > 0
    # anytime: the rewrite found before the budget ran out is kept, not thrown away
    assert report.changed and "cat_split_all" in report.rules_used, report.summary()
    torch.testing.assert_close(new_gm(*inputs), expected)
    assert _price(new_gm, inputs) < _price(gm, inputs)


# 1.5 s for 8,192 pieces: lowering alone (which cannot stop) takes about a third of it. A 0.3 s case on
# 2,048 pieces was dropped: lowering took 0.2-0.4 s alone and 1.44 s once late in a full suite, so it
# timed lowering, not the budget.
@pytest.mark.slow  # timing-dependent: a clean clone's CI run under load overshot by 0.14 s (build 1.3 s)
@pytest.mark.parametrize("seconds, pieces", [(1.5, 8192)])
def test_a_budget_too_short_for_the_whole_graph_stops_in_time_with_a_right_program(seconds, pieces):
    """Too short to build the whole graph: the compile stops within the budget and keeps either the
    input or, where split/cat units finished first (``fx_bridge/scale/clusters.py``, anytime), their
    result, which computes what the input does and costs no more."""
    gm, inputs = split_pointwise_cat(pieces)
    expected = gm(*inputs)
    t0 = time.perf_counter()
    new_gm, report = optimize(gm, inputs, {"seconds": seconds})
    elapsed = time.perf_counter() - t0
    assert elapsed <= seconds + _slack(seconds), (elapsed, report.phase_seconds)
    assert report.stop_reason.startswith("time budget ("), report.stop_reason
    if new_gm is gm:
        assert not report.changed
    else:
        torch.testing.assert_close(new_gm(*inputs), expected)
        assert _price(new_gm, inputs) <= _price(gm, inputs)


def test_horizontal_candidates_of_a_wide_split_are_linear_text():
    """The fused form's split is bound once, not spelled out (with all n sizes) in each of n pairs."""
    from eqsat_rules.batch_groups import batch_unions

    sizes = {}
    for pieces in (128, 512):
        gm, inputs = split_pointwise_cat(pieces)
        unions = batch_unions(lower(gm, inputs))
        assert unions.counts, "the sigmoids are a batch-fusion group"
        sizes[pieces] = sum(len(c) for c in unions.program.commands)
    assert sizes[512] < 6 * sizes[128], sizes


def test_an_allowance_is_spent_by_what_each_pass_used_not_by_the_time_between():
    from eqsat.deadline import Allowance

    allowance = Allowance(5.0)
    with allowance.deadline() as first:
        time.sleep(0.2)
    time.sleep(0.3)  # the user's forward runs here, before the backward is compiled
    spent = allowance.spent
    with allowance.deadline() as second:
        pass
    assert first.seconds == 5.0
    assert 0.2 <= spent < 0.3 and second.seconds == pytest.approx(5.0 - spent), (spent, second.seconds)


def test_a_training_compile_spends_seconds_once_across_its_three_graphs(uncached_inductor):
    """The Dynamo graph, then AOT's forward and backward graphs draw from one allowance: each later
    pass may only use what the earlier ones left (it used to get ``seconds=`` each: 3x in all)."""
    from eqsat_torch import eqsat_backend

    def step(w):
        return torch.cat([p.sigmoid() * 2 for p in torch.split(w, 1, 1)], 1).sum()

    backend = eqsat_backend(seconds=30.0)
    w = torch.randn(8, 16, requires_grad=True)
    torch.compile(step, backend=backend)(w).backward()
    passes = backend.reports + backend.post_grad_reports
    assert len(passes) == 3, [r.summary() for r in passes]
    left = 30.0
    for r in passes:
        assert r.budget_seconds <= left + 1e-6, (r.budget_seconds, left)
        left = r.budget_seconds - r.optimizer_seconds
    assert 29.0 < passes[0].budget_seconds <= 30.0  # less what the pass spent before it (the cache key)
    assert sum(r.optimizer_seconds for r in passes) <= 30.0


def test_a_phase_that_cannot_stop_is_priced_before_it_starts():
    """``Deadline.affords`` prices a phase from its node count (``eqsat.budget.price``), remembers the
    phase that did not fit and says why in the report's words."""
    from eqsat.budget import price
    from eqsat.deadline import Deadline

    deadline = Deadline(1.0)
    assert deadline.affords("raise", 100) and not deadline.hit
    assert not deadline.affords("units", int(2.0 / price("units", 1))) and deadline.hit == "units"
    assert deadline.why_not("units", 10_000).startswith("budget: units of 10000 nodes is priced ")


def _priced_out(monkeypatch, seconds_per_node: float = 1.0):
    """Every phase that cannot stop priced at ``seconds_per_node``: on thousands of nodes none fits a
    budget of seconds, whatever the machine's speed or load (speed itself: bench/scripts/budget_check.py)."""
    from eqsat import budget

    for phase in budget.SECONDS_PER_NODE:
        monkeypatch.setitem(budget.SECONDS_PER_NODE, phase, seconds_per_node)


def _started(monkeypatch, module, *names) -> list[str]:
    """The names of ``module``'s phases that were called (each stands in, raising, so none runs)."""
    calls = []

    def stand_in(name):
        def started(*args, **kwargs):
            calls.append(name)
            raise RuntimeError(f"{name} started")
        return started

    for name in names:
        monkeypatch.setattr(module, name, stand_in(name))
    return calls


def test_a_graph_no_phase_can_pay_for_costs_nothing(monkeypatch):
    """Where the time left cannot pay for lowering, raising and checking the graph (the cheapest way
    through), the optimizer returns the input before anything runs, the rules not even compiled
    (``seconds=0.01`` at 4,096 pieces spent 0.08 s there under load, the promise being 0.061 s)."""
    from eqsat_torch import pipeline

    gm, inputs = split_pointwise_cat(1024)
    _priced_out(monkeypatch)
    started = _started(monkeypatch, pipeline, "select", "functionalize_intermediates")
    new_gm, report = optimize(gm, inputs, {"seconds": 30.0})
    assert started == [], started
    assert new_gm is gm and not report.changed and report.stop_reason == "time budget (lower)"
    priced = re.match(r"budget: lowering, raising and checking (\d+) nodes are priced ([\d.]+) s, "
                      r"[\d.]+ s of 30 s left; skipped", report.notes[0])
    assert priced and float(priced[2]) == 3 * int(priced[1]), report.notes  # at 1 s a node, three phases


def test_cutting_units_that_does_not_fit_is_skipped_before_it_starts(monkeypatch):
    """Cutting split/cat units cannot stop once started, so it is priced from the graph's size
    before it starts and skipped, the input kept, when the price exceeds the time left; the report
    says which phase and why (it used to start it: ``seconds=0.01`` took 0.15-0.6 s)."""
    from eqsat import budget
    from eqsat_torch import pipeline
    from eqsat_torch.scale import plan

    gm, inputs = split_pointwise_cat(4096)  # > REGION_NODES: optimized by units
    monkeypatch.setitem(budget.SECONDS_PER_NODE, "units", 1.0)
    started = _started(monkeypatch, pipeline, "functionalize_intermediates") + _started(monkeypatch, plan, "Units")
    new_gm, report = optimize(gm, inputs, {"seconds": 30.0})
    assert "Units" not in started, started  # the regions the plan falls back to are lowered (stand-in: kept)
    assert new_gm is gm and not report.changed
    assert report.stop_reason == "time budget (units)", report.stop_reason
    priced = re.match(r"budget: units of (\d+) nodes is priced ([\d.]+) s, [\d.]+ s of [\d.]+ s left; skipped",
                      report.notes[0])
    assert priced and float(priced[2]) == int(priced[1]) > 2 * 4096, report.notes  # at 1 s a node


def test_nested_deadlines_see_the_outer_ones_time_and_spend_it_once():
    """The post-grad pass opens a deadline around the optimizer's own: the inner one is drawn from
    what is left after the outer has run, and only the outer's time is spent."""
    from eqsat.deadline import Allowance

    allowance = Allowance(5.0)
    with allowance.deadline():
        time.sleep(0.2)
        with allowance.deadline(reserve=1.0) as inner:
            time.sleep(0.1)
        assert inner.seconds <= 5.0 - 0.2 - 1.0
        assert allowance.left() <= 5.0 - 0.3
    assert 0.3 <= allowance.spent < 0.4, allowance.spent


def test_the_combo_kernel_count_that_does_not_fit_is_not_made(monkeypatch):
    """Counting a kept graph's launches with and without combo kernels (Inductor's lowering on the
    fake GPU, seconds on big graphs) is priced before it starts; when it does not fit, combo kernels
    stay off and the report says why."""
    from eqsat.deadline import Allowance
    from eqsat_torch.inductor import compose, probe
    from eqsat_torch.report import Report

    gm, inputs = split_pointwise_cat(64)
    _priced_out(monkeypatch)
    started = _started(monkeypatch, probe, "count_launches")
    report = compose.decide_unmeasured(gm, inputs, Report(), compose.DECIDE, False, Allowance(30.0))
    assert started == [] and report.combo_kernels is False, started
    assert "combo kernels off: Inductor's count of" in report.notes[0], report.notes


def test_the_post_grad_pass_is_skipped_when_copying_its_body_out_does_not_fit(monkeypatch):
    """Taking the body out of an Aten graph and splicing it back cannot stop: when its price, with
    the least the optimizer needs after it (lowering, raising, checking), exceeds what is left of the
    compile's allowance the pass keeps the graph as it is, before copying anything (it copied a
    1,926-node body out in 0.25 s, then found no time to lower it); when it fits, it goes on."""
    from eqsat.deadline import Allowance
    from eqsat_torch.inductor import post_grad

    gm, _ = split_pointwise_cat(2048)
    before = [n.format_node() for n in gm.graph.nodes]
    started = _started(monkeypatch, post_grad, "functional_body")
    _priced_out(monkeypatch)
    report = post_grad.optimize_graph_in_place(gm.graph, Options(), Allowance(30.0))
    assert started == [] and report.stop_reason == "time budget (splice)", (started, report.stop_reason)
    assert report.notes[0].startswith(f"budget: the post-grad pass on {len(before)} nodes is priced "), report.notes
    assert [n.format_node() for n in gm.graph.nodes] == before and not report.changed
    _priced_out(monkeypatch, 0.0)
    post_grad.optimize_graph_in_place(gm.graph, Options(), Allowance(30.0))
    assert started == ["functional_body"]
