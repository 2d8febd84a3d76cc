"""Where building the e-graph of issue 30's Dynamo graph goes, step by step (issue 30).

    python -m bench.scripts.build_phases --pieces 4096 16384 [--nodes 15000] [--text]

Traces ``pipeline_scale.TwoStage`` with Dynamo (as a backend receives it), or makes a random graph of
about ``--nodes`` FX nodes (``pipeline_scale.graph_of_size``), lowers it whole (no regions, no clock)
and times each step of ``eqsat.driver.build``: the session (schema and rules),
loading the input program, reading the e-graph back, pricing the input, loading the horizontal
candidates. The price is printed so a change to pricing can be checked to leave it as it was.
Seconds are the process's CPU seconds (the box is shared); ``--text`` loads one egglog command per
statement instead of in bulk (``Session.bulk``), the loader before issue 30.
"""
from __future__ import annotations

import argparse
import resource
import time

from bench import tables
from bench.scripts.pipeline_scale import graph_of_size, two_stage_graph
from eqsat import driver
from eqsat.cost import CostModel
from eqsat.egraph import Session
from eqsat.gcpause import gc_paused
from eqsat.original import input_program
from eqsat_torch.lowering.autocast import drop_noop_autocast
from eqsat_torch.safety.functionalize import functionalize_intermediates
from eqsat_torch.lowering.lower import lower
from eqsat_torch.options import Options
from eqsat_torch.pipeline import problem_of
from eqsat_rules.library import select, shape_rules

STEPS = ("session", "load", "view", "price", "candidates")


def build_steps(gm, inputs) -> dict:
    out = {"nodes": len(gm.graph.nodes)}
    opts = Options()
    rules = select(opts.families, opts.disabled, opts.extra_rules)
    t0 = time.process_time()
    problem = problem_of(lower(functionalize_intermediates(drop_noop_autocast(gm), inputs), inputs), rules, opts)
    offers = [source.offer() for source in problem.candidates]  # found with the lowering, as before
    out["lower"] = time.process_time() - t0
    out["commands"] = len(problem.program) + sum(len(o.program) for o in offers)
    with gc_paused():  # as driver.build runs
        _time_steps(problem, offers, rules, out)
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def _time_steps(problem, offers, rules, out: dict) -> None:
    t0 = time.process_time()

    def step(name):
        nonlocal t0
        out[name] = time.process_time() - t0
        t0 = time.process_time()

    session = Session(rules, shape_rules())
    step("session")
    session.load(problem.program)
    step("load")
    view = driver.view_of(session, problem)
    step("view")
    priced = input_program(view, problem.originals, problem.roots, CostModel.for_device("cpu")).cost
    step("price")
    for offer in offers:
        session.load(offer.program)
    step("candidates")
    out["price_value"], out["kernels"] = priced.cost, priced.kernels


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pieces", type=int, nargs="*", default=[4096])
    ap.add_argument("--nodes", type=int, nargs="*", default=[], help="random graphs of about this many FX nodes")
    ap.add_argument("--text", action="store_true", help="load one egglog command per statement (not in bulk)")
    args = ap.parse_args(argv)
    Session.bulk = not args.text
    print("\n".join(tables.header(["graph", "FX nodes", "statements", "lower s", *(f"{s} s" for s in STEPS),
                                    "build s", "price", "kernels", "peak RSS MB"])))
    cases = [(f"{p} pieces", lambda p=p: two_stage_graph(p)) for p in args.pieces]
    cases += [(f"random ~{n}", lambda n=n: graph_of_size(n)) for n in args.nodes]
    for name, make in cases:
        r = build_steps(*make())
        print(tables.row([name, r['nodes'], r['commands'], f"{r['lower']:.2f}", *(f"{r[s]:.2f}" for s in STEPS),
                          f"{sum(r[s] for s in STEPS):.2f}", f"{r['price_value']:.2f}", r['kernels'],
                          f"{r['rss_mb']:.0f}"]), flush=True)


if __name__ == "__main__":
    main()
