"""Inductor decides (issue 29): of the input, the optimizer's program and a few programs between
them, the one Inductor's own lowering and scheduler count the fewest launches for is handed on.

``eqsat_torch.inductor.verify`` holds the decision logic; this module measures the candidates
(``eqsat_torch.inductor.probe``) within the compile's time and writes the verdict into the report.
"""
from __future__ import annotations

import contextvars
import time
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch

from eqsat.budget import price
from eqsat.deadline import Deadline
from eqsat_torch.inductor import probe, verify
from eqsat_torch.options import Options, device_of
from eqsat_torch.report import Report, timed

if TYPE_CHECKING:
    from eqsat_torch.pipeline import Alternative

# Beyond the input and the optimizer's program, Inductor measures at most this many programs with
# some of the rewrites put back (``eqsat.partial``): where ours launches no fewer than the input, all
# of them (within seconds=); else only while measuring has taken at most this share of the graph's
# compile so far (optimizer and measuring): each costs one more lowering.
VERIFY_PARTIALS = 4
VERIFY_SHARE = 0.5

# Inductor's combo kernels in the compile the graph being optimized goes to: True/False, or "decide"
# (``pipeline.optimize``'s ``combo``); read where Inductor decides, set for one ``optimize`` call.
COMBO: contextvars.ContextVar[bool | str] = contextvars.ContextVar("eqsat_combo_kernels", default=False)


def probe_device(opts: Options, example_inputs: Sequence[Any]) -> str | None:
    """The device Inductor decides for, or None. ``verify=None``: every compile Inductor finishes is
    decided for its own device, by launches on a GPU and by loop nests on the CPU (the count that
    follows CPU latency, issue 42); ``True`` also where the GPU cost model prices a CPU graph
    (Inductor then schedules it for an H200 it has not got); ``False``: never. A CPU graph compiled
    by eager (``inner="eager"``) has no loop nests to count."""
    if opts.verify is False:
        return None
    if opts.cost.gpu:
        wanted = opts.verify or device_of(example_inputs) == "cuda"
        return "cuda" if wanted and probe.available("cuda") else None
    return "cpu" if device_of(example_inputs) == "cpu" and opts.inner == "inductor" else None


def inductor_decides(original, optimized, example_inputs, dialect: str, report: Report,
                      deadline: Deadline, frozen: bool = False,
                      alternatives: Callable[[int], list[Alternative]] | None = None,
                      device: str = "cuda") -> torch.fx.GraphModule:
    """Our program, the input, or one between them (ours with some rewrites put back,
    ``alternatives``), whichever Inductor's own lowering and scheduler count the fewest launches for
    on ``device`` (loop nests on the CPU; ``eqsat_torch.inductor.verify``): the model proposes, Inductor decides (issue 29). With no time left
    nothing is measured, and the note says so; the programs between are measured within ``seconds=``
    where ours lost, else only while the measuring stays within ``VERIFY_SHARE`` of the compile."""
    gpu = device == "cuda"
    probe_price = "probe" if gpu else "probe_cpu"
    per_node = price(probe_price, len(optimized.graph.nodes))  # verification is skipped where the budget
    if deadline.out_of_time("verify", per_node + price(probe_price, len(original.graph.nodes))):  # cannot pay both
        report.notes.append("not measured by Inductor: too little of the time budget is left")
        return optimized
    before, start = report.optimizer_seconds, time.perf_counter()

    def keep_going(measured: dict) -> bool:
        """Within ``seconds=``; and ours lost to the input on a GPU (the programs between are what can
        still beat Inductor alone), or measuring is within its share of the compile (always on the
        CPU, where a probe generates code: two more would double the compile)."""
        if deadline.left() <= per_node:  # seconds= (not marked as the budget's stop: the program is decided)
            return False
        ours, base = measured.get("optimized"), measured.get(verify.INPUT)
        Launches = probe.Launches
        lost = not isinstance(ours, Launches) or (isinstance(base, Launches)
                                                  and verify.best_key(ours, combo) >= verify.best_key(base, combo))
        spent = time.perf_counter() - start
        return lost and gpu or spent <= VERIFY_SHARE * (before + spent)

    combo = (None if COMBO.get() == "decide" else bool(COMBO.get())) if gpu else False  # none on the CPU
    with timed(report, "verify"):
        between = {a.name: a for a in (alternatives(VERIFY_PARTIALS) if alternatives else [])}
        choice = verify.choose([(verify.INPUT, original), ("optimized", optimized),
                                *((name, a.make) for name, a in between.items())],
                               lambda g: _count(g, example_inputs, dialect, frozen, combo, device), keep_going, combo)
    report.inductor_launches = {name: m if isinstance(m, str) else (m.combined if combo else m).total
                                for name, m in choice.measured.items()}
    record_combo(report, choice, combo)
    report.inductor_launches.update({name: f"same as {other}" for name, other in choice.same_as.items()})
    report.inductor_launches.update({name: "not measured: seconds= or the share of compile time for measuring ran out"
                                     for name in choice.not_measured})
    report.inductor_winner = choice.name
    report.notes.append(f"Inductor decides: {choice.note}")
    if choice.name == verify.INPUT:
        report.changed, report.rules_used, report.alias_copies = False, {}, 0
        report.cost_after, report.kernels_after = report.cost_before, report.kernels_before
        return original
    if choice.name in between:
        chosen = between[choice.name]
        report.rules_used = dict(chosen.partial.rules_used)
        report.cost_after, report.kernels_after = chosen.price()
        report.alias_copies = chosen.alias_copies
    return choice.gm


def _count(gm, example_inputs, dialect: str, frozen: bool, combo: bool | None, device: str) -> probe.Launches:
    """Inductor's count of ``gm`` on ``device``, with combo kernels too unless they are off."""
    launches = probe.count_launches(gm, example_inputs, device, dialect, frozen, combo=combo is not False)
    if combo and launches.combined is None:
        raise probe.ProbeError("combo kernels are on but this torch's cannot be counted")
    return launches


def record_combo(report: Report, choice: verify.Choice, combo: bool | None) -> None:
    """Whether the compile uses combo kernels, and the chosen program's launches without and with
    them (``Report.combo_kernels``, ``Report.combo_launches``)."""
    counted = choice.measured.get(choice.name)
    if isinstance(counted, probe.Launches) and counted.combined is not None:
        report.combo_launches = {"without": counted.total, "with": counted.combined.total}
    if combo is not None or isinstance(counted, probe.Launches):  # else left for the backend
        report.combo_kernels = choice.combo if combo is None else combo
