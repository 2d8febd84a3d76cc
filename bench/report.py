"""Markdown report: one table per phase, ratios against Inductor and Inductor+Optimus, geomean rows."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict

BASELINES = ("inductor", "inductor_optimus")


def _fmt(value, digits: int = 2) -> str:
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
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


LATENCY_KEYS = {"median": "latency_ms", "min": "latency_min_ms"}


def _ratios(row: dict, by_mode: dict[str, dict], latency: str) -> dict[str, float | None]:
    """Kernel ratio (mode/baseline, lower is better) and speedup (baseline/mode, higher is better).
    A dynamic-shapes row (``MODE+dyn``) is compared with the baseline compiled dynamically too."""
    ratios = {}
    suffix = "+dyn" if row.get("shapes") == "dynamic" else ""
    for base in BASELINES:
        ref = by_mode.get(base + suffix, {})
        ratios[f"kernels_vs_{base}"] = _ratio(row.get("kernels_total"), ref.get("kernels_total"))
        paired = _paired_speedups(row, ref) if latency == "latency_ms" and ref is not row else None
        ratios[f"speedup_vs_{base}"] = (statistics.median(paired) if paired
                                        else _ratio(ref.get(latency), row.get(latency)))
        ratios[f"speedup_range_vs_{base}"] = (min(paired), max(paired)) if paired else None
    return ratios


def _paired_speedups(row: dict, ref: dict) -> list[float] | None:
    """Baseline/mode latency round by round: both were timed within one round, so load that drifts
    over the run (the H200 host swings 1.7× between rounds) cancels; None without rounds."""
    a, b = row.get("latency_ms_runs"), ref.get("latency_ms_runs")
    if not a or not b or len(a) != len(b):
        return None
    return [base / mode for base, mode in zip(b, a)]


def _speedup_cell(ratios: dict, base: str) -> str:
    value, spread = ratios[f"speedup_vs_{base}"], ratios[f"speedup_range_vs_{base}"]
    return f"{_fmt(value)} ({spread[0]:.2f}–{spread[1]:.2f})" if spread and value is not None else _fmt(value)


HEADER = (
    "| model | mode | kernels (gen+ext) | ×kernels vs ind | ×kernels vs opt | latency ms | speedup vs ind "
    "| speedup vs opt | compile s | optimizer s | e-graph nodes | max err | max grad err | Inductor counter |"
)


def _table(rows: list[dict], modes: list[str], latency: str) -> list[str]:
    lines = [HEADER, "|" + "---|" * (HEADER.count("|") - 1)]
    per_mode_ratios: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    by_model: dict[str, dict[str, dict]] = defaultdict(dict)
    for row in rows:
        by_model[row["model"]][row["mode"]] = row
    for model, by_mode in by_model.items():
        for mode in modes:
            row = by_mode.get(mode)
            if row is None:
                continue
            if row["status"] != "ok":
                lines.append(f"| {model} | {mode} | {row['status']}: {row.get('reason', '')} |" + " |" * 11)
                continue
            ratios = _ratios(row, by_mode, latency)
            for key, value in ratios.items():
                if not key.startswith("speedup_range"):
                    per_mode_ratios[mode][key].append(value)
            kernels = (
                f"{row['kernels_total']} ({row['kernels_generated']}+{row['kernels_extern']})"
                if row.get("kernels_total") is not None else "–"
            )
            cells = [
                model, mode, kernels,
                _fmt(ratios["kernels_vs_inductor"]), _fmt(ratios["kernels_vs_inductor_optimus"]),
                _latency_cell(row, latency), _speedup_cell(ratios, "inductor"),
                _speedup_cell(ratios, "inductor_optimus"), _fmt(row.get("compile_s"), 1),
                _fmt(row.get("optimizer_s")), _fmt(row.get("egraph_nodes")),
                _fmt(row.get("max_abs_err"), 2), _fmt(row.get("max_abs_err_grad"), 2),
                _fmt(row.get("inductor_count_total")),
            ]
            lines.append("| " + " | ".join(cells) + " |")
    for mode in modes:
        ratios = per_mode_ratios.get(mode)
        if not ratios:
            continue
        g = {key: geomean(values) for key, values in ratios.items()}
        cells = [
            "**geomean**", mode, "", _fmt(g["kernels_vs_inductor"]), _fmt(g["kernels_vs_inductor_optimus"]), "",
            _fmt(g["speedup_vs_inductor"]), _fmt(g["speedup_vs_inductor_optimus"]), "", "", "", "", "", "",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _latency_cell(row: dict, latency: str) -> str:
    """The latency, and with several rounds the noise: half the spread of the rounds' medians."""
    runs = row.get("latency_ms_runs")
    if latency != "latency_ms" or not runs or not row.get(latency):
        return _fmt(row.get(latency), 3)
    return f"{row[latency]:.3f} ±{50 * (max(runs) - min(runs)) / row[latency]:.0f}%"


def render(rows: list[dict], meta: dict, latency_stat: str = "median") -> str:
    """The whole report.md text: run metadata, then one table per phase.

    `latency_stat` "min" suits a shared CPU, where the median absorbs other processes' load.
    """
    latency = LATENCY_KEYS[latency_stat]
    modes = list(dict.fromkeys(row["mode"] for row in rows))
    lines = [
        f"# eqsat benchmark — {meta['tag']}",
        "",
        f"torch {meta['torch']} · device {meta['device_name']} · size `{meta['size']}` · dtype {meta['dtype']}"
        f" · {meta.get('threads', '?')} CPU threads"
        + (" · Inductor freezing on (inference compiles fold the parameters)" if meta.get("freezing") else ""),
        "",
        "Kernels are the launches in Inductor's wrapper code: generated kernels (Triton kernels, or fused C++ "
        "functions on CPU) plus extern calls (mm, bmm, fallbacks), forward and backward for training. "
        "'Inductor counter' is generated_kernel_count + extern calls; on CPU it counts every loop nest inside a "
        "fused C++ function (less the nests of abandoned outer-loop fusion attempts, which it counts twice)."
        f" ×kernels is mode/baseline (lower is better); latency is the {latency_stat} per step "
        "(every mode of a model compiled, then timed in interleaved rounds; with several rounds, the median over "
        "them ± half their spread) and speedup is baseline latency/mode latency (higher is better; with several "
        "rounds, the median of the per-round ratios and their range). Compile times are cold (caches off, no "
        "other compile of the model reused) and include the first step. Rows `MODE+dyn` (`--dynamic`) compile "
        "with the batch dim marked dynamic and are compared with the baselines compiled the same way.",
    ]
    for phase in dict.fromkeys(row["phase"] for row in rows):
        lines += ["", f"## {'Inference' if phase == 'infer' else 'Training step'} ({phase})", ""]
        lines += _table([r for r in rows if r["phase"] == phase], modes, latency)
    lines += _skipped_graphs(rows)
    return "\n".join(lines) + "\n"


def _skipped_graphs(rows: list[dict]) -> list[str]:
    """Graphs the optimizer handed to Inductor unchanged because it could not handle them."""
    notes = [
        f"- {r['model']} / {r['mode']} / {r['phase']}: {g['skipped'].splitlines()[0][:160]}"
        for r in rows for g in r.get("graphs") or [] if g.get("skipped")
    ]
    return ["", "## Graphs the optimizer skipped", "", *notes] if notes else []
