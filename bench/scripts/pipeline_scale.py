"""Time each phase of the optimizer on synthetic graphs of growing size (issue: spine benchmark).

    python -m bench.scripts.pipeline_scale --pieces 256 1024 4096 --nodes 1000 5000 20000 --seconds 30
    python -m bench.scripts.pipeline_scale --dynamo --pieces 4096 [--train] [--device cuda] [--inductor-alone]

``--dynamo`` goes through ``torch.compile(backend=eqsat_backend(...))`` as a user does (issue 30):
the two-stage model of ``TwoStage`` is traced by Dynamo, optimized (and, with ``--train``, so are
AOTAutograd's forward and backward graphs), and compiled by Inductor; each row sums every graph's
optimizer phases and counts the loop nests / kernels Inductor generated; on ``--device cuda`` also
the kernel launches of the step (the wrappers' ``call`` bodies, forward and backward).
``--inductor-alone`` compiles the same model with plain Inductor (the baseline the issue compares to).

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

from bench import tables
from bench.graphgen import random_graph
from eqsat_torch import optimize
from eqsat_torch.inductor import compat

PHASES = ("units", "lower", "build", "saturate", "extract", "raise")  # units: cutting and splicing (eqsat_torch.scale.clusters)


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


class TwoStage(torch.nn.Module):
    """Issue 30's model: N one-wide pieces ``sigmoid(p) * 2`` → cat → N/4 four-wide pieces
    ``tanh(p) + 1`` → cat. As written Inductor emits a kernel per piece; it is one pointwise kernel."""

    def forward(self, x):
        y = torch.cat([torch.sigmoid(p) * 2 for p in torch.split(x, 1, dim=1)], dim=1)
        return torch.cat([torch.tanh(p) + 1 for p in torch.split(y, 4, dim=1)], dim=1)


def two_stage_graph(pieces: int, rows: int = 64) -> tuple[torch.fx.GraphModule, list]:
    """Dynamo's graph of ``TwoStage`` at ``pieces`` pieces and its example inputs, as a backend gets them."""
    got = []
    torch.compile(TwoStage(), backend=lambda gm, ex: got.append((gm, list(ex))) or gm.forward,
                  fullgraph=True)(torch.randn(rows, pieces))
    return got[0]


def through_dynamo(pieces: int, train: bool, options: dict, rows: int = 64, device: str = "cpu",
                   inductor_alone: bool = False) -> dict:
    """Compile and run ``TwoStage`` (a training step with ``train``) through ``torch.compile`` on
    ``device`` with eqsat (or Inductor alone); optimizer seconds per phase over every graph, graph and
    e-graph sizes, kernels (and launches), stop reasons."""
    from eqsat_torch import eqsat_backend
    from bench import inductor_metrics

    compat.reset_dynamo()
    x = torch.randn(rows, pieces, requires_grad=train, device=device)
    backend = "inductor" if inductor_alone else eqsat_backend(**options)
    inductor_metrics.reset()
    t0 = time.perf_counter()
    mode = "inductor" if inductor_alone else "eqsat"
    with inductor_metrics.inductor_config_patch(mode), inductor_metrics.capture_output_code() as codes:
        out = torch.compile(TwoStage(), backend=backend)(x)
        if train:
            out.sum().backward()
    total = time.perf_counter() - t0
    expected = TwoStage()(x.detach())
    torch.testing.assert_close(out.detach(), expected)
    if train:
        torch.testing.assert_close(x.grad, _eager_grad(x.detach()))
    reports = [] if inductor_alone else backend.reports + backend.post_grad_reports
    phases: dict[str, float] = {}
    for r in reports:
        for k, v in r.phase_seconds.items():
            phases[k] = phases.get(k, 0.0) + v
    return {"total": total, "phases": phases, "optimizer": sum(phases.values()),
            "graphs": [r.graph_nodes for r in reports], "egraph": [r.egraph_nodes for r in reports],
            "kernels": inductor_metrics.kernel_counts()["generated"],
            "launches": inductor_metrics.launch_counts(codes)["total"] if device == "cuda" else None,
            "stop": [r.stop_reason or r.skipped for r in reports], "changed": [r.changed for r in reports]}


