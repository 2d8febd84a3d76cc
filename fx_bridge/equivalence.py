"""The always-on compile-time check: the rewritten graph shows a user everything the original shows.

Contexts keep surprising us (strides, grad-mode regions, autocast): enumerating them in tests has not
converged, so before a rewritten graph is handed on, both graphs run on fake tensors (no data, no
kernels) inside the context the graph was compiled for (``fx_bridge.context``) and, per output, the
dtype, shape, strides (Torch IR: nothing after it restores them), ``requires_grad``, which inputs and
earlier outputs it shares storage with (``fx_bridge.aliasing``), and which inputs each graph mutates
(their version counters and layouts) must agree. Any difference, or a check that cannot run, keeps
the original graph: no rewrite goes on unchecked.

Symbolic sizes are checked at their example values (their hints) in a fake mode of our own, so the
check never adds a guard to Dynamo's shape environment; sizes themselves are checked for every size
by ``fx_bridge.symbolic``.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Sequence

import torch
from torch.fx.node import map_aggregate

from . import torch_compat
from .aliasing import real_signature, same_layout
from .context import Context


def difference(original: torch.fx.GraphModule, rewritten: torch.fx.GraphModule, example_inputs: Sequence[Any],
               ctx: Context, strict_outputs: int | None = None, layouts: bool = True) -> str | None:
    """The first observable difference between the graphs (``validation: …``), or None. A check
    that cannot run is a difference too: the rewrite is not let through unchecked."""
    try:
        want = _run(original, example_inputs, ctx)
    except Exception as e:  # noqa: BLE001 — an op without a fake kernel, data-dependent sizes, ...
        return f"validation: not checked (the original graph does not run on fake tensors: {type(e).__name__}: {e})"
    try:
        got = _run(rewritten, example_inputs, ctx)
    except Exception as e:  # noqa: BLE001
        return f"validation: the rewritten graph fails on fake tensors ({type(e).__name__}: {e})"
    return _compare(want, got, strict_outputs, layouts)


class _Observed:
    """What a run shows a user: the inputs it ran on, its output leaves, the inputs it mutated."""

    def __init__(self, inputs: list[Any], outputs: list[Any], mutated: list[int]):
        self.inputs, self.outputs, self.mutated = inputs, outputs, mutated


def _run(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], ctx: Context) -> _Observed:
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode(allow_non_fake_inputs=True)
    inputs = _fake_inputs(example_inputs, mode)
    before = [_state(x) for x in inputs]
    with torch_compat.no_dispatch_fake(), ctx.entered(), mode:  # post-grad: Inductor's own fake mode is on
        out = gm(*inputs)
    leaves: list[Any] = []
    map_aggregate(out, leaves.append)
    mutated = [i for i, (x, b) in enumerate(zip(inputs, before)) if b is not None and _state(x) != b]
    return _Observed(inputs, leaves, mutated)


def _state(x: Any) -> tuple | None:
    """An input's version counter (bumped by every in-place write) and layout."""
    if not isinstance(x, torch.Tensor):
        return None
    return x._version, tuple(x.shape), tuple(x.stride()), x.storage_offset()


def _compare(want: _Observed, got: _Observed, strict_outputs: int | None, layouts: bool) -> str | None:
    if len(want.outputs) != len(got.outputs):
        return f"validation: {len(got.outputs)} outputs != {len(want.outputs)}"
    for i, (w, g) in enumerate(zip(want.outputs, got.outputs)):
        problem = _leaf_difference(w, g, layouts)
        if problem:
            return f"validation: {problem} of output {i}: {problem_values(problem, g, w)}"
    ws, gs = real_signature(want.inputs, want.outputs, strict_outputs), real_signature(got.inputs, got.outputs,
                                                                                        strict_outputs)
    for i, (w, g) in enumerate(zip(ws, gs)):
        if w != g:
            return f"validation: storage of output {i}: shares with {_shares(g)} where the original's shares with {_shares(w)}"
    if want.mutated != got.mutated:
        return f"validation: mutated inputs: {got.mutated} != {want.mutated}"
    return None


