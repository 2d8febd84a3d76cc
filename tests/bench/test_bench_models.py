"""Every registered model builds, runs eagerly to a finite output, and is deterministic."""

import importlib.util

import pytest
import torch

from bench.models import NEEDS_TRANSFORMERS, PARITY, REGISTRY

HAVE_TRANSFORMERS = importlib.util.find_spec("transformers") is not None


@pytest.mark.parametrize("name", sorted(set(REGISTRY) - PARITY))
def test_builder_runs_eagerly_and_is_deterministic(name):
    if name in NEEDS_TRANSFORMERS and not HAVE_TRANSFORMERS:
        pytest.skip("transformers is not installed")
    model, inputs = REGISTRY[name]("tiny")
    again, inputs_again = REGISTRY[name]("tiny")
    with torch.no_grad():
        out, out_again = model(*inputs), again(*inputs_again)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, out_again, rtol=0, atol=0)


@pytest.mark.parametrize("name", ["dhen", "illustrative", "split_stack_unbind"])
def test_size_knob_scales_the_model(name):
    def elements(model, inputs):
        return sum(p.numel() for p in model.parameters()) + sum(x.numel() for x in inputs)

    assert elements(*REGISTRY[name]("small")) > elements(*REGISTRY[name]("tiny"))


def test_integer_size_sets_the_branch_count():
    model, (x,) = REGISTRY["illustrative"](6)
    assert len(model.linears) == 6 and x.shape[1] == 6 * model.dim
