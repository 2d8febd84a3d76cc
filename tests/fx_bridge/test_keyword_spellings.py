"""Every spelling Dynamo emits lowers: the tensor passed by keyword (``torch.split(tensor=x, ...)``,
``torch.unbind(input=x)``, ``torch.chunk(input=x, ...)``) is the same term as passed positionally."""
import pytest
import torch

from eqsat_torch import eqsat_backend

CASES = {
    "split": lambda x: torch.cat([p.relu() for p in torch.split(tensor=x, split_size_or_sections=4, dim=1)], 1),
    "unbind": lambda x: torch.stack([p.relu() for p in torch.unbind(input=x, dim=0)], 0),
    "chunk": lambda x: torch.cat([p.relu() for p in torch.chunk(input=x, chunks=2, dim=1)], 1),
    "cat": lambda x: torch.cat(tensors=[p.relu() for p in x.split(4, 1)], dim=1),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_tensor_by_keyword_lowers_and_is_rewritten(name):
    f = CASES[name]
    backend = eqsat_backend(inner="eager", post_grad=False)
    x = torch.randn(4, 16)
    torch.testing.assert_close(torch.compile(f, backend=backend)(x), f(x))
    report = backend.reports[0]
    assert report.changed and not report.fallback and report.rules_used, report.summary()
