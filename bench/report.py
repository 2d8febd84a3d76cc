"""Markdown report: one table per phase, ratios against Inductor and Inductor+Optimus, geomean rows,
rows worse than Inductor flagged. The table, preamble and ratios are shared with ``bench.zoo_report``."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict

from bench import tables
from bench.modes import CUDAGRAPHS

BASELINES = ("inductor", "inductor_optimus")


def fmt(value, digits: int = 2) -> str:
    """A table cell: – for a missing value, a few significant digits for a small one."""
    if value is None:
        return "–"
    if isinstance(value, float):
        if math.isinf(value) or math.isnan(value):
            return str(value)
        return f"{value:.{digits}g}" if abs(value) < 1e-2 and value else f"{value:.{digits}f}"
    return str(value)


def _ratio(numerator, denominator) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v is not None and v > 0]
    return statistics.geometric_mean(values) if values else None


LATENCY_KEYS = {"median": "latency_ms", "min": "latency_min_ms"}


def _ratios(row: dict, by_mode: dict[str, dict], latency: str) -> dict[str, float | None]:
    """Kernel ratio (mode/baseline, lower is better) and speedup (baseline/mode, higher is better).
    A row with CUDA graphs (``MODE_cg``) or dynamic shapes (``MODE+dyn``) is compared with the
    baseline compiled the same way."""
    ratios = {}
    for base in BASELINES:
        ref = by_mode.get(base + _alike(row), {})
        ratios[f"kernels_vs_{base}"] = _ratio(row.get("kernels_total"), ref.get("kernels_total"))
        paired = _paired_speedups(row, ref) if latency == "latency_ms" and ref is not row else None
        ratios[f"speedup_vs_{base}"] = (statistics.median(paired) if paired
                                        else _ratio(ref.get(latency), row.get(latency)))
        ratios[f"speedup_range_vs_{base}"] = (min(paired), max(paired)) if paired else None
    return ratios


def _alike(row: dict) -> str:
    """The suffix of the baselines compiled like `row`: with CUDA graphs, with a dynamic batch."""
    cudagraphs = row["mode"].removesuffix("+dyn").endswith(CUDAGRAPHS)
    return (CUDAGRAPHS if cudagraphs else "") + ("+dyn" if row.get("shapes") == "dynamic" else "")


def _paired_speedups(row: dict, ref: dict) -> list[float] | None:
    """Baseline/mode latency round by round: both were timed within one round, so load that drifts
    over the run (the H200 host swings 1.7× between rounds) cancels; None without rounds."""
    a, b = row.get("latency_ms_runs"), ref.get("latency_ms_runs")
    if not a or not b or len(a) != len(b):
        return None
    return [base / mode for base, mode in zip(b, a)]


def _speedup_cell(ratios: dict, base: str) -> str:
    value, spread = ratios[f"speedup_vs_{base}"], ratios[f"speedup_range_vs_{base}"]
    return f"{fmt(value)} ({spread[0]:.2f}–{spread[1]:.2f})" if spread and value is not None else fmt(value)


COLUMNS = (
    "model", "mode", "kernels (gen+ext)", "×kernels vs ind", "×kernels vs opt", "latency ms", "speedup vs ind",
    "speedup vs opt", "compile s", "optimizer s", "e-graph nodes", "max err", "max grad err", "Inductor counter",
    "eqsat predicted", "worse than ind",
)

# Under every table: the three kernel columns count different things, and disagree on CPU (recsys_tower
# under eqsat, small, CPU: 10 launches, Inductor counter 137, predicted 13).
KERNEL_LEGEND = [
    "Kernel columns: **kernels (gen+ext)** is what one step launches, read from Inductor's wrapper code: "
    "generated kernels (one Triton kernel, or one fused C++ function on CPU) + extern calls (mm, bmm, fallbacks), "
    "forward and backward for training; the ×kernels ratios and the flags use it. "
    "**Inductor counter** is Inductor's own `generated_kernel_count` + extern calls: on GPU about the launches, "
    "on CPU every loop nest inside a fused C++ function (a stack of 32 weights copied in one function counts 32). "
    "**eqsat predicted** is eqsat's cost model's count for the graphs it handed Inductor, made before Inductor "
    "fuses: above the launches where Inductor fuses more than the model expects (several stacks into one function).",
]


def by_model(rows: list[dict]) -> dict[str, dict[str, dict]]:
    """model → mode → row, for the rows of one phase or setting."""
    by_model: dict[str, dict[str, dict]] = defaultdict(dict)
    for row in rows:
        by_model[row["model"]][row["mode"]] = row
    return by_model


def geomeans(rows: list[dict], modes: list[str], latency: str) -> dict[str, dict[str, float | None]]:
    """Per mode, the geomean over models of each ratio against the baselines (``_ratios``), and
    ``models``: how many ok rows went into it."""
    per_mode: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for by_mode in by_model(rows).values():
        for mode in modes:
            row = by_mode.get(mode)
            if row is None or row["status"] != "ok":
                continue
            for key, value in _ratios(row, by_mode, latency).items():
                if not key.startswith("speedup_range"):
                    per_mode[mode][key].append(value)
    return {mode: {"models": len(ratios["speedup_vs_inductor"]), **{k: geomean(v) for k, v in ratios.items()}}
            for mode, ratios in per_mode.items()}


def _predicted(row: dict) -> int | None:
    """eqsat's cost-model kernel count of what it handed Inductor: its Aten (post-grad) graphs when
    it saw them (forward and backward), else its Dynamo graphs."""
    graphs = row.get("graphs") or []
    chosen = [g for g in graphs if g.get("stage") == "post_grad"] or graphs
    values = [g["kernels_after"] for g in chosen if g.get("kernels_after")]
    return sum(values) if values else None


def worse_than_inductor(row: dict, by_mode: dict[str, dict], latency: str) -> str:
    """Why a row is worse than Inductor compiled alike ("" when it is not, or when it is a baseline):
    it failed where Inductor did not, it launches more, or it is slower, in every round when there
    were several (a slower median within the rounds' noise is not flagged)."""
    if is_baseline(row["mode"]) or row["status"] == "skipped":
        return ""
    if row["status"] != "ok":
        return row["status"] if by_mode.get("inductor" + _alike(row), {}).get("status") == "ok" else ""
    ratios = _ratios(row, by_mode, latency)
    reasons = []
    if (ratios["kernels_vs_inductor"] or 0) > 1:
        reasons.append("more launches")
    speedup, spread = ratios["speedup_vs_inductor"], ratios["speedup_range_vs_inductor"]
    if speedup is not None and (spread[1] if spread else speedup) < 1:
        reasons.append("slower")
    return ", ".join(reasons)


def is_baseline(mode: str) -> bool:
    """Eager or Inductor alone, with or without CUDA graphs or a dynamic batch: nothing to rate."""
    return mode.removesuffix("+dyn").removesuffix(CUDAGRAPHS) in ("eager", "inductor")


def table(rows: list[dict], modes: list[str], latency: str) -> list[str]:
    """One line per model and mode, one geomean line per mode, then the kernel columns' legend."""
    lines = []
    for model, by_mode in by_model(rows).items():
        for mode in modes:
            row = by_mode.get(mode)
            if row is not None:
                lines.append(_cells(model, mode, row, by_mode, latency))
    for mode, g in geomeans(rows, modes, latency).items():
        lines.append([
            "**geomean**", mode, "", fmt(g["kernels_vs_inductor"]), fmt(g["kernels_vs_inductor_optimus"]), "",
            fmt(g["speedup_vs_inductor"]), fmt(g["speedup_vs_inductor_optimus"]), *[""] * 8,
        ])
    return tables.table(COLUMNS, lines) + ["", *KERNEL_LEGEND]


def _cells(model: str, mode: str, row: dict, by_mode: dict[str, dict], latency: str) -> list[str]:
    flag = worse_than_inductor(row, by_mode, latency)
    flag = f"**{flag}**" if flag else ""
    if row["status"] != "ok":
        return [model, mode, f"{row['status']}: {row.get('reason', '')}", *[""] * (len(COLUMNS) - 4), flag]
    ratios = _ratios(row, by_mode, latency)
    kernels = (
        f"{row['kernels_total']} ({row['kernels_generated']}+{row['kernels_extern']})"
        if row.get("kernels_total") is not None else "–"
    )
    return [
        model, mode, kernels,
        fmt(ratios["kernels_vs_inductor"]), fmt(ratios["kernels_vs_inductor_optimus"]),
        _latency_cell(row, latency), _speedup_cell(ratios, "inductor"),
        _speedup_cell(ratios, "inductor_optimus"), fmt(row.get("compile_s"), 1),
        fmt(row.get("optimizer_s")), fmt(row.get("egraph_nodes")),
        fmt(row.get("max_abs_err"), 2), fmt(row.get("max_abs_err_grad"), 2),
        fmt(row.get("inductor_count_total")), fmt(_predicted(row)),
        flag,
    ]


def _latency_cell(row: dict, latency: str) -> str:
    """The latency, and with several rounds the noise: half the spread of the rounds' medians."""
    runs = row.get("latency_ms_runs")
    if latency != "latency_ms" or not runs or not row.get(latency):
        return fmt(row.get(latency), 3)
    return f"{row[latency]:.3f} ±{50 * (max(runs) - min(runs)) / row[latency]:.0f}%"


def preamble(meta: dict, latency_stat: str, title: str) -> list[str]:
    """The title, the run's metadata and how to read the table's columns."""
    return [
        f"# {title} — {meta['tag']}",
        "",
        f"torch {meta['torch']} · device {meta['device_name']} · size `{meta['size']}` · dtype {meta['dtype']}"
        f" · {meta.get('threads', '?')} CPU threads"
        + (f" · transformers {meta['transformers']}" if meta.get("transformers") else "")
        + (" · Inductor freezing on (inference compiles fold the parameters)" if meta.get("freezing") else ""),
        "",
        "Each table's kernel columns are explained under it. "
        f"×kernels is mode/baseline (lower is better); latency is the {latency_stat} per step "
        "(every mode of a model compiled, then timed in interleaved rounds; with several rounds, the median over "
        "them ± half their spread) and speedup is baseline latency/mode latency (higher is better; with several "
        "rounds, the median of the per-round ratios and their range). Compile times are cold (caches off, no "
        "other compile of the model reused) and include the first step. Rows `MODE+dyn` (`--dynamic`) compile "
        "with the batch dim marked dynamic, rows `MODE_cg` with CUDA graphs, and each is compared with the "
        "baselines compiled the same way. 'worse than ind' flags a row that failed where Inductor did not, "
        "launches more than Inductor, or is slower than it (in every round, with several).",
    ]


def render(rows: list[dict], meta: dict, latency_stat: str = "median") -> str:
    """The whole report.md text: run metadata, then one table per phase.

    `latency_stat` "min" suits a shared CPU, where the median absorbs other processes' load.
    """
    latency = LATENCY_KEYS[latency_stat]
    modes = list(dict.fromkeys(row["mode"] for row in rows))
    lines = preamble(meta, latency_stat, "eqsat benchmark")
    for phase in dict.fromkeys(row["phase"] for row in rows):
        lines += ["", f"## {'Inference' if phase == 'infer' else 'Training step'} ({phase})", ""]
        lines += table([r for r in rows if r["phase"] == phase], modes, latency)
    lines += skipped_graphs(rows)
    return "\n".join(lines) + "\n"


def group(row: dict) -> str:
    """What a row is tabled and plotted under: its zoo setting, else its phase."""
    return row.get("setting") or row["phase"]


def speedups(rows: list[dict], latency: str = "latency_ms") -> dict[tuple[str, str, str], float | None]:
    """(model, group, mode) → speedup over Inductor compiled alike, for every ok row that is not a
    baseline."""
    out = {}
    for name in dict.fromkeys(map(group, rows)):
        for model, by_mode in by_model([r for r in rows if group(r) == name]).items():
            for mode, row in by_mode.items():
                if row["status"] == "ok" and not is_baseline(mode):
                    out[(model, name, mode)] = _ratios(row, by_mode, latency)["speedup_vs_inductor"]
    return out


def skipped_graphs(rows: list[dict]) -> list[str]:
    """Graphs the optimizer handed to Inductor unchanged because it could not handle them."""
    notes = [
        f"- {r['model']} / {r['mode']} / {group(r)}: {g['skipped'].splitlines()[0][:160]}"
        for r in rows for g in r.get("graphs") or [] if g.get("skipped")
    ]
    return ["", "## Graphs the optimizer skipped", "", *notes] if notes else []
