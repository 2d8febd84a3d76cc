"""``with torch.autocast(..., enabled=False)`` inside a compiled function (HF rotary embeddings):
dropped when autocast is already off, so the graph is optimized; kept (and the graph skipped) when
an enclosing autocast is on, where the region does change dtypes."""
import torch

from eqsat_torch import eqsat_backend
from optimized import assert_kept, assert_no_fallback


class RotaryLike(torch.nn.Module):
    def forward(self, x, w):
        with torch.autocast("cpu", enabled=False):
            angles = (x.float() @ w.float()).relu()
            cos, sin = angles.cos(), angles.sin()
        return torch.cat([x * cos, x * sin], -1) @ torch.cat([w, w], 0)


def _compile(*inputs):
    backend = eqsat_backend(inner="eager", validate=True, always_raise=True)
    return torch.compile(RotaryLike(), backend=backend)(*inputs), backend.reports[0]


def test_disabled_region_where_autocast_is_off_is_optimized():
    x, w = torch.randn(4, 8), torch.randn(8, 8)
    out, report = _compile(x, w)
    torch.testing.assert_close(out, RotaryLike()(x, w))
    assert_no_fallback(report)
    assert report.validated.startswith("ok"), report.validated


def test_disabled_region_under_an_enabled_autocast_is_kept():
    x, w = torch.randn(4, 8), torch.randn(8, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, report = _compile(x, w)
        expected = RotaryLike()(x, w)
    torch.testing.assert_close(out, expected)
    assert_kept(report, "_enter_autocast")


def test_a_program_autocast_refuses_to_run_is_kept_cleanly():
    """Soak seed 3000284: float16 inputs under CPU bfloat16 autocast. Batching two linears of split
    pieces (padded to one width) stacks float16 pieces, which autocast's policy for ``stack``
    refuses on the CPU (eager runs no ``stack``): the program is kept out with the reason, not as an
    internal error, and the case matches eager."""
    from bench.soak.check import run_case

    result = run_case(3000284, train=False)
    assert result["problem"] is None and "internal_errors" not in result, result
