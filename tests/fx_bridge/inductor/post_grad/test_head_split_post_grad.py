"""Attention's q/k/v head copies in the Aten graph (issue 15).

``aten.matmul`` on (B, H, T, D) head views decomposes to ``clone`` + ``_unsafe_view`` + ``bmm``, so each of
q, k, v is copied on its own (one kernel each on the H200). ``head_split_copy`` and
``transpose_out_of_copy`` make one copy of the whole projection serve all three: the Aten graph keeps one
clone where it had three, and Inductor writes one loop nest where it wrote three.
The attention below has a ``tanh`` on its scores so that CPU Inductor does not replace the pattern by
its fused SDPA kernel before our pass (GPU Inductor leaves GPT-2's attention as bmm + softmax + bmm).
"""
import pytest
import torch
from functorch.compile import make_boxed_func

from bench.models import REGISTRY
from eqsat.cost import CostModel
from eqsat_torch import eqsat_backend
from eqsat_torch.inductor import compat
from bench.inductor_metrics import capture_output_code, inductor_config_patch, launch_counts
from eqsat_torch.pipeline import Options
from eqsat_torch.inductor.post_grad import EqsatPostGradPass

HEAD_RULES = ("head_split_copy_split_inner", "head_split_copy_split_last")


class Attention(torch.nn.Module):
    def __init__(self, width: int = 128, heads: int = 4):
        super().__init__()
        self.qkv, self.heads = torch.nn.Linear(width, 3 * width), heads

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (p.view(b, t, self.heads, c // self.heads).transpose(1, 2) for p in self.qkv(x).split(c, 2))
        return (q @ k.transpose(-1, -2)).tanh().softmax(-1) @ v


def _clones(graph: torch.fx.Graph) -> int:
    return sum(n.target is torch.ops.aten.clone.default for n in graph.nodes)


def _through_post_grad(model, x, device):
    """The inference Aten graph through our pass alone, run eagerly: (output, clones before, after, report)."""
    p = EqsatPostGradPass(Options(cost=CostModel.for_device(device)))
    seen = []

    def compiler(gm, example_inputs):
        before = _clones(gm.graph)
        p(gm.graph)
        gm.recompile()
        seen.append((before, _clones(gm.graph)))
        return make_boxed_func(gm.forward)

    with torch.no_grad():
        out = torch.compile(model, backend=compat.aot_backend(compiler))(x)
    ((before, after),), (report,) = seen, p.reports
    return out, before, after, report


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_one_copy_serves_q_k_and_v(device):
    torch.manual_seed(0)
    model, x = Attention(), torch.randn(2, 8, 128)
    out, before, after, report = _through_post_grad(model, x, device)
    with torch.no_grad():
        torch.testing.assert_close(out, model(x))
    assert report.rules_fired.get("head_split_copy_split_inner") and report.rules_fired.get("transpose_out_of_copy")
    assert (before, after) == (3, 1)
    if device == "cuda":  # a copy is a launch of its own on the GPU: 3 → 1
        assert report.kernels_after == report.kernels_before - 2, report.summary()


def test_gpt2_block_under_the_gpu_model_copies_each_projection_once():
    model, (x,) = REGISTRY["gpt2_block"]("small", "cpu", torch.float32)
    out, before, after, report = _through_post_grad(model.eval(), x, "cuda")
    with torch.no_grad():
        torch.testing.assert_close(out, model(x), rtol=1e-4, atol=1e-5)
    assert any(report.rules_fired.get(r) for r in HEAD_RULES), report.rules_fired
    assert after < before, (before, after)
    assert report.kernels_after < report.kernels_before, report.summary()


def _inductor(model, x, backend):
    """Launches and parallel loop nests of a cold compile (a cached graph would skip our pass)."""
    compat.reset_dynamo()
    with inductor_config_patch("inductor"), torch.no_grad(), capture_output_code() as code:
        out = torch.compile(model, backend=backend)(x)
    torch.testing.assert_close(out, model(x))
    return launch_counts(code), "".join(code).count("#pragma omp for")


@pytest.mark.slow
def test_cpu_inductor_writes_one_copy_loop_instead_of_three():
    """CPU Inductor already fuses the three copies into two kernels, so launches tie; the loop nests
    that write copies (one parallel loop each) drop from 3 to 1."""
    torch.manual_seed(0)
    model, x = Attention(), torch.randn(2, 8, 128)
    alone, alone_loops = _inductor(model, x, "inductor")
    backend = eqsat_backend()
    ours, our_loops = _inductor(model, x, backend)
    assert ours["total"] <= alone["total"], (ours, alone)
    assert (alone_loops, our_loops) == (3, 1)
    assert any(r.rules_fired.get("head_split_copy_split_inner") for r in backend.post_grad_reports)
