"""``torch.func`` transforms inside a compiled function: the graph Dynamo hands over holds vmap's
batched and grad's wrapped tensors, which only exist inside the transform; the pre-grad pass skips
it with that reason (it used to fail running it and log an internal error), and the result is eager's."""
import pytest
import torch

from eqsat_torch import last_reports


def _pieces_relu(row):
    return torch.cat([p.relu() for p in torch.split(row, 2)])


def _pieces_sin_sum(row):
    return torch.cat([p.sin() for p in torch.split(row, 2)]).sum()


CASES = {
    "vmap": (lambda x: torch.func.vmap(_pieces_relu)(x), (3, 8)),
    "grad": (lambda x: torch.func.grad(_pieces_sin_sum)(x), (8,)),
}


@pytest.mark.parametrize("name", CASES)
def test_func_transform_is_skipped_with_its_reason(name, eqsat_log):
    fn, shape = CASES[name]
    x = torch.randn(*shape)
    torch.testing.assert_close(torch.compile(fn, backend="eqsat")(x), fn(x))
    report = last_reports()[-1]
    assert report.fallback == "skipped", report.skipped
    assert "torch.func transform" in report.skipped, report.skipped
    assert "internal error" not in eqsat_log.text
