"""Shared-input projections (q/k/v, gate/up) priced where they run.

Inference with Inductor's ``freezing``: Dynamo makes parameters graph attributes holding real
tensors, and Inductor folds them into constants, so a cat of weights costs nothing at run time.

- The frozen Llama graph goes through eqsat (it used to fail: "Please convert all Tensors to
  FakeTensors first ... aten.embedding(Parameter ...)", and its rotary embedding's autocast region
  made it a skip).
- Shared-input projections fuse when Inductor freezes: q/k/v (3 linears of one input) and gate/up
  (2) become one matmul each, and Inductor launches that many fewer extern kernels than alone.

Training: the weight cat is a copy every step, but each fused projection also saves its gradient
matmuls, so the pre-grad graph of a training step fuses too, with eager's loss and gradients.
"""
import copy

import pytest
import torch

from bench.models import REGISTRY
from eqsat_torch import eqsat_backend
from eqsat_torch.inductor import compat
from bench.inductor_metrics import capture_output_code, inductor_config_patch, launch_counts
from optimized import assert_no_fallback, assert_optimized

pytest.importorskip("transformers")


def test_params_count_as_frozen_only_for_inference_with_freezing_on():
    with inductor_config_patch("inductor", freezing=True):
        with torch.no_grad():
            assert compat.inductor_freezes_params()
        assert not compat.inductor_freezes_params()  # training: the weights change every step
    with inductor_config_patch("inductor", freezing=False), torch.no_grad():
        assert not compat.inductor_freezes_params()


def test_frozen_llama_graph_is_optimized_not_skipped():
    """Parameters arrive as ``get_attr`` nodes with real tensors; eager's values come out."""
    model, inputs = REGISTRY["llama"]("tiny", "cpu", torch.float32)
    backend = eqsat_backend(inner="eager", validate=True)
    with inductor_config_patch("inductor", freezing=True), torch.no_grad():
        expected = model(*inputs)
        actual = torch.compile(model, backend=backend)(*inputs)
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)
    (report,) = backend.reports
    assert_no_fallback(report)


def _frozen_inference(name: str, backend):
    compat.reset_dynamo()
    model, inputs = REGISTRY[name]("tiny", "cpu", torch.float32)
    with inductor_config_patch("inductor", freezing=True), torch.no_grad(), capture_output_code() as code:
        expected = model(*inputs)
        actual = torch.compile(model, backend=backend)(*inputs)
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)
    return launch_counts(code)


@pytest.mark.slow
@pytest.mark.parametrize("name, fused", [("bert_layer", 2), ("llama", 3)])
def test_shared_input_projections_fuse_under_freezing(name, fused):
    """BERT: q/k/v → one matmul (2 fewer); Llama: q/k/v and gate/up (3 fewer). Inductor's own
    concat-linear pass is off on CPU (``cpp.enable_concat_linear``), so the drop is ours."""
    alone = _frozen_inference(name, "inductor")
    backend = eqsat_backend(post_grad=False)
    ours = _frozen_inference(name, backend)
    (report,) = backend.reports
    assert_optimized(report, "batch_linear_lhs")
    assert ours["extern"] == alone["extern"] - fused, (ours, alone)
    assert ours["total"] < alone["total"], (ours, alone)


def test_llama_training_step_fuses_projections_with_eager_gradients():
    model, (ids,) = REGISTRY["llama"]("tiny", "cpu", torch.float32)
    twin = copy.deepcopy(model)
    backend = eqsat_backend(inner="eager", validate=True)
    torch.compile(twin, backend=backend)(ids).square().sum().backward()
    model(ids).square().sum().backward()
    (report,) = backend.reports
    assert_optimized(report, "batch_linear_lhs")
    for (name, want), got in zip(model.named_parameters(), twin.parameters()):
        torch.testing.assert_close(got.grad, want.grad, rtol=1e-4, atol=1e-5, msg=lambda m: f"{name}: {m}")

