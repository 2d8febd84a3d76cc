"""Aten round trip: random graphs traced to functional Aten-IR (``make_fx`` of ``functionalize``), optimized in place by the post-grad
pass with every graph rebuilt from the e-graph, compute what the traced graph computes."""
import random

import torch
from hypothesis import HealthCheck, given, settings, strategies as st
from torch.func import functionalize
from torch.fx.experimental.proxy_tensor import make_fx

from bench.graphgen import random_graph
from fx_bridge.pipeline import Options
from fx_bridge.post_grad import optimize_graph_in_place
from fx_bridge import torch_compat


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.randoms(use_true_random=False), st.integers(2, 12))
def test_random_aten_graph_round_trips(rng: random.Random, n_ops: int):
    gm, inputs = random_graph(rng, n_ops=n_ops)
    aten_gm = make_fx(functionalize(gm), tracing_mode="fake")(*inputs)  # functional, like post-grad
    expected = aten_gm(*inputs)
    report = optimize_graph_in_place(aten_gm.graph, Options(always_raise=True))
    assert not report.skipped, report.skipped
    aten_gm.recompile()
    for n in aten_gm.graph.nodes:
        if n.op == "call_function":
            assert torch_compat.is_aten(n.target) or n.target.__module__ == "_operator", n.format_node()
    torch.testing.assert_close(aten_gm(*inputs), expected, equal_nan=True)
