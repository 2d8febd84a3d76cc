"""Time each phase of the optimizer on synthetic graphs of growing size (issue: spine benchmark).

    python -m bench.scripts.pipeline_scale --pieces 256 1024 4096 --nodes 1000 5000 20000 --seconds 30

Two axes: Optimus' wide split→pointwise→cat (``--pieces``) and random graphs from ``bench.graphgen``
(``--nodes``: float32 split/cat/pointwise/view/matmul tangles). Fake values are recorded before
timing, as Dynamo does, so "lower" measures lowering alone. Each row: phase times, final e-graph
size, peak RSS, the cost model's predicted kernel launches before → after, and why it stopped
("time budget (<phase>)" when ``--seconds`` ran out).
"""
from __future__ import annotations

import argparse
import operator
import random
import time

import torch

from bench.graphgen import random_graph
from fx_bridge import optimize, torch_compat

PHASES = ("lower", "build", "saturate", "extract", "raise")


def graph_of_size(nodes: int, seed: int = 0):
    """A random graph with about ``nodes`` FX nodes (about 1.5 nodes per generated op)."""
    gm, inputs = random_graph(random.Random(seed), n_ops=max(1, int(nodes / 1.5)), dtype=torch.float32, n_inputs=3)
    _record_fake(gm, inputs)
    return gm, inputs


def split_pointwise_cat(pieces: int, rows: int = 64, identity_cat: bool = False):
    """``cat([sigmoid(p) for p in split(x, 1, dim=1)], 1)`` on a ``rows × pieces`` input (Optimus'
    wide case: the whole graph is one fused kernel). ``identity_cat`` adds a second output,
    ``sigmoid(cat(split(y, 2, 1), 1))``, whose rewrite (cat_split_all) is found in a few iterations."""
    g = torch.fx.Graph()
    x = g.placeholder("x")
    split = g.call_function(torch.split, (x, 1), {"dim": 1})
    outs = [g.call_function(torch.sigmoid, (g.call_function(operator.getitem, (split, i)),))
            for i in range(pieces)]
    results = [g.call_function(torch.cat, (outs,), {"dim": 1})]
    inputs = [torch.randn(rows, pieces)]
    if identity_cat:
        y = g.placeholder("y")
        halves = g.call_function(torch.split, (y, 2), {"dim": 1})
        glued = g.call_function(torch.cat, ([g.call_function(operator.getitem, (halves, i)) for i in range(2)],),
                                {"dim": 1})
        results.append(g.call_function(torch.sigmoid, (glued,)))
        inputs.append(torch.randn(4, 4))
    g.output(tuple(results))
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    _record_fake(gm, inputs)
    return gm, inputs


def _record_fake(gm, inputs) -> None:
    """Fake values as Dynamo leaves them, so timing "lower" measures lowering alone."""
    torch_compat.propagate_fake(gm, inputs)
    for n in gm.graph.nodes:
        n.meta["example_value"] = n.meta.get("val")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, nargs="*", default=[1000, 5000, 20000],
                    help="random graphs of about this many FX nodes")
    ap.add_argument("--pieces", type=int, nargs="*", default=[256, 1024, 4096],
                    help="split→sigmoid→cat graphs of this many pieces")
    ap.add_argument("--iterations", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=30.0)
    args = ap.parse_args(argv)
    print("| graph | FX nodes | e-nodes (final) | " + " | ".join(f"{p} s" for p in PHASES)
          + " | total s | peak RSS MB | kernels before → after | stop |")
    print("|---" * (len(PHASES) + 7) + "|")
    cases = [(f"split→sigmoid→cat ×{p}", lambda p=p: split_pointwise_cat(p)) for p in args.pieces]
    cases += [(f"random ~{n}", lambda n=n: graph_of_size(n)) for n in args.nodes]
    for name, make in cases:  # the RSS column is the process's peak so far: small cases first
        gm, inputs = make()
        t0 = time.perf_counter()
        _, report = optimize(gm, inputs, {"always_raise": True, "iterations": args.iterations,
                                          "seconds": args.seconds, "max_nodes": 2_000_000})
        total = time.perf_counter() - t0
        phases = " | ".join(f"{report.phase_seconds.get(p, 0):.2f}" for p in PHASES)
        print(f"| {name} | {len(gm.graph.nodes)} | {report.egraph_nodes} | {phases} | {total:.2f} | "
              f"{report.peak_rss_mb:.0f} | {report.kernels_before} → {report.kernels_after} | {report.stop_reason} |",
              flush=True)


if __name__ == "__main__":
    main()
