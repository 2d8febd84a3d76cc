"""Cold-start compile time and steady-state latency, original vs mended, for corpus models.

    python -m bench.scripts.mend_coldstart [--models t5,bart-fp16,whisper] [--device cuda] [--iters 50]

Cold start = first call of `torch.compile(model)` (Inductor) from a reset Dynamo with the
FX-graph cache off, so both variants compile from scratch. Steady state = median of `--iters`
calls after warm-up. Mending itself (a one-off source rewrite) is timed separately.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from bench import tables
from bench.measure import sync
from eqsat_torch.inductor import compat
from bench.mend_corpus import corpus
from eqsat_torch.mend import dynamo_compat, mend, runtime


def _to(value, device):
    return value.to(device) if isinstance(value, torch.Tensor) else value


def measure(name: str, device: str, iters: int, mended: bool) -> dict:
    model, kwargs = corpus.build(name)
    model = model.to(device)
    kwargs = {k: _to(v, device) for k, v in kwargs.items()}
    mend_s, graphs, patch = 0.0, None, None
    with torch.no_grad():
        if mended:
            start = time.perf_counter()
            report = mend(model, (), kwargs, explain=False)
            mend_s, graphs, patch = time.perf_counter() - start, report.after.graphs, report.patch
        else:
            graphs = dynamo_compat.capture(model, (), kwargs)[0].graphs
        compat.reset_dynamo()
        with dynamo_compat.cold_compile_caches():
            compiled = runtime.compile(model)
            sync(device)
            start = time.perf_counter()
            compiled(**kwargs)
            sync(device)
            cold = time.perf_counter() - start
            for _ in range(3):
                compiled(**kwargs)
            times = []
            for _ in range(iters):
                sync(device)
                start = time.perf_counter()
                compiled(**kwargs)
                sync(device)
                times.append(time.perf_counter() - start)
    if patch is not None:
        patch.undo()
    compat.reset_dynamo()
    return {"graphs": graphs, "cold_s": cold, "steady_ms": 1e3 * statistics.median(times), "mend_s": mend_s}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="t5,bart-fp16,whisper")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--iters", type=int, default=50)
    args = parser.parse_args(argv)
    print(f"device: {args.device}, torch {torch.__version__}")
    print("\n".join(tables.header(["model", "graphs orig -> mended", "cold start orig (s)", "mended (s)", "speedup",
                                    "steady orig (ms)", "mended (ms)", "speedup", "mend time (s)"])))
    for name in args.models.split(","):
        orig = measure(name, args.device, args.iters, mended=False)
        fixed = measure(name, args.device, args.iters, mended=True)
        print(tables.row([name, f"{orig['graphs']} -> {fixed['graphs']}", f"{orig['cold_s']:.2f}",
                          f"{fixed['cold_s']:.2f}", f"{orig['cold_s'] / fixed['cold_s']:.2f}x",
                          f"{orig['steady_ms']:.2f}", f"{fixed['steady_ms']:.2f}",
                          f"{orig['steady_ms'] / fixed['steady_ms']:.2f}x", f"{fixed['mend_s']:.1f}"]), flush=True)


if __name__ == "__main__":
    main()
