"""The equivalence check's share of the optimizer's compile time on the zoo (issue 41).

Each zoo model is compiled for inference on CPU with ``backend=eqsat_backend(inner="eager",
post_grad=False)`` (the pre-grad pass alone; Inductor's time is not the optimizer's), and the check's
time (``Report.phase_seconds["equivalence"]``) is set against the optimizer's total for each graph.

    python -m bench.scripts.equivalence_cost [--size small] [models...]
"""
from __future__ import annotations

import argparse
import os

import torch

from bench.models.zoo import MODELS
from eqsat_torch import eqsat_backend
from eqsat_torch.inductor.compat import reset_dynamo


def measure(name: str, size: str) -> tuple[int, int, float, float, int]:
    """(graphs, nodes, check seconds, optimizer seconds, refused) of one model."""
    model, inputs = MODELS[name](size)
    model.eval()
    backend = eqsat_backend(inner="eager", post_grad=False, cache=False)
    reset_dynamo()
    with torch.no_grad():
        torch.compile(model, backend=backend)(*inputs)
    reports = backend.reports
    return (len(reports), sum(r.graph_nodes for r in reports),
            sum(r.phase_seconds.get("equivalence", 0.0) for r in reports),
            sum(r.optimizer_seconds for r in reports), sum(bool(r.refused) for r in reports))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=sorted(MODELS))
    parser.add_argument("--size", default="small")
    args = parser.parse_args()
    os.environ["EQSAT_CACHE"] = "0"
    print("| model | graphs | nodes | check (s) | optimizer (s) | check share | refused |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in args.models:
        graphs, nodes, check, total, refused = measure(name, args.size)
        print(f"| {name} | {graphs} | {nodes} | {check:.3f} | {total:.2f} | {check / total:.1%} | {refused} |",
              flush=True)


if __name__ == "__main__":
    main()
