"""End to end: torch.compile(m, backend="eqsat") matches eager, in inference and in training."""
import copy

import pytest
import torch

import eqsat_rules
from eqsat_torch import eqsat_backend, last_reports
from bench import inductor_metrics
from eqsat_torch.inductor import compat

from e2e_models import MLP, Attention, SplitCat
from optimized import assert_no_fallback, assert_optimized

MODELS = {"mlp": (MLP, (4, 16)), "attention": (Attention, (2, 5, 16)), "splitcat": (SplitCat, (4, 32))}
# What the optimizer must do to each model's Dynamo graph: the rule the program relies on, or None
# where the cost model rightly finds nothing cheaper (one fused kernel per op already) or Inductor
# counts no fewer CPU loop nests for its program (attention: decomposing the 8-wide output projection
# into a product sum saves a C++ call, not a loop nest, and the input is kept).
USES = {"mlp": None, "attention": None, "splitcat": "cat_split_all"}


def check_report(name, report):
    if USES[name] is None:
        assert_no_fallback(report)
        assert not report.changed, report.summary()
    else:
        assert_optimized(report, USES[name])


def family(name):
    return {r.name for r in eqsat_rules.builtin_rules() if r.family == name}


def _build(name):
    torch.manual_seed(0)
    cls, shape = MODELS[name]
    return cls(), torch.randn(*shape)


@pytest.mark.parametrize("name", MODELS)
def test_inference_matches_eager(name):
    model, x = _build(name)
    with torch.no_grad():
        expected = model(x)
        actual = torch.compile(model, backend="eqsat")(x)
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)
    check_report(name, last_reports()[-1])


@pytest.mark.parametrize("name", MODELS)
def test_training_step_matches_eager(name):
    model, x = _build(name)
    twin = copy.deepcopy(model)
    backend = eqsat_backend()
    compiled = torch.compile(twin, backend=backend)
    model(x).square().sum().backward()
    with inductor_metrics.inductor_config_patch("inductor"):  # cold: a cache hit would skip our pass
        compiled(x).square().sum().backward()
    for (pname, p), q in zip(model.named_parameters(), twin.parameters()):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-5, msg=pname)
    check_report(name, backend.reports[0])
    assert len(backend.post_grad_reports) >= 2, "forward and backward graphs reach the post-grad pass"
    for report in backend.post_grad_reports:
        assert_no_fallback(report)


def test_backend_is_registered_by_entry_point():
    from torch._dynamo import list_backends

    assert "eqsat" in list_backends(exclude_tags=())


def test_disabled_family_neither_fires_nor_is_used_while_the_others_optimize():
    model, x = _build("splitcat")
    algebra = family("algebra")
    reports = {}
    for disabled in ((), ("algebra",)):
        compat.reset_dynamo()
        backend = eqsat_backend(inner="eager", validate=True, disabled=list(disabled))
        torch.testing.assert_close(torch.compile(model, backend=backend)(x), model(x))
        (reports[disabled],) = backend.reports
    assert algebra & set(reports[()].rules_fired), "control: algebra rules fire on this graph when enabled"
    off = reports[("algebra",)]
    assert not algebra & set(off.rules_fired) and not algebra & set(off.rules_used), off.summary()
    assert_optimized(off, "cat_split_all")  # split_cat still optimizes the graph on its own


def test_disabled_rule_is_not_used_and_the_graph_still_optimizes():
    model, x = _build("splitcat")
    backend = eqsat_backend(inner="eager", validate=True, disabled=["cat_split_all"])
    torch.testing.assert_close(torch.compile(model, backend=backend)(x), model(x))
    (report,) = backend.reports
    assert "cat_split_all" not in report.rules_fired and "cat_split_all" not in report.rules_used
    assert_optimized(report)


def _generated_code(inner):
    f = SplitCat()
    x = torch.randn(4, 32)
    backend = eqsat_backend(inner=inner)
    compat.reset_dynamo()
    with inductor_metrics.inductor_config_patch("inductor"), inductor_metrics.capture_output_code() as codes:
        torch.testing.assert_close(torch.compile(f, backend=backend)(x), f(x))
    return codes, backend


def test_inner_eager_generates_no_inductor_code():
    codes, backend = _generated_code("eager")
    assert codes == [] and backend.post_grad_reports == []
    assert_optimized(backend.reports[0], "cat_split_all")
    codes, backend = _generated_code("inductor")  # control: the same graph through Inductor
    assert len(codes) == 1 and "def call(" in codes[0] and len(backend.post_grad_reports) == 1


def test_greedy_mode_runs_families_in_order():
    """cat(relu(pieces of x)): saturation moves the relu out (algebra) and then removes the split-cat
    (split_cat). Greedy runs split_cat before algebra, so the split-cat rule never sees the cat it
    could remove: the phase-ordering problem saturation solves."""
    def f(x):
        return torch.cat([p.relu() for p in torch.split(x, 4, 1)], 1)

    x = torch.randn(8, 16)
    reports = {}
    for search in ("saturate", "greedy"):
        compat.reset_dynamo()
        backend = eqsat_backend(inner="eager", search=search, validate=True)
        torch.testing.assert_close(torch.compile(f, backend=backend)(x), f(x))
        (reports[search],) = backend.reports
    assert_optimized(reports["saturate"], "cat_split_all")
    greedy = reports["greedy"]
    assert_no_fallback(greedy)
    assert "cat_unary" in greedy.rules_fired and "cat_split_all" not in greedy.rules_fired, greedy.summary()
    assert greedy.cost_after > reports["saturate"].cost_after


def test_unknown_option_is_refused():
    with pytest.raises(ValueError, match="unknown eqsat option 'no_such_option'"):
        eqsat_backend(no_such_option=1)


def test_a_rewritten_graph_keeps_its_parameters_static_for_cuda_graphs():
    """AOTAutograd marks a Dynamo graph's parameters static inputs (CUDA graphs record them once)
    only on a graph it knows as Dynamo's: the rewrite carries Dynamo's marks (H200, BART under CUDA
    graphs: 93 inputs copied at each replay where Inductor alone copied 2)."""
    from functorch.compile import make_boxed_func
    from torch._guards import TracingContext

    from eqsat_torch.backend import optimize_or_keep
    from eqsat_torch.options import Options

    def static_inputs(rewrite: bool) -> list[int]:
        seen = []

        def inner(gm, example_inputs):
            seen.append(list(TracingContext.try_get().fw_metadata.static_input_indices))
            return make_boxed_func(gm.forward)

        def backend(gm, example_inputs):
            if rewrite:
                gm, report = optimize_or_keep(gm, example_inputs, Options(inner="eager"))
                assert_optimized(report)
            return compat.aot_backend(inner)(gm, example_inputs)

        compat.reset_dynamo()
        model = SplitCat()
        with torch.no_grad():
            torch.compile(model, backend=backend)(torch.randn(4, 32))
        return seen[0]

    assert static_inputs(rewrite=True) == static_inputs(rewrite=False) != []
