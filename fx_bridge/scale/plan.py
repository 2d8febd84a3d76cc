"""The plan of one graph: which parts the optimizer sees, and how their results are put back.

A graph of at most ``REGION_NODES`` nodes is one part. A larger one is cut (issue 30): its wide
split/cat clusters are parts first (``eqsat_torch.scale.clusters``), then what is left is one part
when it is small enough, else one part a window (``eqsat_torch.scale.regions``). ``Plan.parts``
yields the parts in order; whoever optimizes them sets each one's ``result`` before asking for the
next, and the plan splices it back (a unit's input may be an earlier unit's output, and what is left
is known only once the units are in). The plan never optimizes: ``eqsat_torch.pipeline`` does, the
same way for every part. Once the parts run out, ``Plan.gm`` is the assembled graph.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import torch

from eqsat.deadline import Deadline, OutOfTime
from eqsat_torch.inductor import compat
from eqsat_torch.options import Options
from eqsat_torch.report import Report, add_counts, merge
from eqsat_torch.scale import regions
from eqsat_torch.scale.clusters import Units
from eqsat_torch.scale.regions import REGION_NODES, windows

# Cutting a graph into regions (``split_module``) and inlining them back take about this long per node
# (this 2-core box: 3.5 s for the 16k nodes of an 8,192-piece split-cat); a budget that cannot pay for
# it optimizes the graph whole, where the clock stops lowering or building and the input is kept.
REGION_SECONDS_PER_NODE = 0.0003

# The note of a part that keeps its input when it fails or the clock stopped before it.
REGION_KEPT = "region kept its input"


@dataclass(frozen=True)
class Outputs:
    """Which output leaves are what (see ``pipeline.optimize``): the user's first, values copied back last."""

    user: int | None = None
    copied_back: int = 0
    region: bool = False  # a region's: they feed later regions, no output is a view the user sees

    @property
    def views_seen(self) -> int | None:
        """How many leaves a user sees the strides of (None: all): ``lowering.view_outputs_pinned``."""
        return 0 if self.region else self.user


@dataclass
class Part:
    """A graph the optimizer sees on its own. ``kept_note``: a failure keeps ``gm`` with a note
    starting so ("": the failure is the whole graph's); ``clock_first``: ``gm`` is kept when the
    clock has run out before it. ``result``: the optimized graph, set by whoever optimizes it."""

    gm: torch.fx.GraphModule
    inputs: Sequence[Any]
    outputs: Outputs
    report: Report
    kept_note: str = ""
    clock_first: bool = False
    result: torch.fx.GraphModule | None = field(default=None, repr=False)


def _region(sub: torch.fx.GraphModule, inputs: list[Any]) -> Part:
    return Part(sub, inputs, Outputs(region=True), Report(graph_nodes=len(sub.graph.nodes)), REGION_KEPT, clock_first=True)


class Plan:
    """The parts of ``gm`` (``parts``) and, once all are optimized, the assembled graph (``gm``);
    ``report`` (the graph's) gets the parts' reports merged in."""

    def __init__(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any], opts: Options, report: Report,
                 deadline: Deadline, outputs: Outputs):
        self.gm, self.example_inputs, self.opts = gm, example_inputs, opts
        self.report, self.deadline, self.outputs = report, deadline, outputs

    def parts(self) -> Iterator[Part]:
        n = len(self.gm.graph.nodes)
        if n > REGION_NODES and self.opts.search == "saturate" and not self.outputs.copied_back:
            yield from self._by_units()
        else:
            yield from self._whole(self.gm, self.report)

    def _whole(self, gm: torch.fx.GraphModule, report: Report, kept_note: str = "") -> Iterator[Part]:
        part = Part(gm, self.example_inputs, self.outputs, report, kept_note)
        yield part
        self.gm = part.result

    def _by_units(self) -> Iterator[Part]:
        """Wide split/cat clusters as units, then what is left whole when it is small enough, else
        window by window. Every unit, window or part keeps its result as it finishes."""
        gm, report, deadline = self.gm, self.report, self.deadline
        t0 = time.perf_counter()
        units: list[Report] = []
        try:
            if not deadline.affords("units", len(gm.graph.nodes)):  # cutting and splicing cannot stop
                raise OutOfTime(deadline.why_not("units", len(gm.graph.nodes)))
            cut = Units(gm)
            for unit, key in cut.each():
                if key not in cut.done:
                    part = _region(unit.module(gm), [compat.node_value(a) for a in unit.inputs])
                    yield part
                    cut.keep(key, part.gm, part.result)
                    units.append(part.report)
                cut.use(unit, key)
            gm, replaced = cut.assembled(), cut.replaced
        except Exception as e:  # e.g. a size Dynamo left symbolic: the windows below still run
            report.notes.append(e.args[0] if isinstance(e, OutOfTime) else f"no split/cat units: {type(e).__name__}: {e}")
            units, replaced = [], 0
        merge(report, units)
        inside = sum(sum(r.phase_seconds.values()) for r in units)  # "units": cutting and splicing them
        add_counts(report.phase_seconds, {"units": time.perf_counter() - t0 - inside})
        if replaced:
            report.notes.append(f"{replaced} split/cat clusters optimized as units ({len(units)} structures); "
                                f"{len(gm.graph.nodes)} nodes left")
        self.gm = gm
        if deadline.out_of_time("regions"):  # lowering 15k nodes alone took 13 s on a loaded box
            report.notes.append("the rest of the graph kept as it is: the time budget ran out before it")
            return
        if len(gm.graph.nodes) <= REGION_NODES:
            rest = Report(graph_nodes=len(gm.graph.nodes))  # a failure keeps the clusters' results, if any
            yield from self._whole(gm, rest, "the graph after its clusters kept as it is" if report.changed else "")
            merge(report, [rest])
            report.stop_reason = rest.stop_reason or report.stop_reason
            return
        fits = deadline.left() > REGION_SECONDS_PER_NODE * len(gm.graph.nodes)  # before windows: it cannot stop
        part = windows(gm, REGION_NODES) if fits else {}
        if (fits and len(set(part.values())) > 1
                and not any(n.op == "get_attr" for n in gm.graph.nodes)):  # inlined attributes get new names
            yield from self._by_regions(gm, part)
        elif not report.changed and len(gm.graph.nodes) <= self.opts.max_graph_nodes:
            yield from self._whole(gm, report)
        elif not report.changed:
            report.notes.append(f"kept the input program: no unit or region finished, and {len(gm.graph.nodes)} "
                                f"nodes > max_graph_nodes={self.opts.max_graph_nodes} cannot be built at once")

    def _by_regions(self, gm: torch.fx.GraphModule, part: dict) -> Iterator[Part]:
        """Window by window (``eqsat_torch.scale.regions``): each window keeps its result, a window
        that fails or that the clock stops keeps its input."""
        top = regions.cut(gm, part)
        done: list[Report] = []
        for name, sub, inputs in regions.pieces(top):
            window = _region(sub, inputs)
            yield window
            done.append(window.report)
            if window.result is not sub:
                setattr(top, name, window.result)
        new_gm = regions.inline(top)
        report = self.report
        merge(report, done)
        report.stop_reason = "; ".join(dict.fromkeys(r.stop_reason for r in done if r.stop_reason))
        report.notes.append(f"optimized as {len(done)} regions of at most {REGION_NODES} nodes each, "
                            f"{sum(r.changed for r in done)} changed")
        self.gm = new_gm if report.changed or self.opts.always_raise else gm
