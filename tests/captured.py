"""The Torch-IR graph Dynamo hands a backend, captured for tests that price or probe it directly."""
from __future__ import annotations

import torch


def dynamo_graph(fn, *inputs):
    """(GraphModule, example inputs) of ``fn``'s one graph, as a backend receives them."""
    got = []
    torch.compile(fn, backend=lambda gm, ex: got.append((gm, list(ex))) or gm.forward, fullgraph=True)(*inputs)
    return got[0]


def autocast_entries(fn, *inputs):
    """``fn`` compiled by a backend that runs Dynamo's graph as it is: its outputs, and the
    ``enabled`` argument of each ``_enter_autocast`` in the (first) graph, in order."""
    graphs = []
    torch._dynamo.reset()
    got = torch.compile(fn, backend=lambda g, ex: graphs.append(g) or g.forward)(*inputs)
    enters = [n for n in graphs[0].graph.nodes if n.target is torch.amp.autocast_mode._enter_autocast]
    return got, [n.args[2] for n in enters]


def assert_gpu_launches(fn, inputs, expected):
    """The GPU model plans ``expected`` (generated, extern) launches for ``fn``'s graph, and so does
    Inductor's scheduler for a CUDA device (the fake H200 on a CPU box) where it can run."""
    from eqsat.cost import CostModel
    from eqsat_torch.inductor.probe import available, count_launches
    from eqsat_torch.pipeline import price_input

    gm, ex = dynamo_graph(fn, *inputs)
    built, _ = price_input(gm, ex, CostModel.for_device("cuda"))
    assert (built.before.generated, built.before.extern) == expected
    if available("cuda"):
        got = count_launches(gm, ex, "cuda", "torch")
        assert (got.generated, got.extern) == expected
