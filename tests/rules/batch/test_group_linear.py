"""group_linear: independent linears of different shapes as one bmm over zero-padded operands.

The GPU cost model is forced (CI has no GPU): it keeps the padded bmm, because Triton lowers each
stack of pads as one kernel and the bias adds fuse into the output's kernel, so the program has fewer
launches; the CPU model, where every stack input is a copy, rightly keeps the separate linears.
Outputs and every gradient are compared with eager.
"""
import pytest
import torch
from torch import nn

from bench.models.parity import GroupLinear
from eqsat.cost import CostModel
from eqsat_torch import eqsat_backend
from eqsat_torch.inductor import compat

from test_batch import check_against_eager, counts, targets

GPU = CostModel.for_device("cuda")


class ThreeD(nn.Module):
    """Linears of different shapes on [2, 3, K_i] inputs (same leading dims), optionally without bias."""

    def __init__(self, dims=((8, 4), (12, 16), (4, 8)), bias=True):
        super().__init__()
        self.lins = nn.ModuleList(nn.Linear(k, n, bias=bias) for k, n in dims)

    def forward(self, *xs):
        return torch.cat([torch.tanh(lin(x)) for lin, x in zip(self.lins, xs)], dim=-1)


def _inputs(model, *lead):
    return [torch.randn(*lead, lin.in_features) for lin in model.lins]


@pytest.mark.parametrize("train", [True, False])
def test_the_gpu_model_groups_the_parity_model_and_it_matches_eager(train):
    torch.manual_seed(0)
    compat.reset_dynamo()
    model, x = GroupLinear(), torch.randn(16, 80)
    if train:
        gm, report = check_against_eager(model, x, cost=GPU, uses=["group_linear"])
    else:
        with torch.no_grad():
            backend = eqsat_backend(inner="eager", cost=GPU, validate=True)
            out = torch.compile(model, backend=backend)(x)
            torch.testing.assert_close(out, model(x), rtol=1e-4, atol=1e-5)
        report = backend.reports[0]
        assert report.rules_used.get("group_linear"), report.summary()
    assert report.kernels_after < report.kernels_before, report.summary()


def test_the_padded_form_is_one_bmm_and_the_cpu_model_keeps_the_linears():
    torch.manual_seed(0)
    compat.reset_dynamo()
    gm, _ = check_against_eager(GroupLinear(), torch.randn(16, 80), cost=GPU, uses=["group_linear"],
                                disabled=["decompose"])
    ts = targets(gm)
    assert ts.count(torch.bmm) == 1 and torch.constant_pad_nd in ts, ts
    assert not any(t is torch.nn.functional.linear for t in ts), ts
    compat.reset_dynamo()
    _, report = check_against_eager(GroupLinear(), torch.randn(16, 80), uses=None)
    assert "group_linear" not in report.rules_used, report.summary()


@pytest.mark.parametrize("bias", [True, False])
def test_three_dimensional_inputs_with_or_without_bias(bias):
    torch.manual_seed(0)
    compat.reset_dynamo()
    model = ThreeD(bias=bias)
    check_against_eager(model, *_inputs(model, 2, 3), cost=GPU, uses=["group_linear"])


def test_switched_off_by_name():
    model = ThreeD()
    assert counts(model, *_inputs(model, 2, 3)) == {"group_linear": 1}
    assert counts(model, *_inputs(model, 2, 3), disabled=["group_linear"]) == {}


# -- near misses: what must not be grouped ------------------------------------------------------------
def test_a_shared_input_is_batch_linear_lhs_not_group_linear():
    lins = [nn.Linear(8, n) for n in (4, 12, 16)]
    got = counts(lambda x: [lin(x) for lin in lins], torch.randn(4, 8))
    assert got == {"batch_linear_lhs": 1}, got


def test_different_batch_dims_are_not_grouped():
    model = ThreeD()
    xs = [torch.randn(2, 3, 8), torch.randn(2, 5, 12), torch.randn(3, 3, 4)]
    assert counts(lambda *xs: [lin(x) for lin, x in zip(model.lins, xs)], *xs) == {}


def test_integer_linears_are_not_grouped():
    a, b = torch.randint(0, 5, (4, 3)), torch.randint(0, 5, (4, 6))
    wa, wb = torch.randint(0, 5, (2, 3)), torch.randint(0, 5, (5, 6))
    got = counts(lambda a, b: (torch.nn.functional.linear(a, wa), torch.nn.functional.linear(b, wb)), a, b)
    assert "group_linear" not in got, got


def test_a_linear_reading_another_is_not_grouped_with_it():
    first, second = nn.Linear(8, 12), nn.Linear(12, 4)
    got = counts(lambda x: second(torch.relu(first(x))), torch.randn(4, 8))
    assert got == {}, got


def test_members_of_one_shape_are_batch_linear_only():
    lins = [nn.Linear(8, 8) for _ in range(3)]
    got = counts(lambda *xs: [lin(x) for lin, x in zip(lins, xs)], *(torch.randn(4, 8) for _ in range(3)))
    assert got == {"batch_linear": 1}, got


def test_a_dynamic_batch_dim_is_grouped_and_matches_eager():
    torch.manual_seed(0)
    compat.reset_dynamo()
    model = GroupLinear()
    backend = eqsat_backend(inner="eager", cost=GPU)
    f = torch.compile(model, backend=backend, dynamic=True)
    with torch.no_grad():
        for rows in (8, 13):
            x = torch.randn(rows, 80)
            torch.testing.assert_close(f(x), model(x), rtol=1e-4, atol=1e-5)
    assert backend.reports[0].rules_used.get("group_linear"), backend.reports[0].summary()
