"""PNG plots of a run: kernels and latency per model and mode (per phase, or per zoo setting), the
speedup over Inductor, optimizer time against e-graph size.

Plots are a convenience; without matplotlib the run still writes its rows and report.
"""

from __future__ import annotations

import logging
from pathlib import Path

from bench import report

log = logging.getLogger("eqsat.bench")


def _grouped_bars(plt, rows: list[dict], metric: str, ylabel: str, path: Path, log_scale: bool) -> None:
    values = {(r["model"], r["mode"]): r[metric] for r in rows if r["status"] == "ok" and r.get(metric)}
    models = list(dict.fromkeys(model for model, _ in values))
    modes = list(dict.fromkeys(mode for _, mode in values))
    width = 0.8 / max(len(modes), 1)
    fig, ax = plt.subplots(figsize=(max(6, 0.5 * len(models) * len(modes) + 2), 4))
    for i, mode in enumerate(modes):
        bars = [(m + i * width, values[(model, mode)]) for m, model in enumerate(models) if (model, mode) in values]
        ax.bar([x for x, _ in bars], [y for _, y in bars], width, label=mode)
    ax.set_xticks([m + width * (len(modes) - 1) / 2 for m in range(len(models))], models, rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    if log_scale and values:
        ax.set_yscale("log")
        ax.set_ylim(bottom=min(values.values()) / 2)  # bars start below the smallest, not at an arbitrary decade
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _optimizer_scatter(plt, rows: list[dict], path: Path) -> bool:
    """Optimizer seconds per graph against the FX graph's node count and the final e-graph size."""
    graphs = [(g, r["mode"]) for r in rows for g in r.get("graphs") or [] if g.get("optimizer_seconds")]
    if not graphs:
        return False
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, size_key, label in zip(axes, ("graph_nodes", "egraph_nodes"), ("FX graph nodes", "final e-graph nodes")):
        for mode in dict.fromkeys(m for _, m in graphs):
            points = [(g[size_key], g["optimizer_seconds"]) for g, m in graphs if m == mode and g.get(size_key)]
            ax.scatter([x for x, _ in points], [y for _, y in points], label=mode)
        ax.set_xlabel(label)
        ax.set_xscale("log")
        ax.set_yscale("log")
    axes[0].set_ylabel("optimizer seconds")
    axes[0].legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def write_plots(rows: list[dict], out_dir: Path, latency_key: str = "latency_ms") -> list[Path]:
    """Write the plots that have data; returns their paths (empty if matplotlib is missing)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log.warning("matplotlib is not installed: skipping plots")
        return []
    written = []
    for name in dict.fromkeys(map(report.group, rows)):  # a phase, or a zoo setting
        group_rows = [r for r in rows if report.group(r) == name]
        kernel_rows = [r for r in group_rows if r["mode"] != "eager"]
        if kernel_rows:
            path = out_dir / f"kernels_{name}.png"
            _grouped_bars(plt, kernel_rows, "kernels_total", "kernels (generated + extern)", path, log_scale=True)
            written.append(path)
        path = out_dir / f"latency_{name}.png"
        _grouped_bars(plt, group_rows, latency_key, "latency (ms)", path, log_scale=True)
        written.append(path)
    speedups = [{"model": model, "mode": f"{mode} ({name})", "status": "ok", "speedup": value}
                for (model, name, mode), value in report.speedups(rows, latency_key).items()]
    if any(r["speedup"] for r in speedups):
        path = out_dir / "speedup_vs_inductor.png"
        _grouped_bars(plt, speedups, "speedup", "speedup over Inductor compiled alike", path, log_scale=True)
        written.append(path)
    path = out_dir / "optimizer_time_vs_graph_size.png"
    if _optimizer_scatter(plt, rows, path):
        written.append(path)
    return written
