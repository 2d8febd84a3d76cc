"""A biased linear of a 3-D input that is not contiguous (learned queries expanded over the batch:
interformer's pooling attention; a slice; a stack's piece along dim 1: BART's batched layer norms):
Aten's ``linear`` runs ``matmul`` (a ``bmm`` on CUDA) and the bias add as a pointwise op of its own,
which fuses into a pointwise consumer and not into a ``bmm`` one. The model planned one ``addmm``
(zoo interformer, fake H200: 3 launches short; BART's chosen program 3 short). The fake-H200 probe's count is
the truth here; the expected counts are what it gave."""
import pytest
import torch

from captured import dynamo_graph
from eqsat.cost import CostModel
from eqsat_torch.inductor.probe import available, count_launches
from eqsat_torch.pipeline import price_input

F = torch.nn.functional
GPU = CostModel.for_device("cuda")
Q, W, B = torch.nn.Parameter(torch.randn(2, 16)), torch.nn.Parameter(torch.randn(16, 16)), torch.nn.Parameter(torch.randn(16))
SEQ = torch.randn(8, 16, 16)

CASES = {
    "expanded_queries_into_bmm": (lambda s: torch.bmm(F.linear(Q.expand(8, -1, -1), W, B), s.transpose(1, 2)), (1, 2)),
    "expanded_queries_into_relu": (lambda s: F.linear(Q.expand(8, -1, -1), W, B).relu(), (1, 1)),
    "expanded_queries_no_bias": (lambda s: torch.bmm(F.linear(Q.expand(8, -1, -1), W), s.transpose(1, 2)), (0, 2)),
    "contiguous_input": (lambda s: torch.bmm(F.linear(s, W, B), s.transpose(1, 2)), (0, 2)),
    "first_dim_slice": (lambda s: torch.bmm(F.linear(s.narrow(0, 0, 4), W, B), s.narrow(0, 0, 4).transpose(1, 2)),
                        (0, 2)),  # contiguous: addmm
    "middle_dim_slice": (lambda s: torch.bmm(F.linear(s.narrow(1, 0, 8), W, B), s.transpose(1, 2)), (1, 2)),
    "stack_piece_along_dim_1": (lambda s: torch.bmm(F.linear(torch.unbind(torch.stack([s, s * 2], 1), 1)[0], W, B),
                                                    s.transpose(1, 2)), (2, 2)),  # + the stack
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
