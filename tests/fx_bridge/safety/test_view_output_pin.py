"""A user's output that is a view of a value the graph computes keeps eager's strides by
construction: the view, the views under it and the value it views are pinned, so no rule computes
the view from less (``relu(x)[:, 0]`` as ``relu(x[:, 0:1]).squeeze(1)``: stride 1, eager's 8), and
the rest of the graph is still optimized. Unpinned, the equivalence check refused the whole program."""
import random

import torch
from torch.func import functionalize
from torch.fx.experimental.proxy_tensor import make_fx

from bench.graphgen import random_graph
from eqsat_torch import eqsat_backend
from eqsat_torch.inductor.post_grad import optimize_graph_in_place
from eqsat_torch.lowering import lower as lower_mod
from eqsat_torch.pipeline import Options
from eqsat_torch.safety import equivalence
from eqsat_torch.safety.context import Context


def first_column_and_split_sin(x, y):
    a, b = y.split(4, 1)
    return torch.relu(x)[:, 0], torch.cat([a.sin(), b.sin()], 1)


def _torch_ir(x, y):
    backend = eqsat_backend(inner="eager", post_grad=False, verify=False, cache=False)
    torch._dynamo.reset()
    out = torch.compile(first_column_and_split_sin, backend=backend)(x, y)
    return out, backend.reports[-1]


def test_the_view_keeps_its_strides_and_the_rest_is_optimized():
    x, y = torch.randn(6, 8), torch.randn(6, 8)
    out, report = _torch_ir(x, y)
    want = first_column_and_split_sin(x, y)
    assert not report.skipped, report.skipped
    assert report.rules_used, report.summary()  # the split → sin → cat rewrite went through
    torch.testing.assert_close(out, want)
    assert [o.stride() for o in out] == [w.stride() for w in want]


def test_unpinned_the_check_refuses_the_whole_program(monkeypatch):
    """The test above can fail: without the pin the optimizer moves relu under the slice."""
    monkeypatch.setattr(lower_mod, "view_outputs_pinned", lambda graph, user=None: set())
    _, report = _torch_ir(torch.randn(6, 8), torch.randn(6, 8))
    assert "strides of output 0" in report.skipped and not report.rules_used


def test_aten_graph_view_output_of_a_pointwise_value():
    """The Hypothesis round trip's example: ``neg(x1).select(1, 5)`` in a post-grad graph, where
    Inductor keeps a view output's strides only in order."""
    rng = random.Random(2134)
    gm, inputs = random_graph(rng, n_ops=2 + 2134 % 11)
    aten_gm = make_fx(functionalize(gm), tracing_mode="fake")(*inputs)
    assert any(n.target is torch.ops.aten.select.int for n in aten_gm.graph.nodes)
    expected = aten_gm(*inputs)
    report = optimize_graph_in_place(aten_gm.graph, Options(always_raise=True, verify=False))
    assert not report.skipped, report.skipped
    aten_gm.recompile()
    got = aten_gm(*inputs)
    torch.testing.assert_close(got, expected)
    assert [g.stride() for g in got] == [e.stride() for e in expected]


def test_the_aten_check_sees_a_clone_of_a_view_as_the_view():
    """Inductor's ``remove_noop_ops`` drops a clone of a computed value, so a dense clone of a view
    comes back in the view's strides: the check refuses it as it refuses the view."""
    x = torch.randn(8, 6)
    original = make_fx(lambda x: (torch.neg(x).select(1, 5),))(x)
    cloned = make_fx(lambda x: (torch.neg(x[:, 5:6]).squeeze(1).clone(),))(x)
    fresh = make_fx(lambda x: (torch.neg(x.select(1, 5)),))(x)
    assert any(n.target is torch.ops.aten.clone.default for n in cloned.graph.nodes)
    check = lambda rewritten: equivalence.difference(original, rewritten, [x], Context.capture(), layouts=False)
    assert check(cloned).startswith("validation: strides of output 0 (a view"), check(cloned)
    assert check(fresh) is None  # no view: Inductor gives it eager's strides


def test_a_column_piece_pins_the_split_and_what_it_splits_a_row_piece_nothing():
    from eqsat_torch.lowering import layout_pins

    def pinned(fn):
        gm = torch.fx.symbolic_trace(fn)
        lower_mod.lower(gm, [torch.randn(4, 6)])  # records the traced values
        return {n.name for n in layout_pins.view_outputs_pinned(gm.graph)}

    assert pinned(lambda x: torch.relu(x).split(3, 1)[0]) == {"relu", "split"}  # strides (6, 1)
    assert pinned(lambda x: torch.relu(x).split(2, 0)[0]) == set()  # dense: any rewrite's copy has eager's strides
