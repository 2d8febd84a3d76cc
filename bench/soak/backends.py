"""The backends a case is compiled with: eqsat's pre-grad pass plus post-grad pass run eagerly (or the
real Inductor), and the same compile without eqsat that a difference is checked against."""
from __future__ import annotations

import collections
from typing import Callable

import torch
from functorch.compile import make_boxed_func

from bench.soak.compare import _strides
from eqsat_torch.backend import EqsatBackend, _trains, optimize_or_keep
from eqsat_torch.inductor import compat
from eqsat_torch.inductor.post_grad import EqsatPostGradPass
from eqsat_torch.options import Options
from eqsat_torch.safety.aliasing import inductor_view, view_base


# -- the compilers ------------------------------------------------------------------------------------
def _backend(reports: list):
    """Dynamo graph: eqsat's pre-grad pass; AOTAutograd's forward and backward: the post-grad pass;
    then run eagerly. Inference goes through AOT too: its graph carries the input-mutation epilogue
    Inductor's post-grad passes see."""
    opts = Options(inner="eager", post_grad=False)
    aot = _aot_as_inductor(EqsatPostGradPass(Options(), reports=reports))

    def backend(gm, example_inputs):
        new_gm, report = optimize_or_keep(gm, example_inputs, opts, train_step=_trains(gm, example_inputs))
        reports.append(report)
        return aot(new_gm, example_inputs)

    return backend


# What Inductor makes of a graph besides its codegen, imitated in both compiles: AOT traces with its
# decomposition of ``cat`` (one input: a clone of it, in that input's layout), and after the post-grad
# pre-pass (ours) ``remove_noop_ops`` drops a clone, cat, slice, … whose fake value is its input's.
# Inductor alone so returns ``cat([t])`` as ``t`` (torch 2.13: ``cat([(x * 2).t()], 0)`` has strides
# (1, 4) where eager's are (6, 1)); soak seed 2002268 (torch 2.11) was charged for that to eqsat.
_INDUCTOR_DECOMPOSES = (torch.ops.aten.cat.default,)


def _aot_as_inductor(post: Callable[[torch.fx.Graph], None] | None = None):
    """AOTAutograd whose forward and backward graphs (after ``post``, a post-grad pass, and Inductor's
    ``remove_noop_ops``) run eagerly, each output given the layout Inductor gives it: the strides its
    meta value had before ``post`` (``_keep_layouts``). The compile without eqsat keeps them too:
    where an op's meta strides are not the strides it computes at run time (torch 2.11: ``aten.zero``
    of a transposed view), both differ from eager alike, and the difference is not eqsat's."""
    def post_compiler(gm, example_inputs):
        before = _output_layouts(gm)
        if post is not None:
            post(gm.graph)
        compat.inductor_remove_noop_ops(gm.graph)
        _fresh_input_views(gm)
        _keep_layouts(gm, before)
        return make_boxed_func(gm.forward)

    return compat.aot_backend(post_compiler, compat.inductor_decompositions(_INDUCTOR_DECOMPOSES))


def _fresh_input_views(gm: torch.fx.GraphModule) -> None:
    """A view of an input returned at two output positions is two tensors, as Inductor returns it (a
    ``reinterpret_tensor`` of the input at each); run eagerly, the graph returned one object twice.
    Soak seed 3008771t (CPU, torch 2.11 and 2.13, not with --inductor): ``x.unbind(0)[0]`` and its
    ``view_as``, whose ``alias`` ``remove_noop_ops`` drops, came back as the very same tensor."""
    out = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    seen: set = set()
    outs = list(out.args[0])
    for i, n in enumerate(outs):
        if isinstance(n, torch.fx.Node) and n in seen and n.op != "placeholder" and view_base(n).op == "placeholder":
            with gm.graph.inserting_before(out):
                outs[i] = gm.graph.call_function(torch.ops.aten.alias.default, (n,))
            outs[i].meta.update(n.meta)
        seen.add(n)
    out.args = (type(out.args[0])(outs),)
    gm.recompile()


