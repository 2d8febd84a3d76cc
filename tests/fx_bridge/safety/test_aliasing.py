"""Outputs alias exactly as in eager (trust issue, case 1).

Rules are true as values: ``cat(x.split(5, 1), 1)`` *is* ``x`` as a value, but eager returns a fresh
tensor, so a caller may mutate it. These programs used to compile to one returning the input itself.
"""
import random

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from eqsat_torch import eqsat_backend
from eqsat_torch.inductor import compat
from eqsat_torch.safety.aliasing import alias_signature, match_aliasing
from eqsat_torch.lowering.lowered import Unsupported

REPRODUCERS = {
    "cat_of_split": lambda x: torch.cat(x.split(5, 1), 1),
    "cat_of_one": lambda x: torch.cat([x]),
    "stack_of_unbind": lambda x: torch.stack(x.unbind(0)),
    "cat_of_slices": lambda x: torch.cat([x[:, :5], x[:, 5:]], 1),
}


def _storage(t):
    return t.untyped_storage().data_ptr()


def _compile(f, **opts):
    backend = eqsat_backend(inner="eager", post_grad=False, **opts)
    return torch.compile(f, backend=backend), backend


@pytest.mark.parametrize("name", sorted(REPRODUCERS))
def test_output_is_fresh_and_mutating_it_leaves_the_input_alone(name):
    f = REPRODUCERS[name]
    x = torch.randn(4, 10)
    keep = x.clone()
    compiled, backend = _compile(f)
    out = compiled(x)
    assert out is not x and _storage(out) != _storage(x)
    torch.testing.assert_close(out, f(keep))
    out += 1
    torch.testing.assert_close(x, keep)
    report = backend.reports[0]
    assert not report.skipped, report.skipped


def test_rewrite_that_needs_a_copy_is_priced_and_still_used_when_cheaper():
    """cat of two slices is two loop nests on CPU; the identity plus one copy is one: it pays."""
    compiled, backend = _compile(REPRODUCERS["cat_of_slices"])
    compiled(torch.randn(4, 10))
    report = backend.reports[0]
    assert report.changed and report.alias_copies == 1 and report.rules_used, report.summary()


def test_two_outputs_stay_two_tensors():
    def g(x):
        y = x * 2
        return torch.cat(y.split(5, 1), 1), y

    x = torch.randn(4, 10)
    compiled, _ = _compile(g)
    a, b = compiled(x)
    ea, eb = g(x)
    assert a is not b and _storage(a) != _storage(b)
    a.mul_(3)
    torch.testing.assert_close(b, eb)
    torch.testing.assert_close(a, ea * 3)


def test_in_place_on_the_output_of_a_leaf_requiring_grad_works_and_grads_match():
    f = REPRODUCERS["cat_of_split"]
    x = torch.randn(4, 10, requires_grad=True)
    xe = x.detach().clone().requires_grad_()
    out = torch.compile(f, backend=eqsat_backend(inner="eager"))(x)
    expected = f(xe)
    out.mul_(2)          # eager allows this: its output is not the leaf
    expected.mul_(2)
    out.sum().backward()
    expected.sum().backward()
    torch.testing.assert_close(x.grad, xe.grad)


def test_a_view_of_the_input_stays_a_distinct_view():
    """``x.t().t()`` folds to ``x``: the output must still be a view (same storage), not ``x`` itself."""
    def f(x):
        return x.t().t(), x.relu()

    x = torch.randn(3, 4)
    compiled, _ = _compile(f, always_raise=True)
    a, _ = compiled(x)
    assert a is not x and _storage(a) == _storage(x)
    torch.testing.assert_close(a, x)


def test_training_through_the_post_grad_pass_keeps_outputs_fresh():
    """The same check on AOT's Aten graphs: a forward output that became the primal is copied."""
    import sys
    import pathlib
    sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "aten"))
    from tests.fx_bridge.inductor.post_grad.aten_harness import pass_backend

    f = REPRODUCERS["stack_of_unbind"]
    x = torch.randn(4, 10, requires_grad=True)
    xe = x.detach().clone().requires_grad_()
    backend, p = pass_backend()
    out = torch.compile(f, backend=backend)(x)
    assert out is not x and _storage(out) != _storage(x)
    (out * torch.arange(10.0)).sum().backward()
    (f(xe) * torch.arange(10.0)).sum().backward()
    torch.testing.assert_close(x.grad, xe.grad)
    assert p.reports and not any(r.fallback for r in p.reports), [r.skipped for r in p.reports]


