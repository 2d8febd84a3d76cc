"""The always-on compile-time check: the rewritten graph shows a user everything the original shows.

Contexts keep surprising us (strides, grad-mode regions, autocast): enumerating them in tests has not
converged, so before a rewritten graph is handed on, both graphs run on fake tensors (no data, no
kernels) inside the context the graph was compiled for (``eqsat_torch.safety.context``) and, per output, the
dtype, shape, strides (Torch IR: nothing after it restores them), ``requires_grad``, which inputs and
earlier outputs it shares storage with (``eqsat_torch.safety.aliasing``), and which inputs each graph mutates
(their version counters and layouts) must agree. Any difference, or a check that cannot run, keeps
the original graph: no rewrite goes on unchecked.

Cost (issue 41: under 10 % of the optimizer's time on every zoo model, ``bench/scripts/equivalence_cost.py``):
where the inputs are the graph's own static fakes, both graphs run in the graph's own fake mode,
whose dispatch cache already holds what Dynamo or AOTAutograd traced, and the original's outputs are
read from what that trace recorded (a fake run in the very context it was traced in) unless some
node can write. Symbolic sizes are checked at their example values (their hints) in a fake mode of
our own, so the check never adds a guard to Dynamo's shape environment; sizes themselves are checked
for every size by ``eqsat_torch.lowering.symbolic``.
"""
from __future__ import annotations

import logging
import operator
from collections import defaultdict
from typing import Any, Sequence

import sympy
import torch
from torch.fx.node import map_aggregate

from eqsat_torch.inductor import compat
from eqsat_torch.safety.aliasing import inductor_view, real_signature, same_layout
from eqsat_torch.safety.context import Context
from eqsat_torch.report import Report
from eqsat_torch.lowering.symbolic import output_leaves
from eqsat_torch.safety.noop_outputs import outputs_after_removal

log = logging.getLogger("eqsat")


def checked(original: torch.fx.GraphModule, optimized: torch.fx.GraphModule, example_inputs: Sequence[Any],
            ctx: Context, report: Report, user_outputs: int | None = None) -> torch.fx.GraphModule:
    """``optimized``, or ``original`` when the check finds a difference a user could see; the
    report then says which (``refused``) and credits no rule."""
    aten = any(n.op == "call_function" and compat.is_aten(n.target) for n in original.graph.nodes)
    problem = difference(original, optimized, example_inputs, ctx, user_outputs, layouts=not aten)
    if problem is None:
        return optimized
    log.warning("eqsat: the equivalence check refused the rewritten graph, keeping the original: %s", problem)
    report.refused, report.changed, report.fallback = problem, False, "validation mismatch"
    report.skipped = f"validation mismatch: {problem}"
    report.rules_used, report.alias_copies = {}, 0
    report.cost_after, report.kernels_after = report.cost_before, report.kernels_before
    return original


def difference(original: torch.fx.GraphModule, rewritten: torch.fx.GraphModule, example_inputs: Sequence[Any],
               ctx: Context, strict_outputs: int | None = None, layouts: bool = True) -> str | None:
    """The first observable difference between the graphs (``validation: …``), or None. A check
    that cannot run is a difference too: the rewrite is not let through unchecked."""
    try:
        templates = _templates(original, example_inputs)
        mode = _mode_of(templates)
        inputs = _fake_inputs(templates, mode)
        want = _recorded(original, templates, mode) or _run(original, inputs, mode, ctx)
    except Exception as e:  # noqa: BLE001 — an op without a fake kernel, data-dependent sizes, ...
        return f"validation: not checked (the original graph does not run on fake tensors: {type(e).__name__}: {e})"
    try:
        if _layouts(inputs) != [b and b[1:] for b in want.before]:
            inputs = _fake_inputs(templates, mode)  # the original changed an input's layout (``t_``)
        got = _run(rewritten, inputs, mode, ctx)
    except Exception as e:  # noqa: BLE001
        return f"validation: the rewritten graph fails on fake tensors ({type(e).__name__}: {e})"
    return _compare(want, got, strict_outputs, layouts) or (
        None if layouts else _view_strides(rewritten, want, got, strict_outputs))