def _output_layouts(gm: torch.fx.GraphModule) -> list:
    out = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    vals = [n.meta.get("val") if isinstance(n, torch.fx.Node) else None for n in out.args[0]]
    return [(tuple(v.shape), tuple(v.stride())) if isinstance(v, torch.Tensor) else None for v in vals]


_RESTRIDED = collections.Counter()  # per case: outputs _restride copied (read into the result)


def _keep_layouts(gm: torch.fx.GraphModule, layouts: list) -> None:
    """What Inductor's lowering does with the strides each output had before the post-grad passes
    (torch 2.13, ``GraphLowering.run_node``): an output that is no view gets exactly those strides
    (``require_exact_strides``), one that is a view only their order (``require_stride_order``), at
    the node, so its users (views of it among the outputs too) read the restrided value. A value
    sharing an input's storage is left as it is (AOT regenerates those from the input)."""
    g = gm.graph
    out = next(n for n in reversed(g.nodes) if n.op == "output")
    placeholders = tuple(n for n in g.nodes if n.op == "placeholder")
    done: set = set()
    for n, layout in zip(out.args[0], layouts):
        if not isinstance(n, torch.fx.Node) or layout is None or n.op == "placeholder" or n in done:
            continue
        done.add(n)
        with g.inserting_after(n):
            kept = g.call_function(_restride, (n, layout, placeholders, inductor_view(n)))
        n.replace_all_uses_with(kept, delete_user_cb=lambda user: user is not kept)
        for user in kept.users:  # Inductor's view of a buffer in any layout is an indexing, never an error
            if user.target in _VIEWS_OF_ANY_LAYOUT:
                user.target = torch.ops.aten.reshape.default
    gm.recompile()


# Views a user of a restrided output reads it through: eager's refuses a layout it cannot view (soak seed
# 971: the post-grad pass made an output contiguous, ``remove_noop_ops`` dropped the clone before its
# ``_unsafe_view``, and the output's old strides came back); a reshape gives the same values.
_VIEWS_OF_ANY_LAYOUT = (torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default)


def _order(sizes, strides) -> list:
    return sorted((d for d, n in enumerate(sizes) if n != 1), key=lambda d: (-strides[d], d))


def _restride(t, layout, inputs, view):
    if (not isinstance(t, torch.Tensor) or tuple(t.shape) != layout[0]
            or _strides(t) == [(n, st) for n, st in zip(*layout) if n != 1]
            or t.untyped_storage().data_ptr() in {x.untyped_storage().data_ptr() for x in inputs
                                                   if isinstance(x, torch.Tensor)}):
        return t
    sizes, strides = layout
    if view:  # only the order is kept: the dense layout of that order where it differs
        if _order(t.shape, t.stride()) == _order(sizes, strides):
            return t
        strides, step = [0] * len(sizes), 1
        for d in reversed(sorted(range(len(sizes)), key=lambda d: (-layout[1][d], d))):
            strides[d], step = step, step * sizes[d]
    _RESTRIDED["restrided"] += 1
    out = torch.empty_strided(sizes, tuple(strides), dtype=t.dtype, device=t.device)
    dst, src = out, t  # an expand's zero strides: Inductor's kernel writes each element, eager's copy_ refuses
    for d, (n, st) in enumerate(zip(sizes, strides)):
        if st == 0 and n > 1:
            dst, src = dst.narrow(d, 0, 1), src.narrow(d, 0, 1)
    dst.copy_(src)
    return out


class _Inductor:
    """The real backend, its reports gathered (pre-grad, then each Aten graph's). On the CPU without
    Inductor's decision by loop nests, which would keep the input for many cases (the optimizer's
    programs are what a soak checks; a GPU soak keeps the decision, its candidates are checked too)."""

    def __init__(self, device: str):
        self.inner = EqsatBackend(verify=False if device == "cpu" else None)

    def __call__(self, gm, example_inputs):
        return self.inner(gm, example_inputs)

    def reports(self) -> list:
        return self.inner.reports + self.inner.post_grad_reports


def _plain_backend(inductor: bool):
    """The same compile path without eqsat: what it gets wrong against eager is not ours."""
    return compat.compile_fx() if inductor else _aot_as_inductor()
