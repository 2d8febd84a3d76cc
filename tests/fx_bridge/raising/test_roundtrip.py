"""Round trip: lower → saturate → extract → raise computes what the original graph computes, and the
costs the report states are those of the graphs it returns, priced again from scratch."""
import math
import random
import re
from unittest import mock

import pytest
import torch
import torch.utils._pytree as pytree
from hypothesis import HealthCheck, given, settings, strategies as st
from torch.fx.node import map_aggregate

from bench.scripts.calibrate import predict
from bench.graphgen import random_graph
from eqsat.cost import CostModel
from eqsat_torch import optimize, pipeline
from eqsat_torch.lowering.lower import lower
from eqsat_torch.safety import equivalence
from eqsat_torch.safety.aliasing import same_layout

CPU = CostModel.for_device("cpu")


def priced(gm, inputs) -> float:
    """The cost of ``gm`` exactly as written: lowered again, no rule run, no extraction."""
    return predict(gm, inputs, CPU)[0].cost


def same_cost(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def kept_for_aliasing(report) -> bool:
    """The round gave up its rewrite because outputs would not alias as in eager."""
    return any(note.startswith("kept the input program") for note in report.notes)


def optimize_seeing_the_rewrite(gm, inputs, options):
    """``optimize``, and the rewritten graph the equivalence check was shown (None: not checked)."""
    shown = [None]
    check = equivalence.difference

    def spy(original, rewritten, *args, **kwargs):
        shown[0] = rewritten
        return check(original, rewritten, *args, **kwargs)

    with mock.patch.object(equivalence, "difference", spy):
        new_gm, report = optimize(gm, inputs, options)
    return new_gm, report, shown[0]


def refused_for_a_real_layout_difference(report, rewritten, inputs, expected) -> bool:
    """The equivalence check refused the rewrite for an output's strides, and the rewritten graph,
    run, does return that output with other strides than eager (e.g. a view of a wider buffer as a
    fresh tensor: a user sees it), with eager's values."""
    named = re.fullmatch(r"validation: strides of output (\d+): .*", report.refused)
    if not named or rewritten is None:
        return False
    got, want = [], []
    map_aggregate(rewritten(*inputs), got.append)
    map_aggregate(expected, want.append)
    torch.testing.assert_close(got, want, equal_nan=True)
    g, w = got[int(named[1])], want[int(named[1])]
    return not same_layout((tuple(g.shape), g.stride()), (tuple(w.shape), w.stride()))


# 200 random graphs a CI run, in shares of 50 (each draws its own): one in the fast tier (~110 s of CPU
# for all 200, measured), three in the slow tier.
SHARES = [pytest.param(0, id="fast")] + [pytest.param(i, marks=pytest.mark.slow, id=f"slow{i}") for i in (1, 2, 3)]


@pytest.mark.parametrize("share", SHARES)
@settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.randoms(use_true_random=False), st.integers(2, 12))
def test_random_graph_round_trips(share: int, rng: random.Random, n_ops: int):
    gm, inputs = random_graph(rng, n_ops=n_ops)
    expected = gm(*inputs)
    new_gm, report, rewritten = optimize_seeing_the_rewrite(gm, inputs, {"always_raise": True, "verify": False})
    assert new_gm is not gm or kept_for_aliasing(report) or refused_for_a_real_layout_difference(
        report, rewritten, inputs, expected), f"always_raise must rebuild the graph from the e-graph: {report.skipped}"
    torch.testing.assert_close(new_gm(*inputs), expected, equal_nan=True)
    # the raised graph is the program the extractor priced, not some other equivalent one (alias
    # copies are priced apart: see test_alias_copies_are_priced_as_the_returned_graph_costs)
    # Whether the raised graph costs exactly what the extractor priced is checked on fixed programs
    # below: on random ones a known gap (~1e-3 after narrow_unary, see the README's limits) remains.


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.randoms(use_true_random=False))
def test_reported_costs_are_the_returned_graphs_costs(rng: random.Random):
    gm, inputs = random_graph(rng, n_ops=10)
    new_gm, report = optimize(gm, inputs)
    before, after = priced(gm, inputs), priced(new_gm, inputs)
    assert same_cost(report.cost_before, before), (report.cost_before, before)
    assert same_cost(report.cost_after, after), (report.cost_after, after, report.summary())
    if report.changed:
        assert new_gm is not gm and (after < before or same_cost(after, before)), report.summary()
        torch.testing.assert_close(new_gm(*inputs), gm(*inputs), equal_nan=True)
    else:
        assert new_gm is gm and report.rules_used == {}, report.summary()


