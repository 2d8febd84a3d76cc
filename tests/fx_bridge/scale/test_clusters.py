"""Wide split/cat clusters are optimized as units (issue 30): a window of the topological order that
cut a split from its getitems' consumers lost the whole rewrite, and a graph past ``max_graph_nodes``
was skipped. Small graphs with low thresholds stand in for the 15k- and 61k-node Dynamo graphs."""
import pytest
import torch

from bench.scripts.pipeline_scale import TwoStage
from eqsat_torch.scale import clusters
from eqsat_torch.scale import plan
from eqsat_torch.pipeline import optimize
from eqsat_torch.lowering.targets import canonical_name
from tests.captured import dynamo_graph


def _names(gm):
    return [canonical_name(n) for n in gm.graph.nodes if n.op == "call_function"]


def _low_thresholds(monkeypatch, region_nodes=50, chunk=8):
    monkeypatch.setattr(plan, "REGION_NODES", region_nodes)
    monkeypatch.setattr(clusters, "CHUNK_PIECES", chunk)
    monkeypatch.setattr(clusters, "MIN_PIECES", 4)


def test_two_level_splits_and_cats_compute_the_same_values(monkeypatch):
    gm, inputs = dynamo_graph(TwoStage(), torch.randn(4, 32))
    two_level = clusters.chunked(gm, 8)
    two = torch.fx.GraphModule(gm, two_level.graph)
    assert _names(two).count("split") == 2 + 4 and _names(two).count("cat") == 2 + 4  # 4 chunks of 8 pieces
    assert len(two_level.glue) == 1 and len(two_level.inner_cats) == 4
    torch.testing.assert_close(two(*inputs), gm(*inputs))
    assert _names(gm).count("split") == 2  # the input graph is left as it was


def test_each_chunk_is_a_cluster_from_its_split_to_its_cat(monkeypatch):
    monkeypatch.setattr(clusters, "MIN_PIECES", 4)
    gm, _ = dynamo_graph(TwoStage(), torch.randn(4, 32))
    two = clusters.chunked(gm, 8)
    found = clusters.clusters(two.graph, two.glue)
    assert [len(c) for c in found] == [1 + 8 * 3 + 1] * 5  # split, getitem/sigmoid/mul per piece, cat
    assert all(canonical_name(c[0]) == "split" and canonical_name(c[-1]) == "cat" for c in found)
    units = [clusters.unit_of(c) for c in found]
    assert len({clusters.structure(u) for u in units}) == 2  # the four chunks of stage one are alike


def test_a_split_and_its_consumers_stay_together_past_the_region_size(monkeypatch):
    """Fails before: windows of 50 nodes cut the split from its sigmoids and the cat; the cats stayed."""
    _low_thresholds(monkeypatch)
    gm, inputs = dynamo_graph(TwoStage(), torch.randn(4, 32))
    new_gm, report = optimize(gm, inputs, {"seconds": 120.0})
    assert report.changed, report.summary()
    assert "cat" not in _names(new_gm) and "split" not in _names(new_gm), new_gm.code
    assert any("5 split/cat clusters optimized as units (2 structures)" in n for n in report.notes), report.notes
    torch.testing.assert_close(new_gm(*inputs), gm(*inputs))


def test_a_graph_past_max_graph_nodes_is_attempted_cluster_by_cluster(monkeypatch):
    """Fails before: more than ``max_graph_nodes`` nodes was skipped whole."""
    _low_thresholds(monkeypatch)
    gm, inputs = dynamo_graph(TwoStage(), torch.randn(4, 32))
    assert len(gm.graph.nodes) > 100
    new_gm, report = optimize(gm, inputs, {"seconds": 120.0, "max_graph_nodes": 100})
    assert report.changed and "cat" not in _names(new_gm), report.summary()
    torch.testing.assert_close(new_gm(*inputs), gm(*inputs))


@pytest.mark.slow
def test_training_through_compile_keeps_values_and_gradients(monkeypatch):
    _low_thresholds(monkeypatch)
    from eqsat_torch import eqsat_backend

    torch._dynamo.reset()
    x = torch.randn(4, 32, requires_grad=True)
    backend = eqsat_backend(seconds=120.0)
    out = torch.compile(TwoStage(), backend=backend)(x)
    out.sum().backward()
    ref_x = x.detach().clone().requires_grad_(True)
    expected = TwoStage()(ref_x)
    expected.sum().backward()
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(x.grad, ref_x.grad)
    assert backend.reports[0].changed, backend.reports[0].summary()


def test_cats_of_chunks_no_unit_replaced_are_flat_again(monkeypatch):
    gm, inputs = dynamo_graph(TwoStage(), torch.randn(4, 32))
    two = clusters.chunked(gm, 8)
    two.flatten_cats()
    flat = torch.fx.GraphModule(gm, two.graph)
    assert _names(flat).count("cat") == 2, flat.code
    torch.testing.assert_close(flat(*inputs), gm(*inputs))
