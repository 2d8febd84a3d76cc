"""Dynamic shapes: graphs with symbolic sizes are optimized, and the optimized graph is right at every
size its guards admit, not just the hint. Each compiled function is called at three batch sizes;
one compile (``dynamic=True``, ``mark_dynamic``) or one recompile (automatic dynamic) must serve them
all, and the report must show the rewrite really happened (a fallback would also match eager)."""
import contextlib
import copy

import pytest
import torch
from torch import nn

from eqsat.cost import CostModel
from eqsat_torch import eqsat_backend
from eqsat_torch.inductor import compat
from eqsat_torch.raising.raising import refresh_fake_values
from eqsat_torch.lowering.symbolic import NotForEverySize, check_same_output_sizes
from eqsat_torch.inductor.compat import NewGuard
from optimized import assert_optimized

from aten_harness import compare_training, pass_backend

SIZES = (8, 16, 32)


class SplitReluCat(nn.Module):
    """split → pointwise → cat: Optimus' merge pattern around a linear."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        a, b = x.split(8, 1)
        return self.fc(torch.cat([a.relu(), b.relu()], 1)).sigmoid()


class FeatureTower(nn.Module):
    """DHEN's per-feature linears: 8 pieces of the input, one linear + tanh each, stacked."""

    def __init__(self, n=8, d=16):
        super().__init__()
        self.d = d
        self.lins = nn.ModuleList(nn.Linear(d, d) for _ in range(n))

    def forward(self, x):
        pieces = torch.split(x, self.d, dim=1)
        return torch.stack([torch.tanh(lin(p)) for lin, p in zip(self.lins, pieces)], dim=1)


MODELS = {"split_relu_cat": (SplitReluCat, 16, ("cat_split_all",)),
          "feature_tower": (FeatureTower, 128, ("batch_linear",))}


def _model(name):
    torch.manual_seed(0)
    cls, width, rules = MODELS[name]
    return cls().eval(), width, rules


def _inputs(mode, width):
    for batch in SIZES:
        x = torch.randn(batch, width)
        if mode == "mark_dynamic":
            torch._dynamo.mark_dynamic(x, 0)
        yield x


