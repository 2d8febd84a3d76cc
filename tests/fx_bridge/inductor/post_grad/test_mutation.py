"""Graphs with in-place ops, input mutation, views of mutated tensors and mutating custom ops: the
pre-grad pass skips them (an in-place op on an intermediate nothing else sees becomes out-of-place), the
post-grad pass optimizes the functional body and keeps the trailing input copies last. Every case must
give eager's outputs and leave inputs mutated exactly as eager. Each case holds a split re-joined by a
cat after its mutation, so the post-grad pass has something to remove: a pass that gave up on the graph
would still match eager, but not claim the rewrite."""
import pytest
import torch

from eqsat_torch import eqsat_backend

from aten_harness import pass_backend
from optimized import assert_kept, assert_optimized


def intermediate_inplace(x, y):
    z = torch.cat([x, y], 1) * 2
    z.add_(1)
    return z.relu().split(3, 1)[0]


def intermediate_inplace_scaled(x, y):
    """``intermediate_inplace`` with its piece scaled: an output the graph computes, no view of the
    relu (a view output of it is pinned, ``view_outputs_pinned``), so the relu can move onto the piece."""
    z = torch.cat([x, y], 1) * 2
    z.add_(1)
    return z.relu().split(3, 1)[0] * 3


def input_mutation(x, y):
    x.mul_(2)
    a, b = torch.cat([x, y], 1).sigmoid().split(6, 1)
    return torch.cat([a, b], 1) + 1


def view_of_mutated(x, y):
    v = x[:, :2]
    x.add_(y)
    return torch.cat([v * 3, *x.split(3, 1)], 1)


def setitem(x, y):
    x[0] = 0.0
    return torch.cat([*x.split(3, 1), y], 1).relu()


def mutate_then_read_twice(x, y):
    a = x.sin()
    x.copy_(y)
    return torch.cat([*a.split(2, 1), x.cos()], 1)


CASES = [intermediate_inplace_scaled, input_mutation, view_of_mutated, setitem, mutate_then_read_twice]
INPUT_MUTATING = {input_mutation, view_of_mutated, setitem, mutate_then_read_twice}
# The rewrite the post-grad pass must apply to each case's functional body.
POST_GRAD_USES = {intermediate_inplace_scaled: "split_unary", input_mutation: "cat_split_all",
                  view_of_mutated: "cat_split_run", setitem: "cat_split_run", mutate_then_read_twice: "cat_split_run"}


def _inputs():
    g = torch.Generator().manual_seed(0)
    return torch.randn(4, 6, generator=g), torch.randn(4, 6, generator=g)


def _check(fn, backend):
    x, y = _inputs()
    ex, ey = x.clone(), y.clone()
    expected = fn(ex, ey)
    actual = torch.compile(fn, backend=backend)(x, y)
    torch.testing.assert_close(actual, expected)
    torch.testing.assert_close((x, y), (ex, ey), msg="inputs mutated differently from eager")


@pytest.mark.parametrize("fn", sorted(INPUT_MUTATING, key=lambda f: f.__name__), ids=lambda f: f.__name__)
def test_pre_grad_skips_mutation(fn):
    backend = eqsat_backend(inner="eager")
    _check(fn, backend)
    assert backend.reports
    for report in backend.reports:
        assert_kept(report, "mutation")


def intermediate_inplace_rows(x, y):
    """``intermediate_inplace`` split along rows: the piece it returns is a contiguous view, as the
    relu of the piece is, so moving the relu onto the piece keeps every observable."""
    z = torch.cat([x, y], 1) * 2
    z.add_(1)
    return z.relu().split(2, 0)[0]


def test_pre_grad_rewrites_in_place_on_an_intermediate_out_of_place():
    backend = eqsat_backend(inner="eager")
    _check(intermediate_inplace_rows, backend)
    assert backend.reports and not any(r.fallback for r in backend.reports), [r.skipped for r in backend.reports]
    assert backend.reports[0].changed and backend.reports[0].rules_used, backend.reports[0].summary()


