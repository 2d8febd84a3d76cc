"""Warm starts: what a second process pays to compile the same model (issue 32 asks for an optimizer
time ≤ 10 % of the first process's and a whole compile ≤ 1.2× Inductor alone's warm compile).

Each model is compiled by fresh child processes sharing one new ``TORCHINDUCTOR_CACHE_DIR`` per
compiler: eqsat cold then warm, Inductor alone cold then warm. A child times its first call
(from ``torch.compile`` to the first output, imports of the backend and Inductor included; outputs
checked against eager) and sums the optimizer time of every report
(Dynamo graphs and Aten graphs). Not a test: prints a table.

    python -m bench.scripts.warm_start --device cpu
    python -m bench.scripts.warm_start --device cuda --models split_cat_256 recsys_tower
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import torch

from bench.measure import sync
from bench.models import REGISTRY
from bench.models.split_cat import SplitCat64, _build_64


class SplitCat256(SplitCat64):
    """SplitCat64 with 256 pieces: a Dynamo graph of ~1,000 nodes."""

    pieces = 256


MODELS = {"split_cat_256": _build_64(SplitCat256), **REGISTRY}
DEFAULT_MODELS = ("split_cat_256", "recsys_tower")


def child(model: str, compiler: str, device: str, size: str) -> dict:
    """One process's first call, timed from ``torch.compile`` with the registered backend name, as a
    user writes it (importing the backend and Inductor is part of it for both): seconds, optimizer
    seconds, our cache's and Inductor's cache outcomes."""
    module, inputs = MODELS[model](size, device)
    with torch.no_grad():
        want = module(*inputs)
        t0 = time.perf_counter()
        got = torch.compile(module, backend=compiler)(*inputs)
        sync(device)
        seconds = time.perf_counter() - t0
    torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-3)
    from fx_bridge import torch_compat

    reports = []
    if compiler == "eqsat":
        from fx_bridge.backend import _default

        reports = [*_default.reports, *_default.post_grad_reports]
    return {"compile_s": seconds, "optimizer_s": sum(r.optimizer_seconds for r in reports),
            "cache": [r.cache for r in reports], "inductor_caches": torch_compat.compile_cache_counters()}


def run_child(model: str, compiler: str, device: str, size: str, cache_dir: str) -> dict:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache_dir}
    env.pop("EQSAT_CACHE", None)
    out = subprocess.run([sys.executable, "-m", "bench.scripts.warm_start", "--child", model, compiler,
                          "--device", device, "--size", size], env=env, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{model} with {compiler} failed (exit {out.returncode}):\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(model: str, device: str, size: str) -> dict:
    row = {}
    for compiler in ("eqsat", "inductor"):
        with tempfile.TemporaryDirectory(prefix="warm_start_") as cache_dir:
            row[compiler, "cold"] = run_child(model, compiler, device, size, cache_dir)
            row[compiler, "warm"] = run_child(model, compiler, device, size, cache_dir)
    return row


def table(rows: dict[str, dict]) -> str:
    lines = ["| model | eqsat optimizer cold / warm (s) | warm/cold | eqsat compile cold / warm (s) | "
             "Inductor compile cold / warm (s) | eqsat warm / Inductor warm | cache (warm) | Inductor's caches (eqsat warm) |",
             "|---|---|---|---|---|---|---|---|"]
    for model, r in rows.items():
        ec, ew, ic, iw = r["eqsat", "cold"], r["eqsat", "warm"], r["inductor", "cold"], r["inductor", "warm"]
        lines.append(f"| {model} | {ec['optimizer_s']:.2f} / {ew['optimizer_s']:.3f} | "
                     f"{ew['optimizer_s'] / max(ec['optimizer_s'], 1e-9):.1%} | {ec['compile_s']:.2f} / "
                     f"{ew['compile_s']:.2f} | {ic['compile_s']:.2f} / {iw['compile_s']:.2f} | "
                     f"{ew['compile_s'] / iw['compile_s']:.2f}× | {', '.join(ew['cache'])} | "
                     f"{', '.join(f'{k} {v}' for k, v in sorted(ew['inductor_caches'].items()))} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="*", default=list(DEFAULT_MODELS), choices=sorted(MODELS))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--size", default="small")
    ap.add_argument("--child", nargs=2, metavar=("MODEL", "COMPILER"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child, args.device, args.size)))
        return
    rows = {}
    for model in args.models:
        rows[model] = measure(model, args.device, args.size)
        print(f"{model}: {json.dumps({' '.join(k): v for k, v in rows[model].items()})}", flush=True)
    print(table(rows))


if __name__ == "__main__":
    main()