def test_unrepairable_aliasing_is_refused():
    """Eager's output aliases its input; an optimized graph returning a fresh tensor there cannot
    be repaired by a copy, so the round keeps its input program."""
    def f(x):
        return x[:, :5]

    def fresh(x):
        return x[:, :5].clone()

    gm, new = torch.fx.symbolic_trace(f), torch.fx.symbolic_trace(fresh)
    x = torch.randn(4, 10)
    compat.propagate_fake(gm, [x])
    compat.propagate_fake(new, [x])
    with pytest.raises(Unsupported, match="alias"):
        match_aliasing(alias_signature(gm, "val"), new, "torch")


# -- property: random programs whose outputs include inputs, views of inputs and repeats ------------
_VIEWS = [
    lambda x: x, lambda x: x[:, :3], lambda x: x.t(), lambda x: x.view(-1), lambda x: x.unsqueeze(0),
    lambda x: torch.cat(x.split(3, 1), 1), lambda x: torch.cat([x]), lambda x: torch.stack(x.unbind(0)),
    lambda x: torch.cat([x[:, :2], x[:, 2:]], 1), lambda x: x.relu(), lambda x: x * 2,
    lambda x: x.reshape(x.shape), lambda x: x.t().t(), lambda x: x.narrow(1, 0, x.shape[1]),
]


def _signature(inputs, outputs):
    """Which input/earlier output each output shares storage with, and which it is."""
    def sig(i, o):
        return (tuple(j for j, x in enumerate(inputs) if _storage(x) == _storage(o)),
                tuple(j for j, p in enumerate(outputs[:i]) if _storage(p) == _storage(o)),
                tuple(j for j, x in enumerate(inputs) if x is o),
                tuple(j for j, p in enumerate(outputs[:i]) if p is o))
    return [sig(i, o) for i, o in enumerate(outputs)]


# 60 random programs a CI run, in shares of 20 (each draws its own): one in the fast tier (~35 s of CPU
# for all 60, measured), two in the slow tier.
SHARES = [pytest.param(0, id="fast")] + [pytest.param(i, marks=pytest.mark.slow, id=f"slow{i}") for i in (1, 2)]


@pytest.mark.parametrize("share", SHARES)
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.randoms(use_true_random=False))
def test_compiled_outputs_alias_like_eager(share: int, rng: random.Random):
    picks = [(rng.randrange(2), rng.randrange(len(_VIEWS))) for _ in range(rng.randint(1, 4))]
    repeat = rng.random() < 0.3

    def f(a, b):
        xs = (a, b)
        outs = [_VIEWS[k](xs[i]) for i, k in picks]
        return tuple(outs + outs[:1]) if repeat else tuple(outs)

    inputs = [torch.randn(4, 6), torch.randn(4, 6)]
    torch._dynamo.reset()
    compiled, backend = _compile(f, always_raise=True)
    got = compiled(*inputs)
    want = f(*inputs)
    assert _signature(inputs, list(got)) == _signature(inputs, list(want)), (picks, repeat)
    torch.testing.assert_close(got, want)
    assert all(not r.fallback for r in backend.reports), [r.skipped for r in backend.reports]


def test_through_inductor_the_output_is_not_the_input():
    """The default backend (Inductor, both passes): the compiled function returns a fresh tensor."""
    f = REPRODUCERS["cat_of_split"]
    x = torch.randn(4, 10)
    backend = eqsat_backend()
    out = torch.compile(f, backend=backend)(x)
    assert out is not x and _storage(out) != _storage(x)
    torch.testing.assert_close(out, f(x))
    assert not any(r.fallback for r in backend.reports + backend.post_grad_reports)


def _value_and_view(x):
    y = x * 2
    return y, y.split(4)[0]


def test_a_fresh_view_of_a_computed_value_is_refused():
    """Soak seed 3008956: a rewrite made ``y[:, 1:2]`` (a view, with a view of it among the outputs)
    a value of its own; the fresh view the repair gave the second output came back as the first
    (Inductor alone returns ``y = x * 2; return y, y.view_as(y)`` as one tensor, torch 2.13)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    original = alias_signature(make_fx(_value_and_view, tracing_mode="fake")(torch.randn(4)), "val")
    optimized = make_fx(lambda x: ((y := x * 2), y), tracing_mode="fake")(torch.randn(4))
    with pytest.raises(Unsupported, match="output 1 would be output 0 itself"):
        match_aliasing(original, optimized, "aten")
