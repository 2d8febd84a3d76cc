"""PNG plots of a run: kernels and latency per model and mode, optimizer time against e-graph size.

Plots are a convenience; without matplotlib the run still writes its rows and report.
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger("eqsat.bench")


def _grouped_bars(plt, rows: list[dict], metric: str, ylabel: str, path: Path, log_scale: bool) -> None:
    models = list(dict.fromkeys(r["model"] for r in rows))
    modes = list(dict.fromkeys(r["mode"] for r in rows))
    values = {(r["model"], r["mode"]): r.get(metric) for r in rows if r["status"] == "ok"}
    width = 0.8 / max(len(modes), 1)
    fig, ax = plt.subplots(figsize=(max(6, 0.5 * len(models) * len(modes) + 2), 4))
    for i, mode in enumerate(modes):
        xs = [m + i * width for m in range(len(models))]
        ys = [values.get((model, mode)) or 0 for model in models]
        ax.bar(xs, ys, width, label=mode)
    ax.set_xticks([m + width * (len(modes) - 1) / 2 for m in range(len(models))], models, rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    if log_scale:
        ax.set_yscale("log")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _optimizer_scatter(plt, rows: list[dict], path: Path) -> bool:
    points = [
        (g["egraph_nodes"], g["optimizer_seconds"], r["mode"])
        for r in rows for g in r.get("graphs") or []
        if g.get("egraph_nodes") is not None and g.get("optimizer_seconds") is not None
    ]
    if not points:
        return False
    fig, ax = plt.subplots(figsize=(6, 4))
    for mode in dict.fromkeys(p[2] for p in points):
        ax.scatter([p[0] for p in points if p[2] == mode], [p[1] for p in points if p[2] == mode], label=mode)
    ax.set_xlabel("final e-graph nodes")
    ax.set_ylabel("optimizer seconds")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def write_plots(rows: list[dict], out_dir: Path) -> list[Path]:
    """Write the plots that have data; returns their paths (empty if matplotlib is missing)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log.warning("matplotlib is not installed: skipping plots")
        return []
    written = []
    for phase in dict.fromkeys(r["phase"] for r in rows):
        phase_rows = [r for r in rows if r["phase"] == phase]
        kernel_rows = [r for r in phase_rows if r["mode"] != "eager"]
        if kernel_rows:
            path = out_dir / f"kernels_{phase}.png"
            _grouped_bars(plt, kernel_rows, "kernels_total", "kernels (generated + extern)", path, log_scale=True)
            written.append(path)
        path = out_dir / f"latency_{phase}.png"
        _grouped_bars(plt, phase_rows, "latency_ms", "latency (ms)", path, log_scale=True)
        written.append(path)
    path = out_dir / "optimizer_time_vs_egraph_size.png"
    if _optimizer_scatter(plt, rows, path):
        written.append(path)
    return written
