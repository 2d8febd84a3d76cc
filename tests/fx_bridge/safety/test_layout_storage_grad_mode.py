"""Trust, round two (R1–R3): outputs keep eager's strides, never share a mutated input's storage, and
no rewrite crosses a ``no_grad`` boundary. Each program below gave a wrong answer silently before.
"""
import pytest
import torch

from eqsat.cost import CostModel
from eqsat_torch import eqsat_backend
from eqsat_torch.pipeline import price_input
from tests.optimized import assert_kept, assert_optimized
from tests.fx_bridge.safety.issue28_programs import (cat_of_split, channels_last, mutated_view_then_cat, no_grad_cat,
                                          setitem_then_stack, stack_of_unbind, transposed, zero_then_cat)


def _storage(t):
    return t.untyped_storage().data_ptr()


def _dims_over_one(t):
    return [(n, s) for n, s in zip(t.shape, t.stride()) if n != 1]


# -- R1: strides ------------------------------------------------------------------------------------
LAYOUTS = {"transposed_cat_of_split": (cat_of_split, transposed),
           "channels_last_stack_of_unbind": (stack_of_unbind, channels_last)}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_output_has_eagers_strides(name):
    fn, make = LAYOUTS[name]
    x = make()
    backend = eqsat_backend(inner="eager", post_grad=False, validate=True)
    out = torch.compile(fn, backend=backend)(x)
    want = fn(x)
    torch.testing.assert_close(out, want)
    assert _dims_over_one(out) == _dims_over_one(want), (out.stride(), want.stride())
    assert out.is_contiguous() == want.is_contiguous()
    out.view(-1)  # eager's output is contiguous: a flat view must work
    assert_optimized(backend.reports[0])
    assert backend.reports[0].alias_copies == 1  # the identity plus one copy in eager's layout


def test_output_strides_through_inductor():
    fn, make = LAYOUTS["transposed_cat_of_split"]
    x = make()
    out = torch.compile(fn, backend=eqsat_backend())(x)
    assert _dims_over_one(out) == _dims_over_one(fn(x))


# -- R2: storage of a mutated input ------------------------------------------------------------------
@pytest.mark.parametrize("fn", [zero_then_cat, setitem_then_stack, mutated_view_then_cat])
def test_output_never_shares_a_mutated_inputs_storage(fn, uncached_inductor):
    backend = eqsat_backend()
    x = torch.randn(4, 3)
    xe = x.clone()
    out, want = torch.compile(fn, backend=backend)(x), fn(xe)
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(x, xe)  # the mutation happened, as in eager
    assert _storage(out) != _storage(x)
    out.add_(100)
    torch.testing.assert_close(x, xe)
    reasons = " ".join(n for r in backend.post_grad_reports for n in r.notes)
    assert "copied back into a mutated input" in reasons, [r.summary() for r in backend.post_grad_reports]


# -- R3: grad mode regions ---------------------------------------------------------------------------
@pytest.mark.parametrize("opts", [{"inner": "eager"}, {"post_grad": False}, {}],
                         ids=["eager", "pre_grad_only", "default"])
def test_no_grad_region_keeps_its_gradient(opts):
    w = torch.randn(3, 4, requires_grad=True)
    we = w.detach().clone().requires_grad_()
    backend = eqsat_backend(**opts)
    torch.compile(no_grad_cat, backend=backend)(w).sum().backward()
    no_grad_cat(we).sum().backward()
    torch.testing.assert_close(w.grad, we.grad)
    assert_optimized(backend.reports[0])  # the region was optimized, not skipped


def test_grad_enabled_inside_a_no_grad_compile_is_left_alone():
    def f(w):
        with torch.enable_grad():
            s = torch.cat(torch.split(w, 2, 1), 1)
        return s * 2

    w = torch.randn(3, 4, requires_grad=True)
    backend = eqsat_backend(inner="eager")
    with torch.no_grad():
        out = torch.compile(f, backend=backend)(w)
        want = f(w)
    torch.testing.assert_close(out, want)
    assert out.requires_grad == want.requires_grad
    assert_kept(backend.reports[0], "grad enabled")


def test_inference_mode_region_is_left_alone():
    def f(w):
        with torch.inference_mode():
            s = torch.cat(torch.split(w, 2, 1), 1)
        return s

    backend = eqsat_backend(inner="eager")
    torch.compile(f, backend=backend)(torch.randn(3, 4))
    assert_kept(backend.reports[0], "inference_mode")


def test_detach_costs_nothing_on_its_own():
    """A ``no_grad`` read is a ``detach``: no kernel, like a view (it must not make rewrites of a
    region look dearer than they are)."""
    w = torch.randn(64, 64)
    plain = price_input(torch.fx.symbolic_trace(lambda a, b: a @ b), [w, w], CostModel.for_device("cuda"))[0].before
    detached = price_input(torch.fx.symbolic_trace(lambda a, b: a.detach() @ b), [w, w],
                           CostModel.for_device("cuda"))[0].before
    assert (detached.generated, detached.extern) == (plain.generated, plain.extern) == (0, 1)
