"""Which CPU count predicts CPU latency (issue 42): C++ kernel calls, loop nests, or bytes.

On the CPU eqsat's programs and Inductor's disagree by count (Gemma-2: fewer C++ kernel calls, more
loop nests). For each zoo model and phase this compiles Inductor and eqsat (kept side by side), records
each program's C++ kernel calls (``cpp_fused_*`` calls in the wrapper), loop nests (Inductor's
``generated_kernel_count``), extern calls and bytes (Inductor's ``count_bytes`` estimate), and times
both in interleaved rounds (``bench.runner.paired_latency``). Then, per count, how often the sign of
eqsat − Inductor in the count agrees with the sign in latency, over the rows where latency differs
by more than its own spread of rounds, and the correlation of the count's ratio with latency's.
Run it on a quiet machine (the numbers are noise under load):

    python -m bench.scripts.cpu_predictor OUT [--models gemma2,qwen3_moe,...] [--rounds 7] [--threads N]

Writes ``OUT/cpu_predictor.json`` (every row) and prints the table and the verdict.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

import torch
from torch._inductor import metrics

from bench import runner
from bench.models import ZOO
from eqsat_torch.inductor import compat

MODES = ("inductor", "eqsat")
COUNTS = ("cpp_calls", "loop_nests", "extern", "bytes")
DEFAULT_MODELS = ("gemma2", "qwen3_moe", "gpt_neox", "opt", "llama", "t5", "gpt2", "bert", "recsys_tower",
                  "split_cat_two_stage")


def measure(model: str, phase: str, size: str, rounds: int) -> list[dict]:
    """Both modes of one model and phase: counts, and latency from interleaved rounds."""
    settings = {"size": size, "device": "cpu", "dtype": torch.float32, "min_seconds": 0.5, "rounds": rounds,
                "keep_compiled": True}
    reference = runner.eager_reference(ZOO[model], phase, settings)
    compat.reset_dynamo()
    compiled = []
    for mode in MODES:
        with compat.inductor_counts_bytes():
            row, _, step = runner.run_mode(ZOO[model], mode, phase, reference, settings)
            row["bytes"] = int(metrics.num_bytes_accessed)
        row.update(model=model, cpp_calls=row.get("kernels_generated"), loop_nests=row.get("inductor_count_generated"),
                   extern=row.get("kernels_extern"))
        compiled.append((row, step))
    runs = runner.paired_latency({r["mode"]: s for r, s in compiled if s is not None}, "cpu", rounds, 0.5)
    for row, _ in compiled:
        if row["mode"] in runs:
            row.update(runner.latency_summary(runs[row["mode"]]))
        row.pop("graphs", None)
    return [row for row, _ in compiled]


def verdict(pairs: list[tuple[dict, dict]]) -> dict[str, dict]:
    """Per count: sign agreement with latency on the rows latency separates, and the correlation of
    log(count ratio) with log(latency ratio)."""
    out = {}
    for count in COUNTS:
        agree = total = 0
        xs, ys = [], []
        for ind, eq in pairs:
            if not (ind.get(count) and eq.get(count) and ind.get("latency_ms") and eq.get("latency_ms")):
                continue
            xs.append(math.log(eq[count] / ind[count]))
            ys.append(math.log(eq["latency_ms"] / ind["latency_ms"]))
            if _separated(ind, eq) and eq[count] != ind[count]:
                total += 1
                agree += (eq[count] < ind[count]) == (eq["latency_ms"] < ind["latency_ms"])
        corr = statistics.correlation(xs, ys) if len(xs) > 2 and len(set(xs)) > 1 and len(set(ys)) > 1 else None
        out[count] = {"sign_agrees": agree, "rows_separated": total, "correlation": corr}
    return out


def _separated(a: dict, b: dict) -> bool:
    """The two latencies' ranges of rounds do not overlap."""
    ra, rb = a.get("latency_ms_runs") or [a["latency_ms"]], b.get("latency_ms_runs") or [b["latency_ms"]]
    return max(ra) < min(rb) or max(rb) < min(ra)


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", type=Path)
    p.add_argument("--models", default=",".join(DEFAULT_MODELS))
    p.add_argument("--phases", default="infer,train")
    p.add_argument("--size", default="small")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    rows, pairs = [], []
    print("| model | phase | mode | C++ calls | loop nests | extern | MB | latency ms (rounds) |")
    print("|---|---|---|---|---|---|---|---|")
    for model in args.models.split(","):
        for phase in args.phases.split(","):
            try:
                got = measure(model, phase, args.size, args.rounds)
            except ModuleNotFoundError as e:
                print(f"skipped {model}: {e}", file=sys.stderr)
                break
            rows += got
            by_mode = {r["mode"]: r for r in got}
            if all(m in by_mode and by_mode[m].get("status") == "ok" for m in MODES):
                pairs.append((by_mode["inductor"], by_mode["eqsat"]))
            for r in got:
                runs = ", ".join(f"{v:.3g}" for v in r.get("latency_ms_runs", []))
                print(f"| {model} | {phase} | {r['mode']} | {r.get('cpp_calls')} | {r.get('loop_nests')} | "
                      f"{r.get('extern')} | {r.get('bytes', 0) / 1e6:.2f} | {r.get('latency_ms', float('nan')):.3g} "
                      f"({runs}) |", flush=True)
    result = {"rows": rows, "verdict": verdict(pairs), "threads": torch.get_num_threads()}
    (args.out / "cpu_predictor.json").write_text(json.dumps(result, indent=1, default=str))
    for count, v in result["verdict"].items():
        corr = "–" if v["correlation"] is None else f"{v['correlation']:.2f}"
        print(f"{count}: sign agrees with latency on {v['sign_agrees']}/{v['rows_separated']} separated rows; "
              f"correlation of log ratios {corr}")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
