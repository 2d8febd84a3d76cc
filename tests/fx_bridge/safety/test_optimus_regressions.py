"""Wrong-result bugs greedy Optimus shipped and fixed, as the same patterns through eqsat.

Each program must be rewritten (a named rule in ``rules_used``; the graph is not skipped and did not
fall back) and still equal eager, forward and backward.
"""
import pytest
import torch

from eqsat.cost import CostModel
from eqsat_torch import eqsat_backend



def _uneven_split_cat_reordered(x):
    a, b, c = x.split([5, 5, 10], 1)
    return torch.cat([c, a, b], 1).relu()


def _cat_not_in_split_order(x):
    s = x.split(4, 1)
    return torch.cat([s[1], s[0], s[3], s[2], s[4]], 1) * 2


def _split_cat_other_shape(x):
    s = x.split(4, 1)
    return torch.cat(s, 0).sigmoid()  # (5·4, 4), not x's (4, 20)


def _split_cat_partial(x):
    s = x.split([3, 7, 10], 1)
    return torch.cat([s[0], s[1]], 1).tanh()  # the first 10 columns only


def _split_cat_round_trip_then_reordered(x):
    s = x.split(5, 1)
    y = torch.cat(s, 1)  # the identity as a value
    t = y.split([10, 10], 1)
    return torch.cat([t[1], t[0]], 1) + 1


CASES = {f.__name__.lstrip("_"): f for f in (
    _uneven_split_cat_reordered, _cat_not_in_split_order, _split_cat_other_shape, _split_cat_partial,
    _split_cat_round_trip_then_reordered)}


REWRITTEN = set(CASES) - {"cat_not_in_split_order"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_split_cat_shapes_match_eager_forward_and_backward(name):
    f = CASES[name]
    torch.manual_seed(0)
    x = torch.randn(4, 20, requires_grad=True)
    xe = x.detach().clone().requires_grad_()
    backend = eqsat_backend(inner="eager", post_grad=False)
    out = torch.compile(f, backend=backend)(x)
    expected = f(xe)
    torch.testing.assert_close(out, expected)
    weights = torch.randn_like(expected)
    (out * weights).sum().backward()
    (expected * weights).sum().backward()
    torch.testing.assert_close(x.grad, xe.grad)
    report = backend.reports[0]
    assert not report.fallback, report.summary()
    if name in REWRITTEN:  # the others are one copy kernel already: nothing to gain, nothing changed
        assert report.changed and report.rules_used, report.summary()
    else:
        assert not report.changed, report.summary()


def test_nan_to_num_keeps_its_arguments_in_a_batched_group():
    """Per-feature nan_to_num(nan=1, posinf=2, neginf=-3) then a linear each (Interformer's
    preprocessing): the nan_to_nums are batched into one; a feature with other arguments must not
    join the group."""
    torch.manual_seed(0)
    lins = torch.nn.ModuleList(torch.nn.Linear(8, 8) for _ in range(5))
    norms = torch.nn.ModuleList(torch.nn.LayerNorm(8) for _ in range(5))

    def f(x):
        feats = [torch.clamp(torch.nan_to_num(t.detach(), nan=1.0, posinf=2.0, neginf=-3.0), -2.5, 2.5)
                 for t in torch.unbind(x, 1)[:4]]
        feats.append(torch.nan_to_num(x[:, 4], nan=5.0))
        return torch.stack([norm(lin(t)) for lin, norm, t in zip(lins, norms, feats)], 1)

    special = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.5])
    x = special.repeat(4 * 5 * 2)[torch.randperm(160)].view(4, 5, 8)
    backend = eqsat_backend(inner="eager", post_grad=False, cost=CostModel.for_device("cpu", frozen_params=True))
    with torch.no_grad():
        out = torch.compile(f, backend=backend)(x)
        torch.testing.assert_close(out, f(x), equal_nan=True)
    report = backend.reports[0]
    assert report.rules_used.get("batch_nan_to_num") and not report.fallback, report.summary()