def test_a_view_output_is_pinned_not_rebuilt_from_less():
    """Seed 77 of the random corpus: output 0 is the last (2, 1) piece of a split of a (2, 6) linear,
    a view with strides (6, 1). Computing that piece alone gives a fresh (2, 1) tensor, which the
    check refused (the whole program lost); the piece and the linear are pinned now
    (``view_outputs_pinned``): nothing is refused and the outputs have eager's strides."""
    rng = random.Random(77)
    gm, inputs = random_graph(rng, n_ops=rng.randint(2, 12))
    expected = gm(*inputs)
    new_gm, report, _ = optimize_seeing_the_rewrite(gm, inputs, {"always_raise": True})
    assert not report.refused and report.fallback != "validation mismatch", report.summary()
    got = new_gm(*inputs)
    torch.testing.assert_close(got, expected)
    assert [g.stride() for g in pytree.tree_leaves(got)] == [e.stride() for e in pytree.tree_leaves(expected)]


def test_a_known_improvement_is_reported_and_priced():
    """A split re-joined by a cat is the input itself: the cat's copy is saved (on CPU Inductor fuses it
    with the relu into one kernel, so the saving is in bytes moved)."""
    def f(x):
        return torch.cat(torch.split(x, 4, dim=1), dim=1).relu()

    x = torch.randn(8, 16)
    gm = torch.fx.symbolic_trace(f)
    new_gm, report = optimize(gm, [x])
    assert report.changed and "cat_split_all" in report.rules_used, report.summary()
    (op,) = [n for n in new_gm.graph.nodes if n.op in ("call_function", "call_method")]
    assert "relu" in str(op.target), new_gm.code
    assert same_cost(priced(new_gm, [x]), report.cost_after) and report.cost_after < report.cost_before
    torch.testing.assert_close(new_gm(x), f(x))


def test_alias_copies_are_priced_as_the_returned_graph_costs():
    """Seed 36 of the random corpus: a cat of every chunk of x0 is x0 itself, returned as clone(x0)."""
    rng = random.Random(36)
    gm, inputs = random_graph(rng, n_ops=rng.randint(2, 12))
    new_gm, report = optimize(gm, inputs, {"always_raise": True})
    assert report.alias_copies == 1, report.summary()
    assert same_cost(priced(new_gm, inputs), report.cost_after), (priced(new_gm, inputs), report.summary())


def test_alias_copies_are_priced_without_lowering_the_graph_again(monkeypatch):
    """Issue 44: the copies are priced from the extracted program (e-nodes over its outputs), so a
    graph is lowered once; the price still is the returned graph's, and two copies of one value are
    one class, as lowering the returned graph would make them."""
    lowered = []
    monkeypatch.setattr(pipeline, "lower", lambda gm, *a, **k: lowered.append(gm) or lower(gm, *a, **k))
    rng = random.Random(36)
    gm, inputs = random_graph(rng, n_ops=rng.randint(2, 12))
    new_gm, report = optimize(gm, inputs, {"always_raise": True})
    assert report.alias_copies == 1 and len(lowered) == 1, (len(lowered), report.summary())
    assert same_cost(priced(new_gm, inputs), report.cost_after), (priced(new_gm, inputs), report.summary())

    lowered.clear()
    twice = torch.fx.symbolic_trace(lambda a: (torch.cat(torch.split(a, 2)), torch.cat(torch.split(a, 2))))
    x = torch.randn(3, 4)
    new_gm, report = optimize(twice, [x], {"always_raise": True})
    assert report.alias_copies == 2 and len(lowered) == 1, (len(lowered), report.summary())
    assert same_cost(priced(new_gm, [x]), report.cost_after), (priced(new_gm, [x]), report.summary())
    torch.testing.assert_close(new_gm(x), (x, x))
