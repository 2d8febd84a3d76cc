"""Two ops added as one registry row each (``eqsat/ops.py``): the reduction ``any`` and the op with its
own constructor ``repeat`` (``Tensor.repeat`` / ``torch.tile``, one count per dim). From the row alone
each lowers (not opaque) in Torch-IR and Aten-IR, gets a shape and dtype from the analysis, is
rewritten by the rules derived from the row (slicing commutes with it), raises to the row's torch and
aten targets, is evaluated by the rule checker, is priced, and compiles to eager's values."""
import pytest
import torch
from functorch.compile import make_boxed_func

import eqsat_rules
from analysed import analysed
from eqsat import ops
from eqsat.cost import UNKNOWN, CostModel
from eqsat.terms import IVec, Term
from eqsat_torch import eqsat_backend, optimize
from eqsat_torch.inductor import compat
from eqsat_torch.lowering.lower import lower
from eqsat_torch.pipeline import Options
from eqsat_torch.inductor.post_grad import EqsatPostGradPass
from eqsat_rules.dsl import ints, ivec, narrow, reduce, rewrite, tensor, tile

aten = torch.ops.aten


def _graph(target, args, kwargs=None, op="call_function"):
    """A one-op FX graph over one input ``x`` (placeholder at ``args[0]``)."""
    g = torch.fx.Graph()
    x = g.placeholder("x")
    g.output(g.create_node(op, target, (x, *args), kwargs or {}))
    return torch.fx.GraphModule(torch.nn.Module(), g)


SPELLINGS = [  # (what, graph, input, term it lowers to)
    ("torch.any dim keepdim", _graph(torch.any, (1,), {"keepdim": True}), torch.randn(4, 6) > 0, ("Reduce", "any")),
    ("Tensor.any dim", _graph("any", (0,), op="call_method"), torch.randn(4, 6) > 0, ("Reduce", "any")),
    ("torch.any whole", _graph(torch.any, ()), torch.randn(4, 6) > 0, ("Reduce", "any")),
    ("aten.any.dims", _graph(aten.any.dims, ([0, 1], True)), torch.randn(4, 6) > 0, ("Reduce", "any")),
    ("aten.any.dim", _graph(aten.any.dim, (1,)), torch.randn(4, 6) > 0, ("Reduce", "any")),
    ("aten.any.default", _graph(aten.any.default, ()), torch.randn(4, 6) > 0, ("Reduce", "any")),
    ("Tensor.repeat varargs", _graph("repeat", (2, 3), op="call_method"), torch.randn(4, 6), ("Repeat", (2, 3))),
    ("Tensor.repeat tuple", _graph("repeat", ((1, 2),), op="call_method"), torch.randn(4, 6), ("Repeat", (1, 2))),
    ("torch.tile", _graph(torch.tile, ((2, 1),)), torch.randn(4, 6), ("Repeat", (2, 1))),
    ("aten.repeat", _graph(aten.repeat.default, ([3, 1],)), torch.randn(4, 6), ("Repeat", (3, 1))),
]


@pytest.mark.parametrize("gm, x, expect", [s[1:] for s in SPELLINGS], ids=[s[0] for s in SPELLINGS])
def test_every_spelling_lowers_to_the_row(gm, x, expect):
    terms = list(lower(gm, [x]).originals.values())
    assert "Opaque" not in [t.ctor for t in terms]
    (t,) = [t for t in terms if t.ctor == expect[0]]
    assert t.args[0] == expect[1] if t.ctor == "Reduce" else t.args[1] == IVec(expect[1])


@pytest.mark.parametrize("gm", [_graph("repeat", (2, 1, 1), op="call_method"),  # a new leading dim
                                _graph("repeat", (0, 1), op="call_method")],     # an empty result
                         ids=["rank-changing", "zero count"])
def test_what_the_row_does_not_say_stays_opaque(gm):
    assert "Repeat" not in [t.ctor for t in lower(gm, [torch.randn(4, 6)]).originals.values()]


def test_the_analysis_shapes_and_types_terms_rules_create():
    """Terms without facts (what a rewrite creates) get the row's shape and dtype: any is bool, repeat
    keeps its input's dtype and multiplies each dim by its count."""
    view, classes = analysed(any=lambda x: Term("Reduce", ("any", x, IVec((1,)), 1)),
                             any0=lambda x: Term("Reduce", ("any", x, IVec((0, 1)), 0)),
                             rep=lambda x: Term("Repeat", (x, IVec((2, 3)))))
    assert {k: view.shape[c] for k, c in classes.items()} == {"any": (8, 1), "any0": (), "rep": (16, 48)}
    assert {k: view.dtype[c] for k, c in classes.items()} == {"any": "bool", "any0": "bool", "rep": "float64"}
    model = CostModel()
    for k, category in (("any", ops.Category.REDUCTION), ("rep", ops.Category.POINTWISE)):
        node = next(view.nodes[n] for n in view.classes[classes[k]])
        assert ops.CTOR_CATEGORY[node.ctor] is category
        assert 0 < model.node_cost(node, view) < UNKNOWN  # priced by its category, from its shape


def any_rows(x):
    return torch.any(x > 0, dim=1, keepdim=True)[:2]


def any_cols(x):
    return (x > 0).any(2)[1:3]


def any_cols_sliced_across(x):
    """A slice across the rows of the reduction: eager returns a view with strides (4, 1); computed
    from the slice of ``x`` it would be a fresh (3, 2) tensor, with other strides."""
    return (x > 0).any(2)[:, 1:3]


def repeat_rows(x):
    return x.repeat(1, 3)[:2]


CASES = [(any_rows, (6, 5), "narrow_reduce_keepdim", torch.any), (any_cols, (3, 4, 5), "narrow_reduce_before", torch.any),
         (repeat_rows, (6, 4), "narrow_tile", "repeat")]


