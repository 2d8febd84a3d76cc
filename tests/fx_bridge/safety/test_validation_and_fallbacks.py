"""Validation covers every pass; the log tells a skip from a user error, a mismatch and our bug
(trust issue, cases 2, 5 and 6)."""
import operator

import pytest
import torch
import torch.nn.functional as F

from eqsat_torch import eqsat_backend, optimize
from eqsat import driver
from eqsat_torch import pipeline
from eqsat_rules.dsl import relu, rewrite, tensor

x = tensor("x")
RELU_ID = rewrite("user_relu_id", relu(x), x)  # unsound on purpose; needs check=False


def _f(t):
    return torch.cat(torch.split(t.relu(), 2, dim=1), dim=1) * 3


@pytest.mark.slow
def test_unsound_user_rule_is_caught_by_validation_in_both_passes():
    """Dynamo graph and the Aten forward and backward graphs are all validated and fall back;
    the training step equals eager."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))
    x = torch.randn(16, 8)
    backend = eqsat_backend(extra_rules=[RELU_ID], check=False, validate=True)
    out = torch.compile(model, backend=backend)(x)
    out.square().sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    expected = model(x)
    expected.square().sum().backward()
    torch.testing.assert_close(out, expected)
    for g, p in zip(grads, model.parameters()):
        torch.testing.assert_close(g, p.grad)
    pre, post = backend.reports, backend.post_grad_reports
    assert pre[0].fallback == "validation mismatch", pre[0].summary()
    assert len(post) >= 2 and all(r.fallback == "validation mismatch" for r in post if "relu" in str(r.rules_used) or r.fallback), [r.summary() for r in post]
    assert any(r.fallback == "validation mismatch" for r in post)


def test_post_grad_validation_runs_on_random_inputs_and_falls_back_on_mismatch(eqsat_log):
    """The Aten pass alone (no Inductor): validation draws inputs from the fake values."""
    import sys
    import pathlib
    sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "aten"))
    from tests.fx_bridge.inductor.post_grad.aten_harness import pass_backend

    backend, p = pass_backend(extra_rules=[RELU_ID], check=False, validate=True)
    t = torch.randn(4, 8, requires_grad=True)
    out = torch.compile(lambda v: v.relu() * 2, backend=backend)(t)
    torch.testing.assert_close(out, t.relu() * 2)
    assert p.reports and p.reports[0].fallback == "validation mismatch", [r.summary() for r in p.reports]
    assert "validation mismatch" in eqsat_log.text


def test_post_grad_validation_passes_a_sound_rewrite():
    import sys
    import pathlib
    sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "aten"))
    from tests.fx_bridge.inductor.post_grad.aten_harness import pass_backend

    backend, p = pass_backend(validate=True)
    t = torch.randn(4, 8, requires_grad=True)
    out = torch.compile(_f, backend=backend)(t)
    torch.testing.assert_close(out, _f(t))
    assert p.reports[0].validated.startswith("ok") and not p.reports[0].fallback, p.reports[0].summary()


def test_random_ops_validate_under_one_seed_and_keep_the_optimization():
    def f(t):
        d = F.dropout(t, 0.5, training=True)
        return torch.cat(torch.split(t.relu(), 2, dim=1), dim=1) + d.sum()

    backend = eqsat_backend(inner="eager", post_grad=False, validate=True)
    torch.compile(f, backend=backend)(torch.randn(4, 8))
    report = backend.reports[0]
    assert report.changed and not report.fallback, report.summary()
    assert report.validated.startswith("ok"), report.validated


def test_validation_compares_only_deterministic_outputs_when_the_random_stream_moves():
    from eqsat_torch.safety.validation import validate
    from eqsat_torch.report import Report

    def orig(t):
        return F.dropout(t, 0.5, training=True), t.relu()

    def moved(t):  # draws an extra random tensor first: the dropout mask changes
        torch.rand_like(t)
        return F.dropout(t, 0.5, training=True), t.relu()

    gm, new = torch.fx.symbolic_trace(orig), torch.fx.symbolic_trace(moved)
    rand = {n for n in gm.graph.nodes if n.target is F.dropout}
    report = Report()
    validate(gm, new, [torch.randn(64)], rand, report)
    assert report.validated.startswith("ok: compared the 1 of 2 outputs"), report.validated


def test_validation_catches_an_aliasing_difference():
    from eqsat_torch.safety.validation import ValidationError, validate
    from eqsat_torch.report import Report

    gm = torch.fx.symbolic_trace(lambda t: t.clone())
    new = torch.fx.symbolic_trace(lambda t: t)
    with pytest.raises(ValidationError, match="alias"):
        validate(gm, new, [torch.randn(3)], set(), Report())


@pytest.mark.parametrize("op", [operator.and_, operator.or_, operator.xor])
def test_bitwise_operators_are_pure(op):
    def f(t):
        return torch.cat(torch.split(op(t > 0, t < 1).float(), 2, dim=1), dim=1) * 3

    backend = eqsat_backend(inner="eager", post_grad=False)
    t = torch.randn(4, 8)
    torch.testing.assert_close(torch.compile(f, backend=backend)(t), f(t))
    assert not backend.reports[0].skipped and backend.reports[0].changed, backend.reports[0].summary()


@pytest.mark.parametrize("op, target, extra", [
    ("call_method", "add_", ("t",)), ("call_method", "mul_", (2,)), ("call_function", torch.relu_, ()),
    ("call_function", operator.iand, ("y",)), ("call_function", operator.setitem, (0, True)),
    ("call_method", "__iand__", ("y",)), ("call_function", torch.ops.aten.add_.Tensor, ("y",)),
])
def test_in_place_ops_are_mutations_by_their_schema(op, target, extra):
    from eqsat_torch.lowering.lowered import Unsupported

    g = torch.fx.Graph()
    t = g.placeholder("t")
    y = g.call_function(operator.gt, (t, 0)) if target in (operator.iand, operator.setitem, "__iand__") \
        else g.call_function(operator.mul, (t, 2))
    env = {"t": t, "y": y}
    g.create_node(op, target, (y, *(env.get(a, a) if isinstance(a, str) else a for a in extra)))
    g.output(g.call_function(operator.and_, (y, y)) if y.target is operator.gt else g.call_function(torch.relu, (y,)))
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    with pytest.raises(Unsupported, match="mutation"):
        optimize(gm, [torch.randn(4, 8)])


def test_the_log_says_which_kind_of_fallback(eqsat_log, monkeypatch):
    t = torch.randn(4, 8)

    def mutates(v):
        v.add_(1)  # the caller's tensor: the graph is skipped
        return v * 2

    b = eqsat_backend(inner="eager")
    torch.compile(mutates, backend=b)(t.clone())
    assert b.reports[0].fallback == "skipped" and "skipped" in eqsat_log.text

    def boom(*a, **k):
        raise KeyError("boom")

    monkeypatch.setattr(driver, "extract", boom)
    torch._dynamo.reset()
    b = eqsat_backend(inner="eager")
    torch.testing.assert_close(torch.compile(_f, backend=b)(t), _f(t))
    assert b.reports[0].fallback == "internal error" and "a bug in eqsat" in eqsat_log.text

    monkeypatch.undo()
    torch._dynamo.reset()
    b = eqsat_backend(inner="eager", extra_rules=[RELU_ID], check=False, validate=True, post_grad=False)
    torch.testing.assert_close(torch.compile(_f, backend=b)(t), _f(t))
    report = b.reports[0]
    assert report.fallback == "validation mismatch" and report.validated.startswith("mismatch"), report.summary()
    assert "validation mismatch" in eqsat_log.text


def test_optimize_without_the_backend_raises_validation_errors():
    gm = torch.fx.symbolic_trace(_f)
    with pytest.raises(pipeline.ValidationError):
        optimize(gm, [torch.randn(4, 8)], {"extra_rules": [RELU_ID], "check": False, "validate": True})
