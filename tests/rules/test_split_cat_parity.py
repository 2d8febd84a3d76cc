"""Split-cat shapes greedy Optimus turns back into one view of the input (issue 18), through eqsat.

Programs are written the way Optimus' own split-cat tests exercise them (constants built inside the
graph, pieces among other tensors). Each must be optimized (a named rule in ``rules_used``, the graph
not skipped and not fallen back), equal eager forward and backward, and (slow) give Inductor no more
CPU loop nests than Optimus does.
"""
import pytest
import torch

from bench.modes import compile_model
from fx_bridge import eqsat_backend, inductor_metrics


def _ones(*shape):
    return torch.ones(*shape)


def cat_run_with_others(x):
    """A run of every piece between two other tensors, on the split dim."""
    return torch.cat([_ones(2, 5, 32, 16), *torch.split(x, 4, dim=1), _ones(2, 6, 32, 16)], dim=1)


def cat_partial_run_with_others(x):
    """Pieces 1..5 of eight between two other tensors: one narrow."""
    s = torch.split(x, 4, dim=1)
    return torch.cat([_ones(2, 5, 32, 16), *s[1:6], _ones(2, 6, 32, 16)], dim=1)


# (program, rule that must be used)
CASES = {f.__name__: (f, rule) for f, rule in (
    (cat_run_with_others, "cat_split_run"),
    (cat_partial_run_with_others, "cat_split_run"),
)}


def _eqsat(f, x):
    backend = eqsat_backend(inner="eager", post_grad=False)
    out = torch.compile(f, backend=backend)(x)
    assert len(backend.reports) == 1, [r.summary() for r in backend.reports]
    return out, backend.reports[0]


@pytest.mark.parametrize("name", sorted(CASES))
def test_optimized_and_equal_to_eager_forward_and_backward(name):
    f, rule = CASES[name]
    torch.manual_seed(0)
    x = torch.randn(2, 32, 32, 16, requires_grad=True)
    xe = x.detach().clone().requires_grad_()
    out, report = _eqsat(f, x)
    want = f(xe)
    torch.testing.assert_close(out, want)
    weights = torch.randn_like(want)
    (out * weights).sum().backward()
    (want * weights).sum().backward()
    torch.testing.assert_close(x.grad, xe.grad)
    assert not report.skipped and not report.fallback, report.summary()
    assert report.changed and report.rules_used.get(rule), report.summary()


class _Program(torch.nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, x):
        return self.f(x)


def _loop_nests(mode, f, x):
    """Inductor's CPU kernel counter (loop nests) for ``f`` compiled in bench mode ``mode``."""
    inductor_metrics.cold_compile_reset()
    inductor_metrics.reset()
    with torch.no_grad(), inductor_metrics.inductor_config_patch(mode):
        out = compile_model(mode, _Program(f)).fn(x)
    torch.testing.assert_close(out, f(x))
    return inductor_metrics.kernel_counts()["generated"]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_inductor_kernels_no_more_than_optimus(name):
    f, _ = CASES[name]
    x = torch.randn(2, 32, 32, 16)
    alone, optimus, ours = (_loop_nests(m, f, x) for m in ("inductor", "inductor_optimus", "eqsat"))
    assert ours <= optimus < alone, {"inductor": alone, "optimus": optimus, "eqsat": ours}