@pytest.mark.parametrize("fn, shape, rule, target", CASES, ids=[c[0].__name__ for c in CASES])
def test_a_rule_derived_from_the_row_rewrites_it_and_it_raises_pre_grad(fn, shape, rule, target):
    """The slice moves into the op (it reads fewer elements: priced cheaper), which is raised as the
    row's Torch-IR target."""
    x = torch.randn(*shape)
    new, report = optimize(torch.fx.symbolic_trace(fn), [x], {"horizontal": False})
    torch.testing.assert_close(new(x), fn(x))
    assert report.rules_used.get(rule) and report.changed, report.summary()
    assert report.cost_after < report.cost_before
    calls = [n for n in new.graph.nodes if n.op in ("call_function", "call_method")]
    assert [n.target for n in calls if n.target == target]
    assert calls[0].target is torch.narrow  # sliced first


def test_a_strided_view_output_is_not_computed_from_less():
    """The slice and the reduction it views are pinned (``view_outputs_pinned``): the rewrite that
    would make the output contiguous is never proposed, so nothing is refused either (the check
    refused it before, keeping the whole graph as it was)."""
    x = torch.randn(3, 4, 5)
    new, report = optimize(torch.fx.symbolic_trace(any_cols_sliced_across), [x], {"horizontal": False})
    torch.testing.assert_close(new(x), any_cols_sliced_across(x))
    assert new(x).stride() == (4, 1)
    assert not report.refused and report.fallback != "validation mismatch", report.summary()
    assert "narrow_reduce_before" not in report.rules_fired, report.rules_fired  # it fired, unpinned


def _aot(graphs: list, reports: list):
    """A backend running our post-grad pass on AOTAutograd's graphs (no Inductor), keeping them."""
    p = EqsatPostGradPass(Options(), reports=reports)

    def compiler(gm, example_inputs):
        p(gm.graph)
        gm.recompile()
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    torch._dynamo.reset()
    return compat.aot_backend(compiler)


def _post_grad(fn, *inputs):
    """fn's Aten graphs as the post-grad pass raised them, and its reports (values checked)."""
    graphs, reports = [], []
    out = torch.compile(fn, backend=_aot(graphs, reports))(*inputs)
    torch.testing.assert_close(out, fn(*inputs))
    return graphs, reports


@pytest.mark.parametrize("fn, shape, rule, target", [
    (any_rows, (6, 5), "narrow_reduce_keepdim", aten.any.dims), (repeat_rows, (6, 4), "narrow_tile", aten.repeat.default),
], ids=["any", "repeat"])
def test_it_raises_to_the_rows_aten_overload_post_grad(fn, shape, rule, target):
    (gm,), (report,) = _post_grad(fn, torch.randn(*shape))
    assert report.rules_used.get(rule) and report.changed, report.summary()
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert target in targets and targets.index(target) > targets.index(aten.slice.Tensor)


x_, y_ = tensor("x"), tensor("y")
d_, a_, m_, e_ = ints("d a m e")
v_ = ivec("v")


def test_the_checker_evaluates_it():
    """Rules over the new ops are run on random instances: sound ones pass, unsound ones are caught."""
    narrow_any = rewrite("narrow_any", narrow(reduce("any", x_, [e_], 1), d_, a_, m_),
                         reduce("any", narrow(x_, d_, a_, m_), [e_], 1), [e_ != d_])
    any_through_its_dim = rewrite("any_through_its_dim", narrow(reduce("any", x_, [e_], 1), d_, a_, m_),
                                  reduce("any", narrow(x_, d_, a_, m_), [e_], 1))
    narrow_tile_unguarded = rewrite("narrow_tile_unguarded", narrow(tile(x_, v_), d_, a_, m_), tile(narrow(x_, d_, a_, m_), v_))
    for sound in (narrow_any, *(r for r in eqsat_rules.library.builtin_dsl_rules() if r.name.endswith("tile"))):
        res = eqsat_rules.check(sound)
        assert res.ok and res.admitted >= 10, res
    for unsound in (any_through_its_dim, narrow_tile_unguarded):
        res = eqsat_rules.check(unsound)
        assert not res.ok and res.problems[0].startswith(f"rule {unsound.name!r} at "), res


def tiled_any(x):
    """Both new ops, a slice through each, and a cat of repeats."""
    y = x.repeat(1, 2)
    return torch.any(y > 0.5, dim=1, keepdim=True)[:3], torch.cat([y[:2].repeat(1, 2), y[2:].repeat(1, 2)], 0)


@pytest.mark.slow
def test_compiled_by_inductor_it_matches_eager():
    x = torch.randn(6, 5)
    backend = eqsat_backend()
    got = torch.compile(tiled_any, backend=backend)(x)
    for g, e in zip(got, tiled_any(x)):
        torch.testing.assert_close(g, e)
    (report,) = backend.reports
    assert {"narrow_reduce_keepdim", "narrow_tile"} <= set(report.rules_fired), report.summary()


def test_a_training_step_through_repeat_matches_eager():
    """repeat's gradient, through the rewritten forward and AOTAutograd's backward graphs, is eager's."""
    def fn(x, w):
        return (x @ w).repeat(1, 3)[:2].sin()

    x, w = torch.randn(5, 4), torch.randn(4, 4, requires_grad=True)
    graphs, reports = [], []
    out = torch.compile(fn, backend=_aot(graphs, reports))(x, w)
    out.sum().backward()
    got, w.grad = w.grad, None
    expected = fn(x, w)
    expected.sum().backward()
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(got, w.grad)
    assert len(graphs) == 2  # forward and backward
    assert any(r.rules_used.get("narrow_tile") for r in reports), [r.summary() for r in reports]
