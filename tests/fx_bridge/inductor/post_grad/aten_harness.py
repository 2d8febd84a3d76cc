"""Run a function's forward and backward Aten graphs through the post-grad pass, then eagerly.

``aot_backend`` hands AOTAutograd's functional Aten graphs to the pass without Inductor's codegen, so
checking a model's loss and gradients costs tracing and optimizing, not C++ compiles.
``always_raise`` rebuilds every graph from the extracted e-nodes, so raising is exercised even when
nothing is cheaper.
"""
from __future__ import annotations

import copy

import torch
from functorch.compile import make_boxed_func

from eqsat_torch.inductor import compat
from eqsat_torch.pipeline import Options
from eqsat_torch.inductor.post_grad import EqsatPostGradPass


def pass_backend(**options):
    """(backend, pass): the backend optimizes each Aten graph in place and runs it eagerly (so no
    Inductor decides between the programs)."""
    p = EqsatPostGradPass(Options(**{"always_raise": True, "verify": False, **options}))

    def compiler(gm, example_inputs):
        p(gm.graph)
        gm.recompile()
        return make_boxed_func(gm.forward)

    return compat.aot_backend(compiler), p


def loss_of(out) -> torch.Tensor:
    leaves = out if isinstance(out, (tuple, list)) else (out,)
    return sum(t.float().square().sum() for t in leaves if isinstance(t, torch.Tensor) and t.is_floating_point())


def step(fn, model: torch.nn.Module, inputs: tuple):
    """Loss and gradients (parameters, then float inputs) of one forward + backward."""
    inputs = tuple(t.detach().clone().requires_grad_() if t.is_floating_point() else t.clone() for t in inputs)
    loss = loss_of(fn(*inputs))
    loss.backward()
    grads = [p.grad for p in model.parameters()] + [t.grad for t in inputs if t.is_floating_point()]
    return loss.detach(), grads


def compare_training(model: torch.nn.Module, inputs: tuple, backend, rtol=1e-4, atol=1e-5, dynamic=None) -> None:
    """The compiled step gives eager's loss and gradients."""
    twin = copy.deepcopy(model)
    expected = step(model, model, inputs)
    actual = step(torch.compile(twin, backend=backend, dynamic=dynamic), twin, inputs)
    torch.testing.assert_close(actual[0], expected[0], rtol=rtol, atol=atol)
    for a, e in zip(actual[1], expected[1]):
        if e is None:
            assert a is None
        else:
            torch.testing.assert_close(a, e, rtol=rtol, atol=atol)
