"""End to end: torch.compile(m, backend="eqsat") matches eager, in inference and in training."""
import copy

import pytest
import torch

from fx_bridge import eqsat_backend, last_reports

from e2e_models import MLP, Attention, SplitCat

MODELS = {"mlp": (MLP, (4, 16)), "attention": (Attention, (2, 5, 16)), "splitcat": (SplitCat, (4, 32))}


def _build(name):
    torch.manual_seed(0)
    cls, shape = MODELS[name]
    return cls(), torch.randn(*shape)


@pytest.mark.parametrize("name", MODELS)
def test_inference_matches_eager(name):
    model, x = _build(name)
    with torch.no_grad():
        expected = model(x)
        actual = torch.compile(model, backend="eqsat")(x)
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)
    assert last_reports() and not last_reports()[-1].skipped


@pytest.mark.parametrize("name", MODELS)
def test_training_step_matches_eager(name):
    model, x = _build(name)
    twin = copy.deepcopy(model)
    backend = eqsat_backend()
    compiled = torch.compile(twin, backend=backend)
    model(x).square().sum().backward()
    compiled(x).square().sum().backward()
    for (pname, p), q in zip(model.named_parameters(), twin.parameters()):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-5, msg=pname)
    assert backend.reports and not backend.reports[0].skipped


def test_backend_is_registered_by_entry_point():
    from torch._dynamo import list_backends

    assert "eqsat" in list_backends(exclude_tags=())


def test_options_reach_the_optimizer():
    model, x = _build("splitcat")
    backend = eqsat_backend(inner="eager", validate=True, disabled=["algebra"])
    torch.compile(model, backend=backend)(x)
    (report,) = backend.reports
    assert not any(name in report.rules_fired for name in ("cat_single", "view_view"))
    with pytest.raises(ValueError, match="unknown eqsat option 'no_such_option'"):
        eqsat_backend(no_such_option=1)
