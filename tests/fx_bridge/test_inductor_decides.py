"""Inductor decides (issue 29): on a GPU compile the optimizer's program goes on only when Inductor's
own lowering and scheduler count fewer launches for it than for the input program."""
import pytest
import torch

from eqsat.cost import CostModel
from fx_bridge import eqsat_backend, inductor_probe, pipeline
from fx_bridge.options import Options

GPU = CostModel.for_device("cuda")


def two_stage(x):
    """split → sigmoid·2 → cat, then split (4-wide) → tanh+1 → cat: 16 + 4 launches for Inductor alone."""
    first = torch.cat([torch.sigmoid(p) * 2 for p in torch.split(x, 1, dim=1)], dim=1)
    return torch.cat([torch.tanh(q) + 1 for q in torch.split(first, 4, dim=1)], dim=1)


def _compile(**options):
    backend = eqsat_backend(cost=GPU, inner="eager", post_grad=False, **options)
    x = torch.randn(64, 16)
    out = torch.compile(two_stage, backend=backend)(x)
    torch.testing.assert_close(out, two_stage(x))
    return backend.reports[0]


def test_inductor_counts_both_programs_and_ours_wins():
    report = _compile(verify=True)
    assert report.changed and report.rules_used, report.summary()
    # Inductor alone: a kernel per piece of each stage (16 pointwise inputs; 4 ≤ 8 is one kernel);
    # ours: tanh(sigmoid(x)·2)+1, one kernel
    assert report.inductor_launches == {"input": 17, "optimized": 1}, report.summary()
    assert "verify" in report.phase_seconds


def test_the_input_wins_when_inductor_counts_fewer_launches_for_it(monkeypatch):
    """Whatever the model predicted: the graph handed on never launches more than the input."""
    counts = iter([inductor_probe.Launches(3, 0, 100), inductor_probe.Launches(5, 0, 50)])
    monkeypatch.setattr(inductor_probe, "count_launches", lambda *args, **kwargs: next(counts))
    report = _compile(verify=True)
    assert not report.changed and not report.rules_used, report.summary()
    assert report.inductor_launches == {"input": 3, "optimized": 5}
    assert report.kernels_after == report.kernels_before
    assert any("kept the input program" in n for n in report.notes), report.notes


def test_a_cpu_compile_is_not_measured_unless_asked(monkeypatch):
    monkeypatch.setattr(inductor_probe, "count_launches", lambda *a, **k: (_ for _ in ()).throw(AssertionError))
    report = _compile()  # verify=None: only a GPU compile is measured
    assert report.changed and not report.inductor_launches


def test_verification_that_the_budget_cannot_pay_for_is_skipped(monkeypatch):
    monkeypatch.setattr(pipeline, "VERIFY_SECONDS_PER_NODE", 1e6)
    report = _compile(verify=True)
    assert report.changed and not report.inductor_launches, report.summary()
    assert any("not measured by Inductor" in n for n in report.notes), report.notes


def test_verify_option_is_checked():
    with pytest.raises(TypeError, match="verify"):
        Options(verify="yes")