def _view_strides(rewritten: torch.fx.GraphModule, want: _Observed, got: _Observed,
                  strict_outputs: int | None) -> str | None:
    """Aten graphs: Inductor gives a user's output the original's strides, exactly, unless the rewritten
    graph computes it as a view of another buffer (``inductor_view``): then only their order. So such an
    output must have the original's strides (soak seed 3001276: ``neg(x)[1:2]`` → ``neg(x[1:2])``, a
    split piece of it then had stride 3 where eager's is 9). ``strict_outputs``: how many outputs the
    user sees (the rest are saved for the backward); None: all."""
    leaves = outputs_after_removal(rewritten.graph)  # a clone Inductor drops returns the view it copied
    seen = len(leaves) if strict_outputs is None else strict_outputs
    for i, (node, w, g) in enumerate(zip(leaves[:seen], want.outputs, got.outputs)):
        if (isinstance(w, torch.Tensor) and inductor_view(node)
                and not same_layout((tuple(w.shape), w.stride()), (tuple(g.shape), g.stride()))):
            return (f"validation: strides of output {i} (a view: Inductor keeps its strides only in order): "
                    f"{problem_values('strides', g, w)}")
    return None


def _templates(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> list[Any]:
    """Per input, what its fake copies are made like: the graph's own fake value of the placeholder
    where it has one, else the example input."""
    values = [compat.node_value(n) for n in gm.graph.nodes if n.op == "placeholder"]
    if len(values) != len(example_inputs):
        return list(example_inputs)
    return [v if isinstance(v, torch.Tensor) and compat.is_fake(v) and isinstance(x, torch.Tensor) else x
            for v, x in zip(values, example_inputs)]


def _mode_of(templates: list[Any]):
    """The graph's own fake mode where every input is a fake of it with static sizes (its dispatch
    cache already holds the ops Dynamo or AOTAutograd traced: the check costs a fraction of a cold
    run), else a fresh one at the hints (no guard is ever added to a symbolic graph's shape env)."""
    fakes = [x for x in templates if isinstance(x, torch.Tensor)]
    modes = {id(x.fake_mode): x.fake_mode for x in fakes if compat.is_fake(x)}
    static = all(not compat.is_symbolic(v) for x in fakes
                 for v in (*x.shape, *x.stride(), x.storage_offset())) and not any(
        isinstance(x, torch.SymInt) for x in templates)
    if len(modes) == 1 and all(compat.is_fake(x) for x in fakes) and static:
        return next(iter(modes.values()))
    return compat.fake_mode_at_hints()


class _Observed:
    """What a run shows a user: the inputs it ran on (and their state before), its output leaves,
    the inputs it mutated."""

    def __init__(self, inputs: list[Any], before: list[Any], outputs: list[Any], mutated: list[int]):
        self.inputs, self.before, self.outputs, self.mutated = inputs, before, outputs, mutated


def _run(gm: torch.fx.GraphModule, inputs: list[Any], mode, ctx: Context) -> _Observed:
    """``gm`` on ``inputs`` (the same for both graphs: writes are read off version counters)."""
    before = [_state(x) for x in inputs]
    allowed, mode.allow_non_fake_inputs = mode.allow_non_fake_inputs, True  # attributes (freezing) are real
    try:
        with compat.no_dispatch_fake(), ctx.entered(), mode:  # post-grad: Inductor's fake mode is on
            out = gm(*inputs)
    finally:
        mode.allow_non_fake_inputs = allowed
    leaves: list[Any] = []
    map_aggregate(out, leaves.append)
    mutated = [i for i, (x, b) in enumerate(zip(inputs, before)) if b is not None and _state(x) != b]
    return _Observed(inputs, before, leaves, mutated)


def _state(x: Any) -> tuple | None:
    """An input's version counter (bumped by every in-place write) and layout."""
    if not isinstance(x, torch.Tensor):
        return None
    try:
        version = x._version
    except RuntimeError:  # an inference tensor keeps no version counter
        version = None
    return version, tuple(x.shape), tuple(x.stride()), x.storage_offset()


def _recorded(gm: torch.fx.GraphModule, templates: list[Any], mode) -> _Observed | None:
    """The original graph's run as its tracer recorded it (Dynamo's ``example_value``, AOT's
    ``val``: a fake run in the very context the graph was traced in), where that is as good as a
    run of ours: the inputs are the graph's own fakes of ``mode`` (static sizes), every output leaf
    has its value, and no node can write (so no input is mutated). None: run it."""
    if not any(compat.is_fake(x) and x.fake_mode is mode for x in templates if isinstance(x, torch.Tensor)):
        return None
    if any(_may_write(n) for n in gm.graph.nodes):
        return None
    leaves = output_leaves(gm)
    values = [compat.node_value(x) if isinstance(x, torch.fx.Node) else x for x in leaves]
    if any(isinstance(x, torch.fx.Node) and not isinstance(v, torch.Tensor | torch.SymInt | int | float | bool)
           for x, v in zip(leaves, values)):
        return None
    return _Observed(templates, [_state(x) for x in templates], values, [])


def _may_write(n: torch.fx.Node) -> bool:
    """An in-place method or function (``add_``, ``setitem``), an ``out=`` call or a mutable Aten op."""
    if n.op not in ("call_function", "call_method"):
        return False
    if "out" in n.kwargs or n.target is operator.setitem:
        return True
    if compat.is_aten(n.target):
        return n.target._schema.is_mutable
    name = n.target if isinstance(n.target, str) else getattr(n.target, "__name__", "")
    return name.endswith("_") and not name.endswith("__")


def _layouts(inputs: list[Any]) -> list[tuple | None]:
    return [s and s[1:] for s in map(_state, inputs)]


def _compare(want: _Observed, got: _Observed, strict_outputs: int | None, layouts: bool) -> str | None:
    if len(want.outputs) != len(got.outputs):
        return f"validation: {len(got.outputs)} outputs != {len(want.outputs)}"
    wsizes, gsizes = _sizes(want.outputs), _sizes(got.outputs)
    for i, (w, g) in enumerate(zip(want.outputs, got.outputs)):
        problem = _leaf_difference(w, g, layouts, wsizes[i], gsizes[i])
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


def _leaf_difference(w: Any, g: Any, layouts: bool, wsize: tuple | None, gsize: tuple | None) -> str | None:
    """What differs between two output leaves; ``wsize``/``gsize``: their sizes and strides from
    :func:`_sizes` (no comparison of symbolic sizes adds a guard)."""
    if isinstance(w, torch.Tensor) != isinstance(g, torch.Tensor):
        return "type"
    if not isinstance(w, torch.Tensor):
        same = wsize == gsize if isinstance(w, torch.SymInt) else w == g
        return None if type(w) is type(g) and same else "value"
    if w.dtype != g.dtype:
        return "dtype"
    if wsize[0] != gsize[0]:
        return "shape"
    if w.device != g.device:
        return "device"
    if w.requires_grad != g.requires_grad:
        return "requires_grad"
    if layouts and not same_layout(wsize, gsize):
        return "strides"
    return None


def _sizes(leaves: list[Any]) -> list[tuple | None]:
    """Per leaf, its sizes and strides (a tensor's) as ints, a symbolic one as its expression with
    the data-dependent (unbacked) symbols named by their order of appearance in this run's outputs:
    each run of ``nonzero`` draws a new symbol (``u0`` in one graph is ``u1`` in the other), and
    two graphs that compute the same sizes name them alike."""
    names: dict[Any, str] = {}

    def read(v: Any) -> Any:
        if not isinstance(v, torch.SymInt):
            return v
        expr = compat.sym_expr(v)
        for sym in sorted(compat.free_unbacked_symbols(expr), key=str):
            names.setdefault(sym, f"u{len(names)}")
        return str(expr.xreplace({sym: sympy.Symbol(names[sym]) for sym in compat.free_unbacked_symbols(expr)}))

    return [(tuple(map(read, x.shape)), tuple(map(read, x.stride()))) if isinstance(x, torch.Tensor) else
            (read(x),) if isinstance(x, torch.SymInt) else None for x in leaves]


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
    """Fresh fake inputs of ``mode`` at the example sizes: real tensors converted (storages shared
    as they are, ``requires_grad`` kept); fake ones rebuilt at their hints, those of one storage as
    views of one fake buffer; SymInts as their hints."""
    out: list[Any] = [None] * len(example_inputs)
    groups: dict[Any, list[int]] = defaultdict(list)
    for i, x in enumerate(example_inputs):
        if isinstance(x, torch.Tensor) and compat.is_fake(x):
            groups[compat.storage_key(x) or ("own", i)].append(i)
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
    if len(xs) == 1 and layouts[0][2] == 0:  # one tensor of its storage (most inputs): one op
        t = torch.empty_strided(layouts[0][0], layouts[0][1], dtype=xs[0].dtype, device=xs[0].device)
        return [t.requires_grad_() if xs[0].requires_grad and (t.is_floating_point() or t.is_complex()) else t]
    extent = max(off + sum((n - 1) * st for n, st in zip(shape, stride)) + 1 if all(shape) else off
                 for shape, stride, off in layouts)
    base = torch.empty(max(extent, 1), dtype=xs[0].dtype, device=xs[0].device)
    if any(x.requires_grad for x in xs) and (xs[0].dtype.is_floating_point or xs[0].dtype.is_complex):
        base.requires_grad_()
    return [base.as_strided(shape, stride, off) for shape, stride, off in layouts]


def _hint(s: Any) -> Any:
    return compat.symint_hint(s) if isinstance(s, torch.SymInt) else s
