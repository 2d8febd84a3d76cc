"""report.md of ``python -m bench zoo``: what each model was built from, the geomean speed-up over
Inductor of every setting side by side (with and without CUDA graphs), the rows worse than Inductor,
what eqsat's compile costs beside Inductor's (the measuring of ``eqsat_torch.inductor.verify`` above all), then
one table per setting (``report.table``)."""

from __future__ import annotations

import statistics
from collections import Counter

from bench import report, tables
from bench.modes import CUDAGRAPHS

SETTINGS = {  # name: (title, phase, Inductor freezing, mode suffix)
    "infer": ("Inference", "infer", False, ""),
    "train": ("Training step (forward + sum-loss backward)", "train", False, ""),
    "frozen": ("Inference with Inductor's freezing (parameters folded into constants)", "infer", True, ""),
    "cudagraphs": ("Inference with CUDA graphs (`triton.cudagraphs`, what mode=\"reduce-overhead\" sets)",
                   "infer", False, CUDAGRAPHS),
}


def unavailable(setting: str, device: str) -> str | None:
    """Why a setting cannot run on `device`, or None when it can."""
    if SETTINGS[setting][3] == CUDAGRAPHS and device != "cuda":
        return "CUDA graphs need a CUDA device (--device cuda)"
    return None


def render(rows: list[dict], meta: dict, latency_stat: str = "median") -> str:
    """The whole report.md text of a zoo run (rows carry their ``setting``)."""
    latency = report.LATENCY_KEYS[latency_stat]
    settings = [s for s in SETTINGS if any(r.get("setting") == s for r in rows)]
    lines = report.preamble(meta, latency_stat, "eqsat zoo") + _models(rows)
    summary, setting_tables, worse = [], [], []
    for setting in settings:
        setting_rows = [r for r in rows if r.get("setting") == setting]
        modes = list(dict.fromkeys(r["mode"] for r in setting_rows))
        flagged = _worse(setting_rows, latency)
        worse += [f"- {model} / {setting} / {mode}: {why}" for model, mode, why in flagged]
        for mode, g in report.geomeans(setting_rows, modes, latency).items():
            if not report.is_baseline(mode):
                count = sum(1 for _, m, _ in flagged if m == mode)
                summary.append([setting, mode, g["models"], report.fmt(g["kernels_vs_inductor"]),
                                report.fmt(g["speedup_vs_inductor"]), count])
        setting_tables += ["", f"## {SETTINGS[setting][0]} ({setting})", "",
                           *report.table(setting_rows, modes, latency)]
    lines += ["", "## Geomean over the models, against Inductor compiled the same way", "",
              *tables.table(("setting", "mode", "models", "×kernels vs ind", "speedup vs ind", "rows worse than ind"),
                            summary)]
    for name, why in (meta.get("skipped_settings") or {}).items():
        lines += ["", f"`{name}` was not run: {why}."]
    if worse:
        lines += ["", "## Rows worse than Inductor", "", *worse]
    lines += _compile_overhead(rows) + setting_tables + _cudagraph_notes(rows) + report.skipped_graphs(rows)
    return "\n".join(lines) + "\n"


def _models(rows: list[dict]) -> list[str]:
    """One line per model: the library, class and attention it was built with, and its size."""
    first = [next(iter(by_mode.values())) for by_mode in report.by_model(rows).values()]
    return ["", "## Models", "", *tables.table(("model", "built from", "parameters"), [
        (row["model"], row.get("source") or row.get("reason", "–"), _count(row.get("params"))) for row in first])]


def _count(n: int | None) -> str:
    if n is None:
        return "–"
    return f"{n / 1e6:.1f} M" if n >= 1e6 else f"{n / 1e3:.1f} k" if n >= 1e3 else str(n)


def _worse(rows: list[dict], latency: str) -> list[tuple[str, str, str]]:
    """(model, mode, why) of the rows of one setting that are worse than Inductor."""
    return [(model, mode, why) for model, by_mode in report.by_model(rows).items() for mode, row in by_mode.items()
            if (why := report.worse_than_inductor(row, by_mode, latency))]


COPIED = "cudagraph_recorded_non_static_inputs"  # Inductor's counter of the inputs copied at each replay


def _cudagraph_notes(rows: list[dict]) -> list[str]:
    """What makes a ``_cg`` row's latency more than replayed graphs: graphs Inductor ran without CUDA
    graphs (a CPU tensor, a mutated input, dynamic shapes), and inputs that cudagraph trees copy into
    the recorded graph at every replay (neither parameters nor buffers to them), where Inductor alone
    has fewer."""
    notes = [f"- {r['model']} / {r['mode']}: {_counter(r, 'cudagraph_skips')} graph(s) without CUDA graphs"
             for r in rows if _counter(r, "cudagraph_skips")]
    for model, by_mode in report.by_model([r for r in rows if r.get("setting") == "cudagraphs"]).items():
        alone = _counter(by_mode.get("inductor_cg"), COPIED)
        notes += [f"- {model} / {mode}: {_counter(row, COPIED)} inputs copied at every replay (Inductor alone: {alone})"
                  for mode, row in by_mode.items() if _counter(row, COPIED) > alone]
    return ["", "## CUDA graphs", "", *notes] if notes else []


def _counter(row: dict | None, key: str) -> int:
    return ((row or {}).get("counters") or {}).get(key, 0)


def _compile_overhead(rows: list[dict]) -> list[str]:
    """Per model and setting, each eqsat mode's compile beside Inductor alone's: the first call's
    seconds, the optimizer's own (without the measuring), the measuring (``verify``: Inductor's
    lowering of each candidate) and its share of Inductor alone's compile (issue 29: at most 50 % on
    the median model), how many programs were measured and which won, per graph."""
    table_rows = []
    shares = []
    for setting in dict.fromkeys(r.get("setting") for r in rows):
        for model, by_mode in report.by_model([r for r in rows if r.get("setting") == setting]).items():
            for mode, row in by_mode.items():
                if report.is_baseline(mode) or row.get("status") != "ok":
                    continue
                alone = (by_mode.get("inductor" + (CUDAGRAPHS if mode.endswith(CUDAGRAPHS) else "")) or {})
                verify = row.get("verify_s") or 0.0
                optimizer = row.get("optimizer_s")
                share = 100 * verify / alone["compile_s"] if alone.get("compile_s") else None
                if share is not None and row.get("candidates_measured"):
                    shares.append(share)
                winners = ", ".join(f"{w}×{n}" if n > 1 else w for w, n in Counter(row.get("winners") or ()).items())
                table_rows.append([
                    model, setting, mode, report.fmt(alone.get("compile_s")), report.fmt(row.get("compile_s")),
                    report.fmt(None if optimizer is None else optimizer - verify), report.fmt(verify),
                    report.fmt(share, 0), row.get("candidates_measured") or 0, winners or "–",
                ])
    if not table_rows:
        return []
    median = (f"Median over the rows that measured: verify is {statistics.median(shares):.0f} % of Inductor "
              "alone's compile." if shares else "No program was measured (only a compile for a GPU is, by default).")
    return ["", "## Compile time: eqsat beside Inductor alone", "",
            "Seconds of the first call (Dynamo, eqsat, Inductor); the optimizer's seconds without the "
            "measuring; verify: Inductor's lowering of each candidate program (`eqsat_torch.inductor.verify`); "
            "measured: programs counted, the input included; won: the candidate compiled, per graph.", "",
            *tables.table(("model", "setting", "mode", "Inductor alone s", "eqsat s", "optimizer s", "verify s",
                           "verify % of Inductor", "measured", "won"), table_rows), "", median]
