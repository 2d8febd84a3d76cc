"""Compose with Inductor's combo kernels: turned on for a GPU compile where Inductor counts fewer
launches with them (issue 42), the user's own setting always kept.

Combo kernels (``torch._inductor.config.combo_kernels``, off by default) group independent pointwise
and reduction kernels, up to ``combo_kernel_max_num_nodes`` (8), into one launch at code generation;
extern kernels (matmuls) never join. They do what eqsat does not (merging pointwise work it left
apart) and eqsat what they cannot (batching matmuls, split/cat algebra), so the backend decides them
per Dynamo graph with the program: Inductor's own count (``eqsat_torch.inductor.verify``) of the candidates
with and without them. A graph eqsat leaves as it is is counted here, once, both ways.

Only GPU compiles: Inductor's grouping skips CPU nodes (``_default_group_nodes_for_combo_kernels``),
so on the CPU the setting changes nothing and is left alone.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import torch

from eqsat.budget import price
from eqsat.deadline import Allowance
from eqsat_torch.inductor import compat
from eqsat_torch.options import Options, device_of
from eqsat_torch.report import Report

DECIDE = "decide"


def setting(opts: Options, inductor: dict, example_inputs: Sequence[Any]) -> bool | str:
    """The compile's combo kernels: the user's (``options={"combo_kernels": ...}``, or
    ``torch._inductor.config`` changed from its default), else ``DECIDE`` on a compile Inductor
    decides (a GPU one, or ``verify=True`` with the GPU cost model), else Inductor's config as it is.
    A ``config.patch(combo_kernels=False)`` is the default to us (``compat.inductor_config_changed``
    says why): ``options={"combo_kernels": False}`` keeps them off."""
    if "combo_kernels" in inductor:
        return bool(inductor["combo_kernels"])
    current = bool(compat.inductor_config_value("combo_kernels"))
    if compat.inductor_config_changed("combo_kernels") or not _decides(opts, example_inputs):
        return current
    return DECIDE


def _decides(opts: Options, example_inputs: Sequence[Any]) -> bool:
    """Inductor decides this compile's programs on a GPU (``decide.probe_device``), and compiles them."""
    from eqsat.cost import CostModel

    from eqsat_torch.inductor import decide

    cost = opts.cost or CostModel.for_device(device_of(example_inputs))
    return opts.inner == "inductor" and decide.probe_device(dataclasses.replace(opts, cost=cost),
                                                            example_inputs) == "cuda"


def decide_unmeasured(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], report: Report,
                      combo: bool | str, frozen: bool, allowance: Allowance | None = None) -> Report:
    """Where Inductor did not decide with the program (eqsat kept the graph, or did not measure),
    count ``gm`` with and without combo kernels and record the choice: on when fewer launches
    (``Report.combo_kernels``). A graph the probe cannot lower keeps them off, and so does one whose
    count (priced per node, ``eqsat.budget``) does not fit the time ``allowance`` has left."""
    from eqsat_torch.inductor import probe
    from eqsat_torch.inductor.launches import ProbeError

    if combo != DECIDE or report.combo_kernels is not None:
        return report
    n = len(gm.graph.nodes)
    why = allowance.short_of(price("probe", n)) if allowance is not None else None
    if why is not None:
        report.combo_kernels = False
        report.notes.append(f"combo kernels off: Inductor's count of {n} nodes is {why}")
        return report
    try:
        counted = probe.count_launches(gm, example_inputs, "cuda", "torch", frozen, combo=True)
    except ProbeError as e:
        report.combo_kernels = False
        report.notes.append(f"combo kernels off: Inductor's count failed ({e})")
        return report
    combined = counted.combined
    report.combo_kernels = combined is not None and combined.key < counted.key
    if combined is not None:
        report.combo_launches = {"without": counted.total, "with": combined.total}
    report.notes.append(f"combo kernels {'on' if report.combo_kernels else 'off'}: "
                        f"{counted.total} launches without, {combined.total if combined else '?'} with")
    return report


def inductor_options(report: Report, inductor: dict, combo: bool | str) -> dict:
    """The inner Inductor's options with the decision applied (only where it was ours to make). It
    is set either way, so the patch that carries it undoes the post-grad pass's setting for each Aten
    graph (``decide_in_compile``) when that graph's compile ends."""
    if combo == DECIDE:
        return {**inductor, "combo_kernels": bool(report.combo_kernels)}
    return inductor


def decide_in_compile(report: Report) -> None:
    """Inside one Aten graph's compile (the post-grad pass, forward or backward): Inductor's count of
    the program that goes on decided combo kernels for this graph (``Report.combo_kernels``), so its
    code generation uses that, not the decision made from the Dynamo graph (a training step's
    backward has other kernels than the forward it was decided from). Undecided: left as it is."""
    if report.combo_kernels is not None:
        compat.set_inductor_config_in_compile("combo_kernels", report.combo_kernels)