def _leaf_difference(w: Any, g: Any, layouts: bool) -> str | None:
    if isinstance(w, torch.Tensor) != isinstance(g, torch.Tensor):
        return "type"
    if not isinstance(w, torch.Tensor):
        return None if type(w) is type(g) and w == g else "value"
    if w.dtype != g.dtype:
        return "dtype"
    if tuple(w.shape) != tuple(g.shape):
        return "shape"
    if w.device != g.device:
        return "device"
    if w.requires_grad != g.requires_grad:
        return "requires_grad"
    if layouts and not same_layout((tuple(w.shape), w.stride()), (tuple(g.shape), g.stride())):
        return "strides"
    return None


def problem_values(problem: str, g: Any, w: Any) -> str:
    """``got != want`` for what differs."""
    read = {"type": type, "value": lambda x: x, "dtype": lambda x: x.dtype, "shape": lambda x: tuple(x.shape),
            "device": lambda x: x.device, "requires_grad": lambda x: x.requires_grad,
            "strides": lambda x: tuple(x.stride())}[problem]
    return f"{read(g)} != {read(w)}"


def _shares(a: Any) -> str:
    if a is None:
        return "nothing (not a tensor)"
    parts = [f"input {j}" for j in sorted(a.inputs)] + [f"output {j}" for j in sorted(a.outputs)]
    same = f" (is {', '.join(sorted(a.same_node_as))})" if a.same_node_as else ""
    return (", ".join(parts) or "nothing") + same


def _fake_inputs(example_inputs: Sequence[Any], mode) -> list[Any]:
    """Fresh fake inputs at the example sizes: real tensors converted (storages shared as they are,
    ``requires_grad`` kept); fake ones (the post-grad pass's, a symbolic graph's) rebuilt at their
    hints, those of one storage as views of one fake buffer; SymInts as their hints."""
    out: list[Any] = [None] * len(example_inputs)
    groups: dict[Any, list[int]] = defaultdict(list)
    for i, x in enumerate(example_inputs):
        if isinstance(x, torch.Tensor) and torch_compat.is_fake(x):
            groups[torch_compat.storage_key(x) or ("own", i)].append(i)
        elif isinstance(x, torch.Tensor):
            out[i] = mode.from_tensor(x)
        else:
            out[i] = _hint(x)
    with mode:
        for members in groups.values():
            for i, view in zip(members, _views_of_one_buffer([example_inputs[i] for i in members])):
                out[i] = view
    return out


def _views_of_one_buffer(xs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Fake tensors at the hints of ``xs`` (all of one storage): views of one buffer when they share
    a dtype, else each its own."""
    if len({x.dtype for x in xs}) > 1:
        return [t for x in xs for t in _views_of_one_buffer([x])]
    layouts = [(tuple(map(_hint, x.shape)), tuple(map(_hint, x.stride())), _hint(x.storage_offset())) for x in xs]
    extent = max(off + sum((n - 1) * st for n, st in zip(shape, stride)) + 1 if all(shape) else off
                 for shape, stride, off in layouts)
    base = torch.empty(max(extent, 1), dtype=xs[0].dtype, device=xs[0].device)
    if any(x.requires_grad for x in xs) and (xs[0].dtype.is_floating_point or xs[0].dtype.is_complex):
        if len(xs) == 1 and layouts[0][1] == _contiguous(layouts[0][0]) and layouts[0][2] == 0:
            return [torch.empty_strided(layouts[0][0], layouts[0][1], dtype=xs[0].dtype,
                                        device=xs[0].device).requires_grad_()]
        base.requires_grad_()
    return [base.as_strided(shape, stride, off) for shape, stride, off in layouts]


def _contiguous(shape: tuple) -> tuple:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _hint(s: Any) -> Any:
    return torch_compat.symint_hint(s) if isinstance(s, torch.SymInt) else s
