"""``validate=True``: run the original and the optimized graph side by side, in every pass.

Dynamo hands real example inputs; the post-grad pass only has fake ones, so inputs are drawn at
random from their shapes, dtypes and strides (integers in [0, 2), valid as indices of any non-empty
dim). Both graphs run on their own copies of the inputs under the same RNG seed; then values
(``assert_close``) and aliasing (which outputs share storage with which inputs and each other) must
agree. A graph with random ops may consume its random stream in another order once rewritten: if
values differ there, only the outputs that depend on no random op are compared, and the report
says so.
"""
from __future__ import annotations

from typing import Any, Sequence

import torch
from torch.fx.node import map_aggregate

from eqsat_torch.inductor import compat
from eqsat_torch.safety.aliasing import output_leaves, real_signature, same_layout
from eqsat_torch.report import Report

SEED = 20_260_601


class ValidationError(RuntimeError):
    """The optimized graph disagrees with the original; ``report`` says how."""

    def __init__(self, report: Report):
        super().__init__(report.validated)
        self.report = report


def validate(original: torch.fx.GraphModule, optimized: torch.fx.GraphModule,
             example_inputs: Sequence[Any], random_nodes: set[torch.fx.Node], report: Report,
             strict_outputs: int | None = None, layouts: bool = False) -> None:
    """Set ``report.validated``; raise :class:`ValidationError` on a mismatch. ``random_nodes`` are
    the original graph's random or effectful nodes; ``strict_outputs`` as in ``alias_signature``;
    ``layouts``: outputs must have eager's strides too (a Torch-IR graph: nothing after it restores them)."""
    with compat.no_dispatch_fake(), torch.no_grad():  # post-grad: Inductor's fake mode is on
        _validate(original, optimized, example_inputs, random_nodes, report, strict_outputs, layouts)


def _validate(original, optimized, example_inputs, random_nodes, report, strict_outputs, layouts) -> None:
    inputs = [_real(x) for x in example_inputs]
    try:
        want_in, want = _run(original, inputs)
    except Exception as e:  # noqa: BLE001 — random inputs may be invalid for this graph
        report.validated = f"not run: the original graph fails on random inputs ({type(e).__name__})"
        return
    got_in, got = _run(optimized, inputs)
    got_sig, want_sig = real_signature(got_in, got, strict_outputs), real_signature(want_in, want, strict_outputs)
    if got_sig != want_sig:
        _fail(report, "outputs alias inputs or each other differently from eager")
    if layouts:
        for i, (g, w) in enumerate(zip(got_sig, want_sig)):
            if g is not None and w is not None and not same_layout(g.layout, w.layout):
                _fail(report, f"output {i} has strides {g.layout[1]} where eager's has {w.layout[1]}")
    problem = _compare(want, got, range(len(want)))
    if problem is None:
        report.validated = "ok (same seed)" if random_nodes else "ok"
        return
    if not random_nodes:
        _fail(report, problem)
    keep = _deterministic_outputs(original, random_nodes)
    problem = _compare(want, got, keep)
    if problem is not None:
        _fail(report, problem)
    report.validated = (f"ok: compared the {len(keep)} of {len(want)} outputs that depend on no random op "
                        "(the rewrite consumes the random stream in another order)")


def _fail(report: Report, problem: str) -> None:
    report.validated = f"mismatch: {problem}"
    raise ValidationError(report)


def _run(gm: torch.fx.GraphModule, inputs: list[Any]) -> tuple[list[Any], list[Any]]:
    own = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    devices = sorted({x.device.index or 0 for x in own if isinstance(x, torch.Tensor) and x.is_cuda})
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(SEED)
        out = gm(*own)
    leaves: list[Any] = []
    map_aggregate(out, leaves.append)
    return own, leaves


def _compare(want: list[Any], got: list[Any], which) -> str | None:
    for i in which:
        try:
            torch.testing.assert_close(got[i], want[i], equal_nan=True)
        except AssertionError as e:
            return f"output {i}: {str(e).strip().splitlines()[0]}"
    return None


def _deterministic_outputs(gm: torch.fx.GraphModule, random_nodes: set[torch.fx.Node]) -> list[int]:
    tainted = set(random_nodes)
    for n in gm.graph.nodes:
        if any(a in tainted for a in n.all_input_nodes):
            tainted.add(n)
    return [i for i, x in enumerate(output_leaves(gm)) if x not in tainted]


def _hint(s: Any) -> Any:
    """A symbolic size's example value; any other value as it is."""
    return compat.symint_hint(s) if isinstance(s, torch.SymInt) else s


def _real(x: Any) -> Any:
    """A real tensor for a fake one (same shape, dtype, strides, device, sizes at their hints), a
    symbolic size's example value for a SymInt argument; real values are kept."""
    if not isinstance(x, torch.Tensor):
        return _hint(x)
    if not compat.is_fake(x):
        return x
    shape, stride = tuple(map(_hint, x.shape)), tuple(map(_hint, x.stride()))
    out = torch.empty_strided(shape, stride, dtype=x.dtype, device=x.device)
    if x.dtype == torch.bool:
        return out.copy_(torch.rand(shape, device=x.device) < 0.5)
    if x.dtype.is_floating_point or x.dtype.is_complex:
        return out.copy_(torch.randn(shape, dtype=x.dtype, device=x.device))
    return out.copy_(torch.randint(0, 2, shape, device=x.device))
