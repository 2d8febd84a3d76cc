"""``F.embedding_bag`` of 2-D ids on a GPU: Inductor makes the offsets ``arange`` a Triton kernel, and
flattening a strided slice of the ids a copy, before the extern call. The GPU model planned one call
(zoo DLRM, 8 bags of ``unbind(ids, 1)``: 27 launches planned, 43 counted). The fake-H200 probe's
count is the truth here; the expected counts are what it gave."""
import pytest
import torch

from captured import assert_gpu_launches, dynamo_graph
from eqsat.cost import CostModel
from eqsat_torch.pipeline import price_input

F = torch.nn.functional
CPU = CostModel.for_device("cpu")
W = torch.randn(1000, 16)
IDS2 = torch.randint(0, 1000, (32, 4))
IDS3 = torch.randint(0, 1000, (32, 8, 4))


def _bag(ids, w):
    return F.embedding_bag(ids, w, mode="sum")


CASES = {
    "contiguous_ids": (lambda i, w: _bag(i, w), (IDS2, W), (1, 1)),              # offsets, the call
    "one_table_of_several": (lambda i, w: _bag(i[:, 2], w), (IDS3, W), (2, 1)),  # offsets, a copy, the call
    "transposed_ids": (lambda i, w: _bag(i.t(), w), (IDS2, W), (2, 1)),
    "first_dim_slice": (lambda i, w: _bag(i[1], w), (IDS3, W), (1, 1)),         # contiguous: no copy
    "dlrm_unbind": (lambda i, w: sum(_bag(x, w) for x in torch.unbind(i, 1)), (IDS3, W), (17, 8)),  # + 1 add
    "flat_ids_and_offsets": (lambda i, o, w: F.embedding_bag(i, w, o, mode="sum"),
                             (IDS2.flatten(), torch.arange(0, 128, 4), W), (0, 1)),
}


@pytest.mark.parametrize("name", CASES)
def test_embedding_bag_launches_match_inductor_on_a_gpu(name):
    fn, inputs, expected = CASES[name]
    assert_gpu_launches(fn, inputs, expected)


def test_the_cpu_model_keeps_an_embedding_bag_one_call():
    gm, ex = dynamo_graph(lambda i, w: _bag(i[:, 2], w), IDS3, W)
    built, _ = price_input(gm, ex, CPU)
    assert built.before.extern == 1
