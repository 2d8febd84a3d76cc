"""Round trip: lower → saturate → extract → raise computes what the original graph computes."""
import random

import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from bench.graphgen import random_graph
from fx_bridge import optimize


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.randoms(use_true_random=False), st.integers(2, 12))
def test_random_graph_round_trips(rng: random.Random, n_ops: int):
    gm, inputs = random_graph(rng, n_ops=n_ops)
    expected = gm(*inputs)
    new_gm, report = optimize(gm, inputs, {"always_raise": True})
    assert not report.skipped
    torch.testing.assert_close(new_gm(*inputs), expected, equal_nan=True)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.randoms(use_true_random=False))
def test_optimized_graph_never_costs_more(rng: random.Random):
    gm, inputs = random_graph(rng, n_ops=10)
    new_gm, report = optimize(gm, inputs)
    assert report.cost_after <= report.cost_before
    torch.testing.assert_close(new_gm(*inputs), gm(*inputs), equal_nan=True)
