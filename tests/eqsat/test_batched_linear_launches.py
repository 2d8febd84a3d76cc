"""A biased linear of learned queries expanded over the batch (interformer's pooling attention): Aten's
``matmul`` cannot fold a broadcast batch into an ``mm``, so CUDA runs a ``bmm`` and the bias add as a
pointwise op of its own, which fuses into a pointwise consumer and not into a ``bmm`` one. The model
planned one ``addmm`` (zoo interformer, fake H200: 3 launches short). The fake-H200 probe's count is
the truth here; the expected counts are what it gave."""
import pytest
import torch

from captured import dynamo_graph
from eqsat.cost import CostModel
from fx_bridge.inductor_probe import available, count_launches
from fx_bridge.pipeline import price_input

F = torch.nn.functional
GPU = CostModel.for_device("cuda")
Q, W, B = torch.nn.Parameter(torch.randn(2, 16)), torch.nn.Parameter(torch.randn(16, 16)), torch.nn.Parameter(torch.randn(16))
SEQ = torch.randn(8, 16, 16)

CASES = {
    "expanded_queries_into_bmm": (lambda s: torch.bmm(F.linear(Q.expand(8, -1, -1), W, B), s.transpose(1, 2)), (1, 2)),
    "expanded_queries_into_relu": (lambda s: F.linear(Q.expand(8, -1, -1), W, B).relu(), (1, 1)),
    "expanded_queries_no_bias": (lambda s: torch.bmm(F.linear(Q.expand(8, -1, -1), W), s.transpose(1, 2)), (0, 2)),
    "contiguous_input": (lambda s: torch.bmm(F.linear(s, W, B), s.transpose(1, 2)), (0, 2)),
}


@pytest.mark.parametrize("name", CASES)
def test_linear_launches_match_inductor_on_a_gpu(name):
    fn, expected = CASES[name]
    gm, ex = dynamo_graph(fn, SEQ)
    built, _ = price_input(gm, ex, GPU)
    assert (built.before.generated, built.before.extern) == expected
    if available("cuda"):
        got = count_launches(gm, ex, "cuda", "torch")
        assert (got.generated, got.extern) == expected