def test_pre_grad_keeps_a_strided_view_output_as_eager_computes_it():
    """Split along columns, eager's output is a (4, 3) view with strides (12, 1) of the (4, 12)
    relu; the relu of the piece alone would be contiguous. The view and the relu are pinned
    (``view_outputs_pinned``): nothing is rewritten there and nothing is refused."""
    backend = eqsat_backend(inner="eager")
    _check(intermediate_inplace, backend)
    (report,) = backend.reports
    assert not report.fallback and not report.refused, report.summary()
    x, y = _inputs()
    assert torch.compile(intermediate_inplace, backend=backend)(x, y).stride() == (12, 1)


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_post_grad_keeps_input_copies_last(fn):
    backend, p = pass_backend()
    _check(fn, backend)
    (forward,) = p.reports
    assert_optimized(forward, POST_GRAD_USES[fn])


def test_post_grad_epilogue_order_is_preserved():
    """After the pass the input copies still come after every other computation."""
    from eqsat_torch.inductor.post_grad import optimize_graph_in_place
    from eqsat_torch.pipeline import Options
    from eqsat_torch.inductor import compat
    from functorch.compile import make_boxed_func

    seen = []

    def compiler(gm, ex):
        optimize_graph_in_place(gm.graph, Options(always_raise=True))
        gm.recompile()
        seen.append(gm.graph)
        return make_boxed_func(gm.forward)

    _check(view_of_mutated, compat.aot_backend(compiler))
    (graph,) = seen
    calls = [n for n in graph.nodes if n.op == "call_function"]
    copies = [i for i, n in enumerate(calls) if n.target is torch.ops.aten.copy_.default]
    assert copies and copies == list(range(len(calls) - len(copies), len(calls)))


@torch.library.custom_op("eqsat_test::scale_", mutates_args=("x",))
def _scale_(x: torch.Tensor, s: float) -> None:
    x.mul_(s)


@_scale_.register_fake
def _(x, s):
    return None


def auto_functionalized(x, y):
    z = torch.cat([x, y], 1)
    torch.ops.eqsat_test.scale_(z, 3.0)
    torch.ops.eqsat_test.scale_(x, 0.5)
    return torch.cat(z.relu().split(4, 1), 1) + 1


def test_auto_functionalized_custom_op():
    """A custom op mutating its arguments reaches the pass as ``auto_functionalized``, a higher-order op
    returning a tuple: an opaque term, and the split-cat after it is still removed."""
    backend, p = pass_backend(always_raise=False)
    with torch.no_grad():
        _check(auto_functionalized, backend)
    (report,) = p.reports
    assert_optimized(report, "cat_split_all")


def bump_counter(x, y, count):
    """BatchNorm's ``num_batches_tracked += 1``: an input written in place that nothing else reads."""
    count.add_(1)
    return torch.cat([*torch.cat([x, y], 1).sigmoid().split(6, 1)], 1) + 1


def test_pre_grad_keeps_a_write_to_an_unread_input_and_optimizes_the_rest():
    backend = eqsat_backend(inner="eager")
    x, y = _inputs()
    count, eager_count = torch.zeros((), dtype=torch.long), torch.zeros((), dtype=torch.long)
    expected = bump_counter(x, y, eager_count)
    actual = torch.compile(bump_counter, backend=backend)(x, y, count)
    torch.testing.assert_close(actual, expected)
    assert count.item() == eager_count.item() == 1, "the write runs exactly once"
    (report,) = backend.reports
    assert_optimized(report, "cat_split_all")


def test_batchnorm_training_is_optimized_and_updates_its_buffers_as_eager():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8)).train()
    ref = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8)).train()
    ref.load_state_dict(model.state_dict())
    x = torch.randn(16, 8)
    backend = eqsat_backend(inner="eager")
    out = torch.compile(lambda x: torch.cat([*model(x).split(4, 1)], 1).relu(), backend=backend)(x)
    torch.testing.assert_close(out, torch.cat([*ref(x).split(4, 1)], 1).relu())
    for (name, b), c in zip(model.named_buffers(), ref.buffers()):
        torch.testing.assert_close(b, c, msg=name)
    assert model[1].num_batches_tracked.item() == 1
    assert any(r.changed and not r.skipped for r in backend.reports), [r.summary() for r in backend.reports]
