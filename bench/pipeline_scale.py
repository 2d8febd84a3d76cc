"""Time each phase of the optimizer on synthetic graphs of growing size (issue: spine benchmark).

    python -m bench.pipeline_scale --nodes 1000 5000 20000

Graphs come from ``bench.graphgen`` (float32, split/cat/pointwise/view/matmul tangles). Fake values are
recorded before timing, as Dynamo does, so "lower" measures lowering alone.
"""
from __future__ import annotations

import argparse
import random
import time

import torch

from bench.graphgen import random_graph
from fx_bridge import optimize, torch_compat

PHASES = ("lower", "build", "saturate", "extract", "raise")


def graph_of_size(nodes: int, seed: int = 0):
    """A random graph with about ``nodes`` FX nodes (about 1.5 nodes per generated op)."""
    gm, inputs = random_graph(random.Random(seed), n_ops=max(1, int(nodes / 1.5)), dtype=torch.float32, n_inputs=3)
    torch_compat.propagate_fake(gm, inputs)
    for n in gm.graph.nodes:
        n.meta["example_value"] = n.meta.get("val")
    return gm, inputs


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[1000, 5000, 20000])
    ap.add_argument("--iterations", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=30.0)
    args = ap.parse_args(argv)
    print("| FX nodes | e-nodes (final) | " + " | ".join(f"{p} s" for p in PHASES) + " | total s | stop |")
    print("|---" * (len(PHASES) + 4) + "|")
    for nodes in args.nodes:
        gm, inputs = graph_of_size(nodes)
        t0 = time.perf_counter()
        _, report = optimize(gm, inputs, {"always_raise": True, "iterations": args.iterations,
                                          "seconds": args.seconds, "max_nodes": 2_000_000})
        total = time.perf_counter() - t0
        phases = " | ".join(f"{report.phase_seconds.get(p, 0):.2f}" for p in PHASES)
        print(f"| {len(gm.graph.nodes)} | {report.egraph_nodes} | {phases} | {total:.2f} | {report.stop_reason} |",
              flush=True)


if __name__ == "__main__":
    main()
