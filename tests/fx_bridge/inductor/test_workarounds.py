"""Issue 28: Inductor reuses a stack's buffer while a value computed in place in one of its slots is
still live (docs/upstream/inductor_stack_slot_reuse.py). The backend turns Inductor's in-place buffer
reuse off for a graph that stacks a value something else reads, the pattern batched linears make."""
import pytest
import torch

from eqsat_torch.inductor import workarounds, compat


def stack_of_shared(x, y, w1, w2):
    """BART's decoder after batched linears, reduced: ``b`` is stacked and read again."""
    a = torch.relu(x)
    b = torch.layer_norm(y + 1.0, (128,))
    r = torch.bmm(torch.stack([a, b]).reshape(2, 128, 128), w1)
    c = torch.layer_norm(b + r[1].reshape(2, 64, 128), (128,))
    q = (c.reshape(128, 128) @ w2).reshape(2, 64, 4, 32).transpose(1, 2)
    k = r[0].reshape(2, 64, 4, 32).transpose(1, 2)
    return q @ k.transpose(2, 3), r


def stack_of_private(x, y):
    return torch.stack([x.relu(), y.sin()]).sum(0)


def _args():
    torch.manual_seed(0)
    return [torch.randn(2, 64, 128), torch.randn(2, 64, 128), torch.randn(2, 128, 128) / 11,
            torch.randn(128, 128) / 11]


def test_pattern_is_a_stack_of_a_value_read_elsewhere():
    shared = torch.fx.symbolic_trace(stack_of_shared)
    private = torch.fx.symbolic_trace(stack_of_private)
    assert workarounds.config_for(shared, {}) == {"inplace_buffers": False}
    assert workarounds.config_for(private, {}) == {}


def test_user_setting_wins():
    shared = torch.fx.symbolic_trace(stack_of_shared)
    assert workarounds.config_for(shared, {"inplace_buffers": True}) == {"inplace_buffers": True}


@pytest.mark.slow
def test_stack_slot_reused_in_place_stays_right():
    """Inductor alone: max error 111 (torch 2.13 CPU); through the backend: eager's values."""
    args = _args()
    with torch.no_grad():
        want = stack_of_shared(*args)
        compat.reset_dynamo()
        got = torch.compile(stack_of_shared, backend="eqsat")(*args)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


# -- low-precision ties (soak seeds 4000053 and 4001911, H200, torch 2.11) ------------------------------
def _dynamo_graphs(case):
    """The Dynamo graphs the backend gets for soak ``case``, as it runs in the soak."""
    from bench.soak.cases import _copies, _run

    graphs = []

    def capture(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    compat.reset_dynamo()
    compiled = torch.compile(lambda *xs: case.gm(*xs), backend=capture)
    _run(case, compiled, _copies(case, "cpu"))
    return graphs


@pytest.mark.parametrize("seed", [4000053, 4001911])
def test_low_precision_max_compiles_with_eager_rounding(seed):
    """Both soak programs take an ``amax`` of float16 values; their Dynamo graph compiles with
    ``emulate_precision_casts`` (docs/upstream/inductor_lowp_tie_mask.py), the same program in
    float32 keeps Inductor's defaults."""
    from bench.soak.cases import make_case

    case = make_case(seed, True, contexts=False)  # the program the soak drew (issue 41's contexts redraw 4001911)
    assert {x.dtype for x in case.inputs} == {torch.float16}
    graphs = _dynamo_graphs(case)
    assert any(workarounds.config_for(gm, {}).get("emulate_precision_casts") for gm in graphs)
    case.inputs = [x.float() for x in case.inputs]
    assert not any(workarounds.config_for(gm, {}).get("emulate_precision_casts")
                   for gm in _dynamo_graphs(case))


def test_low_precision_equality_of_aten_graph():
    """Post-grad (Aten) graphs are recognised by their nodes' ``val`` too."""
    def f(x):
        return torch.ops.aten.eq.Tensor(x, torch.ops.aten.amax.default(x, [0], True))

    gm = torch.fx.symbolic_trace(f)
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            n.meta["val"] = torch.empty(3, 4, dtype=torch.bfloat16)
    assert workarounds.config_for(gm, {}) == {"emulate_precision_casts": True}
    assert workarounds.config_for(gm, {"emulate_precision_casts": False}) == {"emulate_precision_casts": False}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="Triton's unrounded fusion: CUDA only")
@pytest.mark.parametrize("seed", [4000053, 4001911])
def test_low_precision_max_gradients_match_eager_on_gpu(seed):
    """The soak's H200 run (torch 2.11): NaN gradients through the amax (24/24 and 8/16 elements)."""
    from bench.soak.check import run_case

    result = run_case(seed, True, device="cuda", inductor=True, contexts=False)
    assert result["problems"] == [], result


def _graph_with_a_new_node():
    """A post-grad-like graph: ``sigmoid`` traced by AOTAutograd (``original_aten``), ``decomp`` an
    unmarked decomposition step, ``new`` a node a pass made."""
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    x.meta["val"] = torch.empty(4, dtype=torch.float16)
    sig = graph.call_function(torch.ops.aten.sigmoid.default, (x,))
    decomp = graph.call_function(torch.ops.aten.mul.Tensor, (sig, sig))
    new = graph.call_function(torch.ops.aten.amax.default, (decomp, [0]))
    for n in (sig, decomp, new):
        n.meta["val"] = torch.empty(4 if n is not new else (), dtype=torch.float16)
    sig.meta.update(original_aten=torch.ops.aten.sigmoid.default, low_precision_pointwise_barrier=True)
    decomp.meta["original_aten"] = torch.ops.aten.sigmoid.default
    graph.output(new)
    return graph, sig, decomp, new


def test_nodes_a_pass_made_are_rounded_as_eager_ops_under_emulate_precision_casts():
    graph, sig, decomp, new = _graph_with_a_new_node()
    compat.mark_eager_rounding(graph)
    assert "low_precision_pointwise_barrier" not in new.meta  # config off: nothing changes
    with torch._inductor.config.patch(emulate_precision_casts=True):
        compat.mark_eager_rounding(graph)
    assert new.meta["low_precision_pointwise_barrier"] is True
    assert "low_precision_pointwise_barrier" not in decomp.meta  # AOT's decision stands


@pytest.mark.slow
def test_post_grad_pass_marks_its_new_nodes(monkeypatch):
    """Soak seed 4000053's forward through the post-grad pass under the workaround's config: the
    clone the pass adds is marked like the traced nodes around it."""
    import operator

    from bench.soak.check import run_case
    from eqsat_torch.inductor import post_grad

    seen = []
    real = post_grad.optimize_graph_in_place

    def spy(graph, *args, **kwargs):
        report = real(graph, *args, **kwargs)
        seen.append((report, [n for n in graph.nodes if n.op == "call_function"]))
        return report

    monkeypatch.setenv("EQSAT_CACHE", "0")
    monkeypatch.setattr(post_grad, "optimize_graph_in_place", spy)
    with torch._inductor.config.patch(force_disable_caches=True):
        result = run_case(4000053, True, inductor=True, contexts=False)  # the soak's program of that seed
    assert result["problems"] == []
    new = [n for report, nodes in seen if report.changed for n in nodes
           if "original_aten" not in n.meta and n.target is not operator.getitem]
    assert new and all(n.meta.get("low_precision_pointwise_barrier") for n in new), [n.format_node() for n in new]
