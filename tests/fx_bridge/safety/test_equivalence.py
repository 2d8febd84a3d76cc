"""Issue 41: the always-on equivalence check. Both graphs run on fake tensors in the compile's context
and everything a user can observe is compared; any difference keeps the original graph. The first
tests switch the targeted fixes off (the autocast rule guard, the stride/storage repairs) and show the
check alone refuses the rewrite, so the result is eager's."""
import torch
import torch.nn.functional as F

import eqsat_torch.pipeline as pipeline
from eqsat_torch import eqsat_backend
from eqsat_torch.safety import equivalence
from eqsat_torch.safety.aliasing import Repair
from eqsat_torch.safety.context import Context
from tests.optimized import assert_optimized
from tests.fx_bridge.safety.issue28_programs import cat_of_split, transposed


def split_linears(x, w):
    return torch.cat([F.linear(p, w[:, :8]) for p in torch.split(x, 8, 1)], 1)


def _compile(fn, *inputs, **options):
    backend = eqsat_backend(inner="eager", post_grad=False, **options)
    return torch.compile(fn, backend=backend)(*inputs), backend.reports[0]


def test_check_alone_refuses_the_autocast_decomposition(monkeypatch):
    monkeypatch.setattr(pipeline, "switched_off", lambda *a: {})  # the context's rule guard, off
    x, w = torch.randn(6, 16, requires_grad=True), torch.randn(8, 16, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, report = _compile(split_linears, x, w)
        want = split_linears(x, w)
    assert out.dtype == want.dtype == torch.bfloat16
    torch.testing.assert_close(out, want)
    assert report.refused == "validation: dtype of output 0: torch.float32 != torch.bfloat16", report.summary()
    assert not report.changed and report.fallback == "validation mismatch"


def test_check_alone_refuses_a_differently_strided_output(monkeypatch):
    monkeypatch.setattr(pipeline, "match_aliasing", lambda *a, **k: Repair())  # R1/R2 repairs, off
    x = transposed()
    out, report = _compile(cat_of_split, x)
    want = cat_of_split(x)
    torch.testing.assert_close(out, want)
    assert out.stride() == want.stride()
    assert report.refused.startswith("validation: strides of output 0: (1, 4) != (6, 1)"), report.summary()


def test_check_alone_refuses_an_output_that_is_its_input(monkeypatch):
    monkeypatch.setattr(pipeline, "match_aliasing", lambda *a, **k: Repair())
    x = torch.randn(4, 6)
    out, report = _compile(cat_of_split, x)
    assert out.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    assert report.refused.startswith("validation: storage of output 0"), report.summary()


def test_check_passes_a_sound_rewrite():
    x, w = torch.randn(6, 16, requires_grad=True), torch.randn(8, 16, requires_grad=True)
    out, report = _compile(split_linears, x, w)
    torch.testing.assert_close(out, split_linears(x, w))
    assert_optimized(report)
    assert report.refused == "" and "equivalence" in report.phase_seconds


def test_check_runs_on_symbolic_shapes():
    def fn(x):
        return torch.cat([p.relu() for p in torch.split(x, 4, 1)], 1) * 2

    backend = eqsat_backend(inner="eager", post_grad=False)
    compiled = torch.compile(fn, backend=backend, dynamic=True)
    for rows in (3, 5):
        x = torch.randn(rows, 8)
        torch.testing.assert_close(compiled(x), fn(x))
    assert any(r.changed for r in backend.reports), [r.summary() for r in backend.reports]
    assert all("equivalence" in r.phase_seconds for r in backend.reports if r.changed)
    assert all(r.refused == "" for r in backend.reports), [r.refused for r in backend.reports]


def _graphs(f, g):
    return torch.fx.symbolic_trace(f), torch.fx.symbolic_trace(g)


def test_each_observable_difference_is_named():
    ctx = Context.capture()
    x = torch.randn(4, 6, requires_grad=True)
    cases = {
        "dtype": (lambda a: a * 2, lambda a: (a * 2).double()),
        "shape": (lambda a: a * 2, lambda a: (a * 2).reshape(6, 4)),
        "strides": (lambda a: a * 2, lambda a: (a * 2).t().contiguous().t()),
        "requires_grad": (lambda a: a * 2, lambda a: a.detach() * 2),
        "storage": (lambda a: a.clone(), lambda a: a.view(4, 6)),
        "mutated inputs": (lambda a: a.detach().clone().add_(1), lambda a: a.detach().add_(1).clone()),
    }
    for what, (f, g) in cases.items():
        original, rewritten = _graphs(f, g)
        problem = equivalence.difference(original, rewritten, [x], ctx)
        assert problem is not None and problem.startswith(f"validation: {what}"), (what, problem)
        assert equivalence.difference(original, original, [x], ctx) is None
    assert x._version == 0  # the check never touched the real input


@torch.library.custom_op("eqsat_test::no_fake_kernel", mutates_args=())
def _no_fake_kernel(a: torch.Tensor) -> torch.Tensor:
    return a * 2


def test_a_check_that_cannot_run_refuses():
    original, rewritten = _graphs(lambda a: torch.ops.eqsat_test.no_fake_kernel(a) + 1, lambda a: a * 2 + 1)
    problem = equivalence.difference(original, rewritten, [torch.randn(3)], Context.capture())
    assert problem.startswith("validation: not checked"), problem


def test_data_dependent_sizes_are_checked():
    """``nonzero``'s size is an unbacked symbol, drawn anew by each run (``u0`` in the original is
    ``u1`` in the rewritten graph): both run, sizes compare by the symbols' order, and a size that
    differs is still named."""
    ctx, x = Context.capture(), torch.randn(4, 6)
    original, rewritten = _graphs(lambda a: ((a * 2).nonzero() * 3, a.sum(1)),
                                  lambda a: ((a + a).nonzero().mul(3), a.sum(1)))
    assert equivalence.difference(original, rewritten, [x], ctx) is None
    _, narrower = _graphs(lambda a: a, lambda a: ((a + a).nonzero()[:, :1] * 3, a.sum(1)))
    problem = equivalence.difference(original, narrower, [x], ctx)
    assert problem == "validation: shape of output 0: (u1, 1) != (u0, 2)", problem


def test_check_runs_in_the_captured_context():
    original, rewritten = _graphs(lambda a, b: a @ b, lambda a, b: (a[:, :, None] * b[None]).sum(1))
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    assert equivalence.difference(original, rewritten, [a, b], Context.capture()) is None
    with torch.autocast("cpu", dtype=torch.bfloat16):
        cast = Context.capture()
    assert equivalence.difference(original, rewritten, [a, b], cast) == \
        "validation: dtype of output 0: torch.float32 != torch.bfloat16"
