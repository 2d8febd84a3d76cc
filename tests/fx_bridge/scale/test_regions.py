"""A graph larger than ``REGION_NODES`` is optimized window by window and every window keeps its
result (issue 30: a 15k-node graph was all or nothing, decided by the machine's load)."""
import operator

import torch

from bench.scripts.pipeline_scale import TwoStage
from eqsat_torch.scale import clusters
from eqsat_torch.scale import plan
from eqsat_torch.pipeline import optimize
from eqsat_torch.scale.regions import inline, windows
from torch.fx.passes.split_module import split_module


def _dynamo_graph(pieces):
    got = []
    torch.compile(TwoStage(), backend=lambda gm, ex: got.append((gm, list(ex))) or gm.forward)(torch.randn(8, pieces))
    return got[0]


def test_windows_keep_a_tuple_with_its_reader_and_inline_gives_the_graph_back():
    gm, inputs = _dynamo_graph(16)
    part = windows(gm, 10)
    assert len(set(part.values())) > 2
    for n, k in part.items():
        if n.target is operator.getitem:
            assert part[n.args[0]] == k
    flat = inline(split_module(gm, None, lambda n: part[n], keep_original_order=True))
    assert not any(n.op == "call_module" for n in flat.graph.nodes)
    torch.testing.assert_close(flat(*inputs), gm(*inputs))


def test_a_graph_past_the_region_size_improves_region_by_region(monkeypatch):
    gm, inputs = _dynamo_graph(32)
    monkeypatch.setattr(plan, "REGION_NODES", 50)
    monkeypatch.setattr(clusters, "MIN_PIECES", 10**6)  # no split is a cluster: windows of the order
    new_gm, report = optimize(gm, inputs, {"seconds": 120.0, "verify": False})  # every region kept as optimized
    assert "optimized as 2 regions of at most 50 nodes each, 2 changed" in report.notes, report.notes
    assert report.changed and report.cost_after < report.cost_before, report.summary()
    assert not any(n.op == "call_module" for n in new_gm.graph.nodes)
    torch.testing.assert_close(new_gm(*inputs), gm(*inputs))


def test_a_window_output_whose_gradient_a_later_windows_no_grad_cuts_stays_grad_dead(monkeypatch):
    """Soak seeds 2001807, 2002447 with the graph cut into windows of 4 nodes: the three linears of ``x``
    and ``a.mean`` in the first window, the ``no_grad`` read of it in the next. In its window ``a`` reaches
    an output (the window's), so the three linears were fused and ``w1.grad`` came back zeros where eager
    leaves it None; the whole graph's liveness (``lower.grad_dead_nodes``) now marks the window's nodes."""
    from bench.soak.backends import _backend
    from bench.soak.cases import Case
    from bench.soak.check import check
    from tests.fx_bridge.safety.test_soak_programs import _linear_read_only_under_no_grad

    monkeypatch.setattr(plan, "REGION_NODES", 4)
    monkeypatch.setattr(clusters, "MIN_PIECES", 10**6)
    monkeypatch.setenv("EQSAT_CACHE", "0")
    reports: list = []
    ws = [torch.randn(8, 6) for _ in range(3)]
    result = check(Case(0, "train", _linear_read_only_under_no_grad, [torch.randn(4, 6), *ws]),
                        backend=_backend(reports))
    assert result["problems"] == [], result["problems"]  # values and gradients, w1.grad None as in eager
    dynamo = reports[0]
    assert any(note.startswith("optimized as 3 regions") for note in dynamo.notes), dynamo.notes
    assert dynamo.rules_fired.get("batch_linear_lhs"), dynamo.summary()  # w2's and w3's still fuse


def test_no_window_ends_inside_a_no_grad_region(monkeypatch):
    """Windows of 5 nodes cut the same program inside its ``no_grad`` region: the first window ended
    in it (lowering refuses a graph ending in another grad mode) and the next, opened by
    ``split_module`` with the region's switch, read its inputs as if made in the region (raised
    again as duplicate placeholders: a SyntaxError). Both kept their input; a window now closes only
    outside a region (the first runs to the region's end), and no window keeps its input."""
    from bench.soak.backends import _backend
    from bench.soak.cases import Case
    from bench.soak.check import check
    from tests.fx_bridge.safety.test_soak_programs import _linear_read_only_under_no_grad

    monkeypatch.setattr(plan, "REGION_NODES", 5)
    monkeypatch.setattr(clusters, "MIN_PIECES", 10**6)
    monkeypatch.setenv("EQSAT_CACHE", "0")
    gm, _ = _dynamo_graph(16)  # no grad switch: the windows are as before, 5 counted nodes each
    assert max(windows(gm, 5).values()) == (sum(n.op not in ("placeholder", "output") and n.target is not operator.getitem
                                                 for n in gm.graph.nodes) - 1) // 5
    reports: list = []
    ws = [torch.randn(8, 6) for _ in range(3)]
    result = check(Case(0, "train", _linear_read_only_under_no_grad, [torch.randn(4, 6), *ws]),
                        backend=_backend(reports))
    assert result["problems"] == [], result["problems"]
    notes = reports[0].notes
    assert not [n for n in notes if n.startswith("region kept its input")], notes
    assert "optimized as 2 regions of at most 5 nodes each, 1 changed" in notes, notes  # the region in the first