def _eager_grad(x):
    x = x.clone().requires_grad_(True)
    TwoStage()(x).sum().backward()
    return x.grad


def dynamo_main(args) -> None:
    import logging

    logging.basicConfig(format="%(message)s")  # each graph's report as it is optimized, before Inductor
    logging.getLogger("eqsat").setLevel(logging.INFO)
    print("\n".join(tables.header(["pieces", "mode", "FX nodes per graph", "e-nodes", *(f"{p} s" for p in PHASES),
                                    "optimizer s", "compile+run s", "loop nests", "launches", "stop"])))
    options = {"seconds": args.seconds} if args.seconds else {}
    for pieces in args.pieces:
        r = through_dynamo(pieces, args.train, options, device=args.device, inductor_alone=args.inductor_alone)
        phases = [f"{r['phases'].get(p, 0):.2f}" for p in PHASES]
        mode = ('train' if args.train else 'inference') + (' (Inductor alone)' if args.inductor_alone else '')
        print(tables.row([pieces, mode, r['graphs'], r['egraph'], *phases, f"{r['optimizer']:.2f}", f"{r['total']:.1f}",
                          r['kernels'], r['launches'] or '-', '; '.join(r['stop'])]), flush=True)


def _record_fake(gm, inputs) -> None:
    """Fake values as Dynamo leaves them, so timing "lower" measures lowering alone."""
    compat.propagate_fake(gm, inputs)
    for n in gm.graph.nodes:
        n.meta["example_value"] = n.meta.get("val")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, nargs="*", default=[1000, 5000, 20000],
                    help="random graphs of about this many FX nodes")
    ap.add_argument("--pieces", type=int, nargs="*", default=[256, 1024, 4096],
                    help="split→sigmoid→cat graphs of this many pieces")
    ap.add_argument("--iterations", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=None,
                    help="the optimizer's budget (default: 30 s; with --dynamo the backend's default)")
    ap.add_argument("--dynamo", action="store_true", help="issue 30's two-stage model through torch.compile")
    ap.add_argument("--train", action="store_true", help="with --dynamo: a training step (forward and backward)")
    ap.add_argument("--inductor-alone", action="store_true", help="with --dynamo: plain Inductor, the baseline")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="with --dynamo: where the model runs (cuda also counts the step's kernel launches)")
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: no GPU here")
    if args.dynamo:
        return dynamo_main(args)
    args.seconds = args.seconds or 30.0
    print("\n".join(tables.header(["graph", "FX nodes", "e-nodes (final)", *(f"{p} s" for p in PHASES), "total s",
                                    "peak RSS MB", "kernels before → after", "stop"])))
    cases = [(f"split→sigmoid→cat ×{p}", lambda p=p: split_pointwise_cat(p)) for p in args.pieces]
    cases += [(f"random ~{n}", lambda n=n: graph_of_size(n)) for n in args.nodes]
    for name, make in cases:  # the RSS column is the process's peak so far: small cases first
        gm, inputs = make()
        t0 = time.perf_counter()
        _, report = optimize(gm, inputs, {"always_raise": True, "iterations": args.iterations,
                                          "seconds": args.seconds, "max_nodes": 2_000_000})
        total = time.perf_counter() - t0
        phases = [f"{report.phase_seconds.get(p, 0):.2f}" for p in PHASES]
        print(tables.row([name, len(gm.graph.nodes), report.egraph_nodes, *phases, f"{total:.2f}",
                          f"{report.peak_rss_mb:.0f}", f"{report.kernels_before} → {report.kernels_after}",
                          report.stop_reason]), flush=True)


if __name__ == "__main__":
    main()
