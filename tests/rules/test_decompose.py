"""decompose_mm and friends (Optimus' decompose_mm): a matmul with tiny inner and output dims becomes a
broadcast product and its sum, which Inductor fuses with the pointwise ops around it. The per-node
costs cannot see that fusion; the extractor's fusion search (``eqsat.extract.fusion_search``) does."""
import pytest
import torch

from eqsat_torch import eqsat_backend
from bench import inductor_metrics
from eqsat_torch.inductor import compat

from optimized import assert_no_fallback, assert_optimized


class TinyMLP(torch.nn.Module):
    def __init__(self, dims=(16, 8, 4)):
        super().__init__()
        self.a = torch.nn.Linear(dims[0], dims[1])
        self.b = torch.nn.Linear(dims[1], dims[2])

    def forward(self, x):
        return torch.sigmoid(self.b(torch.relu(self.a(x))))


def _run(model, *args, **opts):
    compat.reset_dynamo()
    backend = eqsat_backend(inner="eager", **opts)
    out = torch.compile(model, backend=backend)(*args)
    torch.testing.assert_close(out, model(*args), rtol=1e-5, atol=1e-5)
    return backend.reports[0]


def test_tiny_linears_become_one_fused_product_sum_per_layer():
    torch.manual_seed(0)
    report = _run(TinyMLP(), torch.randn(256, 16))
    assert_optimized(report, "decompose_linear")
    assert report.extractor == "local"
    assert report.kernels_after < report.kernels_before


def test_a_wide_inner_dim_is_left_to_the_matmul():
    torch.manual_seed(0)
    report = _run(TinyMLP((64, 8, 4)), torch.randn(256, 64))
    assert report.rules_fired.get("decompose_linear") == 1  # only the 8 → 4 layer qualifies
    assert_no_fallback(report)


@pytest.mark.parametrize("op, shapes", [(torch.mm, [(64, 8), (8, 4)]), (torch.bmm, [(3, 64, 8), (3, 8, 4)])])
def test_mm_and_bmm_followed_by_pointwise(op, shapes):
    torch.manual_seed(0)
    a, b = (torch.randn(s) for s in shapes)
    report = _run(lambda a, b: torch.relu(op(a, b)) * 2, a, b)
    assert_optimized(report, f"decompose_{op.__name__}")


def test_integer_mm_is_not_decomposed():
    """sum of int32 products is int64, mm's is int32: the float guard keeps ints out."""
    a, b = torch.randint(-3, 3, (64, 8), dtype=torch.int32), torch.randint(-3, 3, (8, 4), dtype=torch.int32)
    report = _run(lambda a, b: torch.mm(a, b) * 2, a, b)
    assert "decompose_mm" not in report.rules_fired


def test_training_gradients_match_eager():
    torch.manual_seed(0)
    model, ref = TinyMLP(), TinyMLP()
    ref.load_state_dict(model.state_dict())
    x = torch.randn(128, 16)
    compat.reset_dynamo()
    backend = eqsat_backend(inner="eager")
    torch.compile(model, backend=backend)(x).sum().backward()
    ref(x).sum().backward()
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-5)
    assert any(r.rules_used.get("decompose_linear") for r in backend.reports)


def test_inductor_launches_drop_on_cpu():
    torch.manual_seed(0)
    model, x = TinyMLP(), torch.randn(256, 16)
    launches = {}
    for name in ("inductor", "eqsat"):
        compat.reset_dynamo()
        with inductor_metrics.capture_output_code() as codes:
            # the rewrite's program: Inductor's CPU decision by loop nests (ties keep the input) is
            # tested in test_cpu_decides
            out = torch.compile(model, backend=name, options={"verify": False} if name == "eqsat" else None)(x)
        torch.testing.assert_close(out, model(x), rtol=1e-5, atol=1e-5)
        launches[name] = inductor_metrics.launch_counts(codes)["total"]
    assert launches["eqsat"] < launches["inductor"], launches
