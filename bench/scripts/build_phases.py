"""Where building the e-graph of issue 30's Dynamo graph goes, step by step (issue 30).

    python -m bench.scripts.build_phases --pieces 4096 16384

Traces ``pipeline_scale.TwoStage`` with Dynamo (as a backend receives it), lowers it whole (no
regions, no clock) and times each step of ``eqsat.driver.build``: the session (schema and rules),
loading the input program, reading the e-graph back, pricing the input, loading the horizontal
candidates. The price is printed so a change to pricing can be checked to leave it as it was.
"""
from __future__ import annotations

import argparse
import resource
import time

import torch

from bench.scripts.pipeline_scale import TwoStage
from eqsat import driver
from eqsat.cost import CostModel
from eqsat.egraph import Session
from eqsat.original import input_program
from fx_bridge.autocast import drop_noop_autocast
from fx_bridge.functionalize import functionalize_intermediates
from fx_bridge.lower import lower
from fx_bridge.options import Options
from fx_bridge.pipeline import problem_of
from rules.library import select, shape_rules

STEPS = ("session", "load", "view", "price", "candidates")


def dynamo_graph(pieces: int, rows: int = 64):
    got = []
    torch.compile(TwoStage(), backend=lambda gm, ex: got.append((gm, list(ex))) or gm.forward,
                  fullgraph=True)(torch.randn(rows, pieces))
    return got[0]


def build_steps(pieces: int) -> dict:
    t0 = time.perf_counter()
    gm, inputs = dynamo_graph(pieces)
    out = {"nodes": len(gm.graph.nodes), "dynamo": time.perf_counter() - t0}
    opts = Options()
    rules = select(opts.families, opts.disabled, opts.extra_rules)
    t0 = time.perf_counter()
    problem = problem_of(lower(functionalize_intermediates(drop_noop_autocast(gm), inputs), inputs), rules, opts)
    out["lower"] = time.perf_counter() - t0
    out["commands"] = len(problem.program) + (len(problem.candidates) if problem.candidates is not None else 0)
    t0 = time.perf_counter()

    def step(name):
        nonlocal t0
        out[name] = time.perf_counter() - t0
        t0 = time.perf_counter()

    session = Session(rules, shape_rules())
    step("session")
    session.load(problem.program)
    step("load")
    view = driver.view_of(session, problem)
    step("view")
    priced = input_program(view, problem.originals, problem.roots, CostModel.for_device("cpu")).cost
    step("price")
    if problem.candidates is not None:
        session.load(problem.candidates)
    step("candidates")
    out["price_value"], out["kernels"] = priced.cost, priced.kernels
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pieces", type=int, nargs="*", default=[4096])
    args = ap.parse_args(argv)
    print("| pieces | FX nodes | commands | lower s | " + " | ".join(f"{s} s" for s in STEPS)
          + " | build s | price | kernels | peak RSS MB |")
    print("|---" * (len(STEPS) + 8) + "|")
    for pieces in args.pieces:
        r = build_steps(pieces)
        steps = " | ".join(f"{r[s]:.2f}" for s in STEPS)
        print(f"| {pieces} | {r['nodes']} | {r['commands']} | {r['lower']:.2f} | {steps} | "
              f"{sum(r[s] for s in STEPS):.2f} | {r['price_value']:.2f} | {r['kernels']} | {r['rss_mb']:.0f} |",
              flush=True)


if __name__ == "__main__":
    main()
