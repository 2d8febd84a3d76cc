"""What the optimizer did to one graph: the report users read and the harness tabulates."""
from __future__ import annotations

import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping


@dataclass
class Report:
    graph_nodes: int = 0
    changed: bool = False
    skipped: str = ""                       # why the graph was left alone ("" when optimized)
    rules_fired: dict[str, int] = field(default_factory=dict)
    rules_used: dict[str, int] = field(default_factory=dict)  # fired rules the chosen program relies on
    egraph_sizes: list[int] = field(default_factory=list)   # after build, then per iteration
    stop_reason: str = ""                    # why saturation stopped; "time budget (<phase>)" when
                                             # seconds= ran out (the phase: lower, build, analysis,
                                             # saturate or extract)
    peak_rss_mb: float = 0.0                 # peak resident memory of the process after optimizing
    phase_seconds: dict[str, float] = field(default_factory=dict)
    budget_seconds: float = 0.0              # what this graph could spend: seconds= less earlier passes' use
    extractor: str = ""                      # "input" (nothing cheaper), bottom_up, ilp, batched, local (fusion search)
    ilp_status: str = ""
    ilp_gap: float | None = None             # relative optimality gap when the ILP hit its time limit
    cost_before: float = 0.0
    cost_after: float = 0.0
    kernels_before: int = 0                  # predicted by the cost model
    kernels_after: int = 0
    validated: str = ""                      # "", "ok…", "not run: …", or the mismatch that caused a fallback
    fallback: str = ""                       # why the original graph was kept: "skipped", "your rule/option",
                                             # "validation mismatch" or "internal error" ("" when optimized)
    alias_copies: int = 0                    # outputs copied so they alias as in eager (priced in cost_after)
    inductor_launches: dict[str, Any] = field(default_factory=dict)  # verify: Inductor's count per candidate
    #                                          ("input", "optimized", the programs between: "no <family>",
    #                                          "put back <k>: <rules>"), or why it was not counted
    inductor_winner: str = ""                # the candidate Inductor's count chose ("" when none was measured)
    combo_kernels: bool | None = None        # Inductor's combo kernels in this graph's compile: chosen by
    #                                          Inductor's count, or the user's setting (None: not known)
    combo_launches: dict[str, int] = field(default_factory=dict)  # the program handed on: Inductor's
    #                                          launches "without" and "with" combo kernels
    notes: list[str] = field(default_factory=list)  # decisions worth knowing (kept input: why)
    context_disabled: dict[str, str] = field(default_factory=dict)  # rules the compile's context switched
    #                                          off (eqsat_torch.safety.context) → why
    refused: str = ""                        # why the equivalence check (eqsat_torch.safety.equivalence) refused the
    #                                          rewritten graph and kept the input ("" when it passed or did not run)
    cache: str = ""                          # "hit" (from the persistent cache), "miss" (computed, stored)
    #                                          or "off" (eqsat_torch.cache); "" when the cache was not asked

    @property
    def egraph_nodes(self) -> int:
        return self.egraph_sizes[-1] if self.egraph_sizes else 0

    @property
    def optimizer_seconds(self) -> float:
        return sum(self.phase_seconds.values())

    def to_dict(self) -> dict:
        d = asdict(self)
        d["egraph_nodes"] = self.egraph_nodes
        d["optimizer_seconds"] = self.optimizer_seconds
        return d

    def summary(self, stage: str = "") -> str:
        """One short line (the INFO log line): what happened to the graph, the numbers before → after,
        how many rules the chosen program uses, the optimizer's time; why the graph was kept, if it was."""
        head = f"eqsat {stage}:" if stage else "eqsat:"
        tail = f", {self.optimizer_seconds:.2f} s" + (f", cache {self.cache}" if self.cache else "")
        if self.skipped or self.fallback:
            why = self.skipped or self.fallback
            room = max(SUMMARY_CHARS - len(head) - len(tail) - 40, 20)
            why = why if len(why) <= room else why[:room - 1] + "…"
            return f"{head} {self.graph_nodes} nodes kept as they were ({why}){tail}"
        return (f"{head} {self.graph_nodes} nodes, kernels {self.kernels_before}→{self.kernels_after}, "
                f"cost {self.cost_before:.4g}→{self.cost_after:.4g}, {len(self.rules_used)} rules used, "
                f"{'changed' if self.changed else 'unchanged'}{tail}")

    def details(self) -> str:
        """The rest, one topic a line (the DEBUG log lines; the trace's report artifact has every field)."""
        fired = ", ".join(f"{k}×{v}" for k, v in sorted(self.rules_fired.items())) or "none"
        used = ", ".join(f"{k}×{v}" for k, v in sorted(self.rules_used.items())) or "none"
        gap = f", gap {self.ilp_gap:.3g}" if self.ilp_gap is not None else ""
        lines = [f"e-graph sizes {self.egraph_sizes} ({self.stop_reason or 'not built'})",
                 f"rules fired: {fired}", f"rules used: {used}",
                 f"extractor {self.extractor or '-'}" + (f", ILP {self.ilp_status}{gap}" if self.ilp_status else ""),
                 "phases: " + (", ".join(f"{k} {v * 1000:.0f} ms" for k, v in self.phase_seconds.items()) or "none")
                 + f" (budget {self.budget_seconds:.3g} s, peak RSS {self.peak_rss_mb:.0f} MB)"]
        if self.inductor_launches:
            counted = ", ".join(f"{k} {v}" for k, v in self.inductor_launches.items())
            lines.append(f"Inductor counts {counted}" + (f" → {self.inductor_winner}" if self.inductor_winner else ""))
        if self.alias_copies:
            lines.append(f"alias copies {self.alias_copies}")
        if self.validated:
            lines.append(f"validated: {self.validated}")
        if self.refused:
            lines.append(f"refused: {self.refused}")
        if self.context_disabled:
            lines.append(f"off in this context: {', '.join(sorted(self.context_disabled))}")
        if self.combo_launches:
            lines.append(f"combo kernels {'on' if self.combo_kernels else 'off'} ({self.combo_launches['without']} "
                         f"launches without, {self.combo_launches['with']} with)")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


