"""Aten round trip: random graphs traced to functional Aten-IR (``make_fx`` of ``functionalize``), optimized in place by the post-grad
pass with every graph rebuilt from the e-graph, compute what the traced graph computes."""
import random

import torch
from hypothesis import HealthCheck, assume, given, settings, strategies as st
from torch.func import functionalize
from torch._inductor.decomposition import select_decomp_table
from torch.fx.experimental.proxy_tensor import make_fx

from bench.graphgen import random_graph
from eqsat_torch.pipeline import Options
from eqsat_torch.inductor.post_grad import optimize_graph_in_place
from eqsat_torch.inductor import compat


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.randoms(use_true_random=False), st.integers(2, 12))
def test_random_aten_graph_round_trips(rng: random.Random, n_ops: int):
    gm, inputs = random_graph(rng, n_ops=n_ops)
    aten_gm = make_fx(functionalize(gm), tracing_mode="fake")(*inputs)  # functional, like post-grad
    traced = {n.target for n in aten_gm.graph.nodes}
    expected = aten_gm(*inputs)
    report = optimize_graph_in_place(aten_gm.graph, Options(always_raise=True, verify=False))  # run eagerly below
    # a program whose outputs Inductor's remove_noop_ops would merge is refused on purpose
    # (safety/noop_outputs.py; ~3 % of these graphs): nothing to round-trip there
    assume(not report.skipped.startswith("Inductor's remove_noop_ops"))
    assert not report.skipped, report.skipped
    aten_gm.recompile()
    for n in aten_gm.graph.nodes:
        if n.op == "call_function":
            assert compat.is_aten(n.target) or n.target.__module__ == "_operator", n.format_node()
            assert n.target in traced or compat.inductor_lowers(n.target), n.format_node()
    # decompose_mm sums products in another order than mm: float reassociation, not a wrong value
    torch.testing.assert_close(aten_gm(*inputs), expected, equal_nan=True, rtol=1e-4, atol=1e-4)


def test_scalar_minus_tensor_is_spelled_with_ops_inductor_lowers():
    """Batching ``2 - relu(piece)`` creates a scalar-first subtraction; ``aten.rsub`` would spell it,
    but Inductor decomposes rsub before post-grad passes and cannot lower it afterwards."""
    def f(x):
        a, b = x.split(4, 1)
        return torch.cat([2.0 - a.relu(), 2.0 - b.relu()], 1)

    x = torch.randn(4, 8)
    aten_gm = make_fx(f, decomposition_table=select_decomp_table(), tracing_mode="fake")(x)
    report = optimize_graph_in_place(aten_gm.graph, Options(always_raise=True, verify=False))  # run eagerly below
    assert report.rules_used.get("batch_sub"), report.summary()
    aten_gm.recompile()
    for n in aten_gm.graph.nodes:
        if n.op == "call_function":
            assert compat.inductor_lowers(n.target), n.format_node()
    torch.testing.assert_close(aten_gm(x), f(x))


def test_in_place_view_on_a_fresh_intermediate_is_optimized_not_skipped():
    """``linear`` of a 1-D input traces to ``mm(...).squeeze_(0)``: metadata-only, on a tensor nothing else reads."""
    def f(x, w):
        return torch.relu(torch.nn.functional.linear(x.flatten(), w)), x.sin()

    inputs = (torch.randn(2, 3), torch.randn(4, 6))
    aten_gm = make_fx(functionalize(f), tracing_mode="fake")(*inputs)
    assert any(n.target is torch.ops.aten.squeeze_.dim for n in aten_gm.graph.nodes)
    expected = f(*inputs)
    report = optimize_graph_in_place(aten_gm.graph, Options(always_raise=True, verify=False))  # run eagerly below
    # a program whose outputs Inductor's remove_noop_ops would merge is refused on purpose
    # (safety/noop_outputs.py; ~3 % of these graphs): nothing to round-trip there
    assume(not report.skipped.startswith("Inductor's remove_noop_ops"))
    assert not report.skipped, report.skipped
    aten_gm.recompile()
    assert not any(n.target is torch.ops.aten.squeeze_.dim for n in aten_gm.graph.nodes)
    torch.testing.assert_close(aten_gm(*inputs), expected)
