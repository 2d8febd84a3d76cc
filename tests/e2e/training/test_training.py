"""A training step through Inductor with both eqsat passes: eager's loss and gradients, the post-grad
pass sees the forward and the backward graph, and neither graph gets more kernels than Inductor alone.
Compiles are shared between tests (one per model and mode). The slow tier runs one model of each
family (recommendation, split-cat, transformer block); every other model is `full` (make test-all).
The fast tier checks every model's training graphs through the post-grad pass without Inductor's
C++ (tests/fx_bridge/inductor/post_grad/test_post_grad.py)."""
import functools

import pytest
import torch

from bench.models import NEEDS_TRANSFORMERS, PARITY, REGISTRY
from bench.scripts.train_step import build, max_grad_error, run_step
from eqsat_torch.inductor import compat
from optimized import assert_no_fallback

SLOW = {"recsys_tower", "split_cat_mixed", "gpt2_block"}  # the slow tier's representatives


def _params():
    for name in sorted(set(REGISTRY) - PARITY):
        yield pytest.param(name, marks=[pytest.mark.slow] + ([] if name in SLOW else [pytest.mark.full]), id=name)


@functools.lru_cache(maxsize=None)
def _result(name: str, mode: str | None):
    if name in NEEDS_TRANSFORMERS:
        pytest.importorskip("transformers")
    compat.reset_dynamo()
    model, inputs = build(name, "tiny")
    return run_step(model, inputs, mode)


@pytest.mark.parametrize("name", list(_params()))
def test_loss_and_gradients_match_eager(name):
    eager, ours = _result(name, None), _result(name, "eqsat")
    assert ours.loss == pytest.approx(eager.loss, rel=1e-4, abs=1e-5)
    assert max_grad_error(ours, eager) < 1e-4
    reports = ours.backend.post_grad_reports
    assert len(reports) >= 2, "the forward and the backward graph reach the post-grad pass"
    for report in [*ours.backend.reports, *reports]:
        assert_no_fallback(report)


@pytest.mark.parametrize("name", list(_params()))
def test_no_more_kernels_than_inductor(name):
    inductor, ours = _result(name, "inductor"), _result(name, "eqsat")
    assert ours.kernels_fwd["total"] <= inductor.kernels_fwd["total"]
    assert ours.kernels_bwd["total"] <= inductor.kernels_bwd["total"]
