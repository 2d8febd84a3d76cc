"""Optimizer time on a symbolic graph against the same graph static (issue #13 asks for ≤ 1.5×).

For each model, Dynamo captures its graph twice: static, and with the batch dim marked dynamic. The
optimizer (lower → saturate → extract → raise, no Inductor) runs on each capture ``--repeat`` times;
the table gives the median seconds, the ratio, and whether both captures were optimized equally well
(the same estimated cost after, the symbolic one priced at its hints; rules used can differ between
equally cheap programs, run to run). Not a test: prints a table.

    python -m bench.scripts.dynamic_overhead --models dhen interformer recsys_tower split_cat_64 --repeat 5
"""
from __future__ import annotations

import argparse
import math
import statistics
import time
from typing import Any

import torch

from bench import tables
from bench.models import REGISTRY
from bench.runner import mark_batch_dynamic
from eqsat_torch.inductor import compat
from eqsat_torch.pipeline import optimize

DEFAULT_MODELS = ("dhen", "interformer", "recsys_tower", "split_cat_64")


def capture(model: torch.nn.Module, inputs: tuple, dynamic: bool) -> list[tuple[Any, list]]:
    """Every Dynamo graph of one inference call, with its example inputs."""
    graphs: list[tuple[Any, list]] = []

    def backend(gm, example_inputs):
        graphs.append((gm, list(example_inputs)))
        return gm.forward

    compat.reset_dynamo()
    if dynamic:
        mark_batch_dynamic(inputs)
    with torch.no_grad():
        torch.compile(model, backend=backend)(*inputs)
    return graphs


def time_optimizer(graphs: list[tuple[Any, list]], repeat: int) -> tuple[float, list]:
    """Median seconds to optimize every graph of the capture, and the last run's reports."""
    times, reports = [], []
    for _ in range(repeat):
        reports = []
        start = time.perf_counter()
        for gm, example_inputs in graphs:
            reports.append(optimize(gm, example_inputs)[1])
        times.append(time.perf_counter() - start)
    return statistics.median(times), reports


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS), choices=list(REGISTRY))
    ap.add_argument("--size", default="small")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    print("\n".join(tables.header(["model", "static s", "symbolic s", "ratio", "symbolic graphs optimized",
                                    "same cost after", "kernels static → symbolic"])))
    for name in args.models:
        model, inputs = REGISTRY[name](args.size, device=args.device, dtype=torch.float32)
        model.eval()
        static_s, static_reports = time_optimizer(capture(model, inputs, False), args.repeat)
        dynamic_s, dynamic_reports = time_optimizer(capture(model, inputs, True), args.repeat)
        optimized = sum(1 for r in dynamic_reports if not r.skipped)
        same = [math.isclose(a.cost_after, b.cost_after, rel_tol=1e-6) for a, b in zip(static_reports, dynamic_reports)]
        kernels = (f"{sum(r.kernels_after for r in static_reports)} → "
                   f"{sum(r.kernels_after for r in dynamic_reports)}")
        skipped = "; ".join(r.skipped for r in dynamic_reports if r.skipped)
        print(tables.row([name, f"{static_s:.3f}", f"{dynamic_s:.3f}", f"{dynamic_s / static_s:.2f}×",
                          f"{optimized}/{len(dynamic_reports)}{' (' + skipped + ')' if skipped else ''}",
                          all(same) and len(static_reports) == len(dynamic_reports), kernels]), flush=True)


if __name__ == "__main__":
    main()