SUMMARY_CHARS = 160  # the INFO line's length the summary aims at


def add_counts(into: dict, more: Mapping) -> None:
    """``into[k] += more[k]`` for every key (report fields stay plain dicts)."""
    total = Counter(into)
    total.update(more)
    into.update(total)


@contextmanager
def timed(report: Report, phase: str):
    """The time spent inside, added to ``report.phase_seconds[phase]``."""
    t0 = time.perf_counter()
    try:
        yield
    finally:
        add_counts(report.phase_seconds, {phase: time.perf_counter() - t0})


def merge(report: Report, parts: Iterable[Report]) -> None:
    """The parts' (units', regions') counts, sizes, costs and notes added into ``report``; each part
    Inductor decided on its own keeps its counts under its index (``k/input``…)."""
    parts = list(parts)
    for r in parts:
        for into, more in ((report.rules_fired, r.rules_fired), (report.rules_used, r.rules_used),
                           (report.phase_seconds, r.phase_seconds)):
            add_counts(into, more)
        report.egraph_sizes.extend(r.egraph_sizes)
        report.changed |= r.changed
        report.cost_before += r.cost_before
        report.cost_after += r.cost_after
        report.kernels_before += r.kernels_before
        report.kernels_after += r.kernels_after
        report.alias_copies += r.alias_copies
        report.notes.extend(r.notes)
    measured = [r for r in parts if r.inductor_launches]
    before = len(report.inductor_winner.split(", ")) if report.inductor_winner else 0
    for k, r in enumerate(measured, before):
        prefix = f"{k}/" if len(measured) + before > 1 else ""
        report.inductor_launches.update({prefix + name: v for name, v in r.inductor_launches.items()})
    report.inductor_winner = ", ".join(w for w in (report.inductor_winner, *(r.inductor_winner for r in measured)) if w)
