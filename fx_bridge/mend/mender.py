"""detect -> plan -> apply in-process -> re-detect -> verify, as one call."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from eqsat_torch.mend import dynamo_compat, runtime
from eqsat_torch.mend.detect import DYNAMIC_SHAPE, SCALAR_READ, Detection, detect
from eqsat_torch.mend.inprocess import Patch
from eqsat_torch.mend.facts import observe
from eqsat_torch.mend.plan import Decision, branch_lines, plan
from eqsat_torch.mend.verify import compare


@dataclass
class MendReport:
    before: Detection
    after: Detection
    decisions: list[Decision] = field(default_factory=list)
    outputs_equal: bool = True
    detail: str = ""
    patch: Patch = field(default_factory=Patch)
    suggestion: str = ""  # a Dynamo config for the .item()/dynamic-shape breaks left, with its measured effect

    @property
    def applied(self) -> list[Decision]:
        return [d for d in self.decisions if d.rule]


def mend(fn, args=(), kwargs=None, rounds: int = 3, explain: bool = True) -> MendReport:
    """Rewrite the fixable graph breaks `fn(*args, **kwargs)` hits, in the loaded modules.

    Outputs of the compiled, mended program are compared bit for bit with the original eager
    run (or, when the compiled original already differs from eager, with the compiled original);
    on any difference every rewrite is undone and the report says so. Call
    `report.patch.undo()` to restore the original code.
    """
    kwargs = kwargs or {}
    with runtime.boundary():
        reference = fn(*args, **kwargs)
    before = current = detect(fn, args, kwargs, explain=explain)
    baseline, against = reference, "the original eager run"
    if not compare(reference, before.output)[0]:
        baseline, against = before.output, "the original compiled run (which already differs from eager)"
    report = MendReport(before, before)
    seen: set = set()
    for _ in range(rounds):
        fresh = [s for s in current.sites if (s.filename, s.lineno) not in seen]
        seen |= {(s.filename, s.lineno) for s in fresh}
        lines = branch_lines(fresh)
        observed = observe(fn, args, kwargs, lines) if lines else {}
        decisions = _dedupe(plan(fresh, observed), report.decisions)
        report.decisions += decisions
        if not any(d.rule for d in decisions):
            break
        report.patch.apply(decisions)
        current = detect(fn, args, kwargs, explain=explain)
        if _drop_fallbacks(current, report.decisions):
            report.patch.undo()
            report.patch.apply(report.decisions)
            current = detect(fn, args, kwargs, explain=explain)
    if current.breaks > before.breaks:
        _undo_all(report, f"undone: breaks rose {before.breaks} -> {current.breaks}")
        current = detect(fn, args, kwargs, explain=explain)
    report.after = current
    report.outputs_equal, report.detail = compare(baseline, current.output)
    report.detail += f" vs {against}"
    if not report.outputs_equal:
        _undo_all(report, f"undone: outputs changed ({report.detail})")
        report.after = detect(fn, args, kwargs, explain=explain)
    if any(s.category in (SCALAR_READ, DYNAMIC_SHAPE) for s in report.after.sites):
        report.suggestion = _measure_scalar_capture(fn, args, kwargs, baseline, report.after.breaks)
    return report


def _measure_scalar_capture(fn, args, kwargs, reference, breaks: int) -> str:
    """Breaks (and output check) with Dynamo capturing scalars and dynamic shapes, on top of the rewrites."""
    try:
        with dynamo_compat.scalar_capture():
            captured = detect(fn, args, kwargs, explain=False)
    except Exception as err:  # e.g. a guard on a data-dependent symbol: the config does not apply
        return f"{dynamo_compat.SCALAR_CAPTURE}: fails ({type(err).__name__})"
    equal, detail = compare(reference, captured.output)
    return f"{dynamo_compat.SCALAR_CAPTURE}: breaks {breaks} -> {captured.breaks}, outputs " + (
        "bit-identical" if equal else f"differ ({detail})")


def _undo_all(report: MendReport, reason: str) -> None:
    report.patch.undo()
    for d in report.decisions:
        if d.rule:
            d.rule, d.reason = None, reason


def _drop_fallbacks(detection: Detection, decisions: list[Decision]) -> bool:
    """Refuse rewrites whose runtime helper fell back to Python at trace time (values of
    different shape/dtype/device, a condition that is not a 1-element tensor, a table without its ints)."""
    dropped = False
    for site in detection.sites:
        if os.path.realpath(site.filename) != os.path.realpath(runtime.__file__):
            continue
        callers = [f for f in site.frames if os.path.realpath(f[0]) != os.path.realpath(runtime.__file__)]
        if not callers:
            continue
        filename, line = callers[-1]
        for d in decisions:
            if d.rule and d.filename == filename and d.stmt.lineno <= line <= d.stmt.end_lineno:
                d.rule, d.reason = None, (f"{d.rule} fell back at trace time: values differ in shape/dtype/"
                                          "device, or the condition is not a 1-element tensor")
                dropped = True
    for d in decisions:  # a [Rows] loop that still breaks inside: its table came without the ints
        if d.rule == "rows" and d.companions and any(
                s.filename == d.filename and d.stmt.lineno <= s.lineno <= d.stmt.end_lineno for s in detection.sites):
            d.rule, d.reason = None, "rows: the loop still breaks (its table arrived without the list's ints)"
            dropped = True
    for d in decisions:  # rewrites that stand or fall together: [Item] and its ifs, a [Rows] loop and its table
        group = [d] + d.companions
        if d.companions and any(g.rule is None for g in group):
            for g in group:
                if g.rule:
                    g.rule, g.reason = None, "a rewrite it stands or falls with fell back at trace time"
    return dropped


def _dedupe(decisions: list[Decision], earlier: list[Decision]) -> list[Decision]:
    """Several sites can resolve to one statement (a logger wrapper called from two places, one
    table made for two loops); a companion that repeats one is replaced by the decision kept."""
    kept = {d.key: d for d in earlier if d.rule}
    out = []
    for d in decisions:
        if d.rule and d.key in kept:
            continue
        kept.setdefault(d.key, d)
        out.append(d)
    for d in out:
        d.companions = [kept.get(c.key, c) if c.rule else c for c in d.companions]
    return out