@pytest.mark.parametrize("mode", ["dynamic_true", "mark_dynamic", "automatic"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_symbolic_batch_is_optimized_and_right_at_every_size(name, mode):
    compat.reset_dynamo()
    model, width, rules = _model(name)
    backend = eqsat_backend(inner="eager")
    compiled = torch.compile(model, backend=backend, dynamic=True if mode == "dynamic_true" else None)
    with torch.no_grad():
        for x in _inputs(mode, width):
            torch.testing.assert_close(compiled(x), model(x))
    symbolic = backend.reports[-1]
    assert len(backend.reports) == (2 if mode == "automatic" else 1), [r.summary() for r in backend.reports]
    assert_optimized(symbolic, *rules)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_validation_runs_a_symbolic_graph_at_its_hints(name):
    """validate=True ran the raised graph with the SymInt argument itself: a symbolic reshape failed
    and the graph fell back as an internal error."""
    compat.reset_dynamo()
    model, width, rules = _model(name)
    backend = eqsat_backend(inner="eager", validate=True)
    compiled = torch.compile(model, backend=backend, dynamic=True)
    with torch.no_grad():
        for x in _inputs("dynamic_true", width):
            torch.testing.assert_close(compiled(x), model(x))
    (report,) = backend.reports
    assert_optimized(report, *rules)
    assert report.validated == "ok", report.validated


@pytest.mark.parametrize("name", sorted(MODELS))
def test_symbolic_graph_is_priced_and_chosen_as_the_static_graph_of_its_hint(name):
    """Costs are read at Dynamo's size hints: the symbolic graph traced at batch 8 costs what the
    static batch-8 graph costs, before and after, and the same rules are used."""
    reports = {}
    for dynamic in (False, True):
        compat.reset_dynamo()
        model, width, _ = _model(name)
        backend = eqsat_backend(inner="eager")
        with torch.no_grad():
            torch.compile(model, backend=backend, dynamic=dynamic)(torch.randn(SIZES[0], width))
        reports[dynamic] = backend.reports[0]
    static, symbolic = reports[False], reports[True]
    assert symbolic.cost_before == pytest.approx(static.cost_before)
    assert symbolic.cost_after == pytest.approx(static.cost_after)
    assert symbolic.kernels_after == static.kernels_after and symbolic.rules_used


def test_symbolic_int_argument_is_optimized():
    """``f(x, n)`` called with n = 2, 3, 4: Dynamo recompiles with ``n`` a SymInt; that graph is
    optimized too, and its raised graph reads ``n`` (and ``x.size(0)``) from its inputs."""
    def f(x, n):
        a, b = x.split(8, 1)
        return torch.cat([a.relu(), b.relu()], 1) * n + x.size(0)

    compat.reset_dynamo()
    backend = eqsat_backend(inner="eager")
    g = torch.compile(f, backend=backend)
    for n in (2, 3, 4):
        x = torch.randn(4 + n, 16)
        torch.testing.assert_close(g(x, n), f(x, n))
    assert len(backend.reports) == 2
    assert_optimized(backend.reports[1], "cat_split_all")


def test_split_sizes_that_depend_on_a_symbol_are_proved_exactly():
    """``x.split([n, 12 - n], 1)`` with ``n`` a SymInt: the sizes sum to the dim as linear forms, so
    "a cat of every piece is the input" fires, and the graph is right for every ``n``."""
    def f(x, n):
        return torch.cat([p.relu() for p in x.split([n, 12 - n], 1)], 1) * 2

    compat.reset_dynamo()
    backend = eqsat_backend(inner="eager")
    g = torch.compile(f, backend=backend)
    for n in (3, 4, 5):
        x = torch.randn(4, 12)
        torch.testing.assert_close(g(x, n), f(x, n))
    assert len(backend.reports) == 2, [r.summary() for r in backend.reports]
    assert_optimized(backend.reports[1], "cat_split_all")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_post_grad_training_under_dynamic_shapes(name):
    """Forward and backward Aten graphs with a symbolic batch go through the post-grad pass
    (``always_raise``: rebuilt from the e-graph) and give eager's loss and gradients at each size."""
    compat.reset_dynamo()
    backend, p = pass_backend()
    for batch in SIZES:  # a fresh model each step (same weights): no gradient carried over
        model, width, _ = _model(name)
        compare_training(model.train(), (torch.randn(batch, width),), backend, dynamic=True)
    assert p.reports and not any(r.skipped for r in p.reports), [r.summary() for r in p.reports]


def test_pre_grad_training_under_dynamic_shapes():
    """The optimized Dynamo graph (batched linears) differentiates like eager at every size."""
    compat.reset_dynamo()
    backend = eqsat_backend(inner="eager", cost=CostModel.for_device("cpu", frozen_params=True))
    for batch in SIZES:
        model, width, rules = _model("feature_tower")
        compare_training(model.train(), (torch.randn(batch, width),), backend, dynamic=True)
    assert_optimized(backend.reports[-1], *rules)


def _symbolic_relu_graph_returning(method: str, *args):
    """A Dynamo graph of ``x.relu()`` over an ``(s, t)`` input, and a copy returning ``x.method(*args)``."""
    got = []

    def capture(gm, example_inputs):
        got.append((gm, example_inputs))
        return gm.forward

    compat.reset_dynamo()
    torch.compile(lambda x: x.relu(), backend=capture, dynamic=True)(torch.randn(6, 4))
    gm, example_inputs = got[0]
    new = torch.fx.GraphModule(gm, copy.deepcopy(gm.graph))
    x = next(n for n in new.graph.nodes if n.op == "placeholder" and isinstance(
        compat.node_value(n), torch.Tensor))
    out = next(n for n in new.graph.nodes if n.op == "output")
    with new.graph.inserting_before(out):
        out.args = ((new.graph.call_method(method, (x, *args)),),)
    new.recompile()
    return gm, new, example_inputs


def test_a_graph_that_needs_a_new_guard_is_refused():
    """The safety net under the encoding: re-tracing a raised graph may not narrow the sizes the
    graph is valid for. ``x.view(8, -1)`` of an ``(s, t)`` input needs ``s·t % 8 == 0``."""
    _, new, example_inputs = _symbolic_relu_graph_returning("view", 8, -1)
    with pytest.raises(NewGuard):
        refresh_fake_values(new, example_inputs, "torch")


def test_a_graph_whose_output_has_another_symbolic_size_is_refused():
    """``x.t()`` traces without a new guard, but its output is ``(t, s)``, not the original's ``(s, t)``."""
    gm, new, example_inputs = _symbolic_relu_graph_returning("t")
    refresh_fake_values(new, example_inputs, "torch")
    with pytest.raises(NotForEverySize):
        check_same_output_sizes(gm, new)


@pytest.mark.slow  # Inductor's C++ for three compiles: ~19 s of CPU
def test_kernels_under_automatic_dynamic_equal_the_static_count():
    """Inductor, pre-grad and post-grad: the recompile with a symbolic batch launches as many kernels
    as the static eqsat compile of the first batch size."""
    from bench import inductor_metrics

    compat.reset_dynamo()
    model, width, rules = _model("feature_tower")
    backend = eqsat_backend(verify=False)  # a symbolic graph is not probed: the optimizer's programs, both
    launches = []
    with torch.no_grad(), inductor_metrics.inductor_config_patch("inductor"), \
            inductor_metrics.capture_output_code() as code:
        compiled = torch.compile(model, backend=backend)
        for x in _inputs("automatic", width):
            seen = len(code)
            torch.testing.assert_close(compiled(x), model(x))
            launches.append(inductor_metrics.launch_counts(code[seen:])["total"])
    static, symbolic, reused = launches
    assert len(backend.reports) == 2 and reused == 0
    assert_optimized(backend.reports[0], *rules)
    assert_optimized(backend.reports[1], *rules)
    assert symbolic == static, launches


@pytest.mark.slow
def test_split_relu_cat_kernels_under_dynamic_true_equal_the_static_count():
    from bench import inductor_metrics

    model, width, rules = _model("split_relu_cat")
    counts = {}
    for dynamic in (False, True):
        compat.reset_dynamo()
        backend = eqsat_backend(verify=False)  # a symbolic graph is not probed: the optimizer's programs, both
        with torch.no_grad(), inductor_metrics.inductor_config_patch("inductor"), \
                inductor_metrics.capture_output_code() as code:
            x = torch.randn(SIZES[0], width)
            torch.testing.assert_close(torch.compile(model, backend=backend, dynamic=dynamic)(x), model(x))
        assert_optimized(backend.reports[0], *rules)
        counts[dynamic] = inductor_metrics.launch_counts(code)["total"]
    assert counts[True] == counts[False], counts


def test_unbacked_sizes_stay_opaque_and_the_rest_is_optimized():
    """``nonzero`` captured in the graph: its data-dependent size (an unbacked symbol) and the ops
    that read it stay opaque, the asserts Dynamo adds on it stay in place; the split → relu → cat
    beside it is still optimized, at every batch size."""
    def f(x):
        a, b = x.split(8, 1)
        return torch.cat([a.relu(), b.relu()], 1), x.nonzero().float().relu() + 1

    compat.reset_dynamo()
    backend = eqsat_backend(inner="eager")
    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        g = torch.compile(f, backend=backend, dynamic=True)
        for x in _inputs("dynamic_true", 16):
            torch.testing.assert_close(g(x), f(x))
    assert len(backend.reports) == 1
    assert_optimized(backend.reports[0], "cat_single"), backend.reports[0].notes


@contextlib.contextmanager
def _inductor_with_post_grad_pass():
    """Inductor alone pre-grad, our pass post-grad (caches off: a cached graph would not run it): the
    symbolic Aten graphs it rewrites are the ones Inductor compiles (forward and backward)."""
    from bench import inductor_metrics
    from eqsat_torch.pipeline import Options
    from eqsat_torch.inductor.post_grad import EqsatPostGradPass

    p = EqsatPostGradPass(Options())
    with inductor_metrics.inductor_config_patch("inductor"), \
            torch._inductor.config.patch(post_grad_custom_pre_pass=p):
        yield p


def test_inductor_compiles_the_post_grad_rewrite_of_a_symbolic_graph():
    compat.reset_dynamo()
    model, width, _ = _model("feature_tower")
    with _inductor_with_post_grad_pass() as p, torch.no_grad():
        compiled = torch.compile(model, backend="inductor", dynamic=True)
        for x in _inputs("dynamic_true", width):
            torch.testing.assert_close(compiled(x), model(x))
    (report,) = p.reports
    assert_optimized(report, "batch_mm")


@pytest.mark.slow
def test_inductor_training_step_with_the_post_grad_pass_under_dynamic_shapes():
    compat.reset_dynamo()
    with _inductor_with_post_grad_pass() as p:
        for batch in SIZES:
            model, width, _ = _model("feature_tower")
            compare_training(model.train(), (torch.randn(batch, width),), "inductor", dynamic=True)
    assert len(p.reports) == 2, [r.summary() for r in p.reports]  # one forward, one backward: no recompile
    assert all(not r.skipped for r in p.reports) and any(r.changed for r in p.reports), [
        r.summary() for r in p.reports]
