"""Hugging Face transformer blocks (GPT-2, BERT, T5) from tiny configs, no downloads, through the
eqsat pre-grad pass with validation: eager's outputs, and the optimizer ran to the end (no skip, no
fallback; T5's in-place bucket add on an intermediate is rewritten out of place, no longer a skip).
Their training graphs go through the post-grad pass in tests/fx_bridge/inductor/post_grad/test_post_grad.py."""
import pytest
import torch

from bench.models import NEEDS_TRANSFORMERS, REGISTRY
from eqsat_torch import eqsat_backend
from optimized import assert_no_fallback, assert_optimized

pytest.importorskip("transformers")  # `make test` installs the hf extra


@pytest.mark.parametrize("name", sorted(NEEDS_TRANSFORMERS))
def test_block_inference_matches_eager(name):
    model, inputs = REGISTRY[name]("tiny", "cpu", torch.float32)
    backend = eqsat_backend(inner="eager", validate=True)
    with torch.no_grad():
        expected = model(*inputs)
        actual = torch.compile(model, backend=backend)(*inputs)
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)
    (report,) = backend.reports
    assert_no_fallback(report)


def _check_bart_gpu_program(backend):
    assert_optimized(backend.reports[0])  # the GPU program, not a fallback: a batch fusion of it
    assert set(backend.reports[0].rules_used) & {"batch_linear", "batch_linear_lhs", "batch_layernorm"}
    for report in backend.reports:
        assert_no_fallback(report)


def test_bart_under_the_gpu_model_is_batched_and_matches_eager():
    """The GPU decision on BART, made by the engine and run eagerly: a batch fusion, eager's outputs.
    (Through Inductor, which once miscompiled it, in the slow test below.)"""
    _check_bart_gpu_program(_under_the_gpu_model("bart", "eager", atol=1e-4))


@pytest.mark.slow
def test_bart_under_the_gpu_model_through_inductor_matches_eager():
    """The H200 measured BART inference wrong (max error 6.2): the GPU model batched a decoder
    projection with the encoder's q/k/v as one bmm over a stack of [x, y, y, y], which Inductor
    miscompiles (CPU too, at `small`). The GPU model is forced so CI checks the GPU decision through
    Inductor (C++ compiles of both passes' graphs: the slow tier)."""
    backend = _under_the_gpu_model("bart", "inductor", atol=1e-4)
    _check_bart_gpu_program(backend)
    from eqsat_rules.batch import POINTWISE_BATCHES
    assert backend.post_grad_reports  # pointwise batches are left to Inductor in a GPU compile's Aten graphs
    for report in backend.post_grad_reports:
        assert not set(report.rules_used) & set(POINTWISE_BATCHES), report.summary()


@pytest.mark.parametrize("undo", [True, False], ids=["undo", "no-undo"])
def test_llama_under_the_gpu_model_keeps_only_the_rewrites_that_pay(undo, monkeypatch):
    """Llama at size small, GPU model: fusing q/k/v pays (one weight cat for two matmuls); batching the
    rotary embedding's ``cos * scale`` and ``sin * scale`` ties with the input in the model but cost the
    H200 one launch more a layer (Inductor materialised an operand of the fused rotary kernel). The
    extractor puts back every input node whose rewrite the price does not need; without that step
    the tie rides along with the fusion that pays. That program is the ILP's; the ILP stops on its
    work limit (``Budget.ilp_nodes``), not on a share of the elapsed time that timed out under load
    (a clean clone's CI run once chose a costlier candidate without the tie)."""
    from eqsat import extract
    if not undo:
        monkeypatch.setattr(extract, "undo_unpaid", lambda *args, **kwargs: (None, False))  # nothing put back, not cut
    backend = _under_the_gpu_model("llama", "eager", atol=1e-5, batch_pointwise=True)
    used = set(backend.reports[0].rules_used)
    assert backend.reports[0].ilp_status == "optimal", backend.reports[0].summary()
    assert "batch_linear_lhs" in used
    assert ("batch_mul" in used) != undo, backend.reports[0].summary()


def _rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class RotaryAttention(torch.nn.Module):
    """Llama's attention as transformers 5.x writes it: q/k/v projections, rotary embedding, SDPA."""

    def __init__(self, width: int = 256, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v = (torch.nn.Linear(width, width, bias=False) for _ in range(3))

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        q, k, v = (p(x).view(b, s, self.heads, -1).transpose(1, 2) for p in (self.q, self.k, self.v))
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


def test_the_gpu_model_leaves_pointwise_batches_to_inductor():
    """Batching the rotary products of q and k over a stack looks cheaper to the model, but Inductor
    then materialises every stacked operand it fused before (zoo Llama, transformers 5.17, fake H200:
    31 launches as written, 38 with the batch, 27 with q/k/v fused alone). A GPU compile leaves
    pointwise batches to Inductor, in the pre-grad pass as in the post-grad one, and the projection
    fusion that pays is chosen (offered pointwise batches, the model chose nothing here)."""
    from eqsat.cost import CostModel
    from eqsat_rules.batch import POINTWISE_BATCHES
    from eqsat_torch.inductor.probe import available, count_launches
    from eqsat_torch.pipeline import optimize

    x, cos, sin = torch.randn(2, 128, 256), torch.randn(1, 1, 128, 64), torch.randn(1, 1, 128, 64)
    got = []
    model = RotaryAttention().eval()
    with torch.no_grad():
        torch.compile(model, backend=lambda gm, ex: got.append((gm, list(ex))) or gm.forward)(x, cos, sin)
        gm, inputs = got[0]
        new_gm, report = optimize(gm, inputs, {"cost": CostModel.for_device("cuda"), "verify": False})
        assert_optimized(report, "batch_linear_lhs")
        assert not set(report.rules_used) & set(POINTWISE_BATCHES), report.summary()
        assert (report.kernels_before, report.kernels_after) == (5, 4)
        torch.testing.assert_close(new_gm(*inputs)[0], model(x, cos, sin), rtol=1e-4, atol=1e-5)
        if available("cuda"):  # Inductor's own count agrees
            assert count_launches(new_gm, inputs, "cuda", "torch").total < count_launches(gm, inputs, "cuda", "torch").total


def _under_the_gpu_model(name: str, inner: str, atol: float, **cost):
    """Inference of a block at size small with the GPU cost model forced, checked against eager."""
    from eqsat.cost import CostModel
    model, inputs = REGISTRY[name]("small", "cpu", torch.float32)
    backend = eqsat_backend(cost=CostModel.for_device("cuda", **cost), inner=inner)
    with torch.no_grad():
        expected = model(*inputs)
        actual = torch.compile(model, backend=backend)(*inputs)
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=atol)
    return backend
