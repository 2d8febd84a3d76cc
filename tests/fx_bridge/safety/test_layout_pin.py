"""Case 0 of the trust issue: ``as_strided`` reads its input's memory layout, not only its values.

Three projections of one input, each read back with ``as_strided`` (the attention pattern Optimus
once broke): the GPU cost model batches the three linears into one matmul, after which the
``as_strided`` strides would index the batched buffer. The producer's layout is pinned, so the
result equals eager. The GPU model is forced on CPU, so CI sees the decision the H200 makes.
"""
import torch
import torch.nn as nn

from eqsat.cost import CostModel
from eqsat_torch import eqsat_backend
from eqsat_torch.lowering import lower as lower_mod

S, B, H, HD = 4, 2, 2, 8


class QKVAsStrided(nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v = (nn.Linear(H * HD, H * HD) for _ in range(3))

    def forward(self, x):  # x: (S, B, H*HD)
        outs = []
        for proj in (self.q, self.k, self.v):
            t = proj(x)
            outs.append(t.as_strided((H, B * S, HD), (HD, H * HD, 1)))
        q, k, v = outs
        return torch.bmm(torch.bmm(q, k.transpose(1, 2)).softmax(-1), v)


def _compile(model, x, **opts):
    # The GPU model with weights folded (inference with Inductor's freezing): batching q/k/v pays.
    backend = eqsat_backend(cost=CostModel.for_device("cuda", frozen_params=True), inner="eager",
                            post_grad=False, **opts)
    return torch.compile(model, backend=backend)(x), backend.reports[0]


def test_as_strided_reads_the_layout_eager_gives_it():
    torch.manual_seed(0)
    model, x = QKVAsStrided(), torch.randn(S, B, H * HD)
    with torch.no_grad():
        out, report = _compile(model, x)
        torch.testing.assert_close(out, model(x))
    assert not report.skipped and "batch_linear_lhs" not in report.rules_used


def test_without_the_pin_the_gpu_model_batches_and_breaks_it(monkeypatch):
    """The test above can fail: unpinned, the GPU model batches q/k/v and as_strided reads garbage."""
    monkeypatch.setattr(lower_mod, "layout_pinned", lambda nodes: set())
    torch.manual_seed(0)
    model, x = QKVAsStrided(), torch.randn(S, B, H * HD)
    with torch.no_grad():
        out, report = _compile(model, x)
        assert "batch_linear_lhs" in report.rules_used
        assert not torch.allclose(out, model(x))


def test_pinning_is_local_other_projections_still_batch():
    """Only what the as_strided input aliases is pinned: two more projections of x still batch."""
    class Mixed(QKVAsStrided):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(H * HD, 64), nn.Linear(H * HD, 64)

        def forward(self, x):
            return super().forward(x).sum() + (self.a(x).relu() * self.b(x)).sum()

    torch.manual_seed(0)
    model, x = Mixed(), torch.randn(S, B, H * HD)
    with torch.no_grad():
        out, report = _compile(model, x)
        torch.testing.assert_close(out, model(x))
    assert report.rules_used.get("batch_linear_lhs")
