"""Extraction time and cost against e-graph size: bottom-up vs SCC cycle-break + ILP.

Each e-graph is a chain of blocks (two linears sharing an input, each unioned with a piece of one
fused linear; relus; a split/cat round trip unioned with its input; a residual add), grown until it
reaches the target number of term e-nodes. Not a test: prints a table.

    python -m bench.scripts.extract_bench --sizes 1000 10000 50000 --time-limit 5
"""
from __future__ import annotations

import argparse
import time

from bench import tables
from eqsat.cost import CostModel
from eqsat.egraph import Budget, Session
from eqsat.extract import bottom_up, extract, is_acyclic
from eqsat.terms import IVec, Program, Ref, Term, TList
import eqsat_rules.library as library

D = 64


def _block(p: Program, i: int, x: Ref) -> Ref:
    """One block reading ``x``, added to ``p``; returns its output ``$o{i}``."""
    w = []
    for k in range(4):
        name = f"$w{i}_{k}"
        w.append(p.let(name, Term("Param", (name,))))
        p.set_shape(w[-1], (D, D) if k < 2 else (D,))
        p.mark_param(w[-1])
    la = p.let(f"$l{i}a", Term("Linear", (x, w[0], w[2])))
    lb = p.let(f"$l{i}b", Term("Linear", (x, w[1], w[3])))
    f = p.let(f"$f{i}", Term("Linear", (x, Term("Cat", (TList((w[0], w[1])), 0)), Term("Cat", (TList((w[2], w[3])), 0)))))
    s = p.let(f"$s{i}", Term("Split", (f, IVec((D, D)), 1)))
    p.same(la, Term("Get", (s, 0)))
    p.same(lb, Term("Get", (s, 1)))
    r = p.let(f"$r{i}", Term("Binary", ("mul", Term("Unary", ("relu", la)), Term("Unary", ("sigmoid", lb)))))
    pieces = p.let(f"$p{i}", Term("Split", (r, IVec((16, 48)), 1)))
    c = p.let(f"$c{i}", Term("Cat", (TList((Term("Get", (pieces, 0)), Term("Get", (pieces, 1)))), 1)))
    p.same(c, r)
    return p.let(f"$o{i}", Term("Binary", ("add", x, c)))


def build(target_nodes: int, rows: int = 512):
    """Grow blocks until the serialized e-graph has at least ``target_nodes`` term e-nodes."""
    per_block = 47  # term e-nodes one block adds after saturation (measured)
    blocks = max(1, target_nodes // per_block)
    session = Session(library.select(), library.shape_rules())
    p = Program()
    out = p.let("$o0", Term("Input", ("x",)))
    p.set_shape(out, (rows, D))
    for i in range(1, blocks + 1):
        out = _block(p, i, out)
    session.load(p)
    session.saturate(Budget(iterations=2, nodes=10**7, seconds=600))
    view = session.view()
    return view, [view.lets[out.let]]


def run(sizes: list[int], time_limit: float, frozen: bool) -> None:
    model = CostModel(frozen_params=frozen)
    print("\n".join(tables.header(["e-nodes", "bottom-up s", "bottom-up cost", "ILP+extract s", "ILP status", "gap",
                                    "chosen", "cost", "kernels bottom-up → chosen"])))
    for n in sizes:
        view, roots = build(n)
        t0 = time.perf_counter()
        tree = bottom_up(view, roots, model.node_cost)
        t_bu = time.perf_counter() - t0
        tree_cost = model.program_cost(view, tree, roots)
        res = extract(view, roots, model, time_limit=time_limit)
        assert is_acyclic(view, roots, res.choice)
        assert res.cost <= tree_cost.cost
        gap = "-" if res.gap is None else f"{res.gap:.2%}"
        print(tables.row([view.num_nodes, f"{t_bu:.3f}", f"{tree_cost.cost:,.0f}", f"{res.seconds:.2f}", res.ilp_status,
                          gap, res.extractor, f"{res.cost:,.0f}", f"{tree_cost.kernels} → {res.after.kernels}"]))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 50000])
    ap.add_argument("--time-limit", type=float, default=5.0)
    ap.add_argument("--frozen", action="store_true", help="weights frozen: cats of parameters are free")
    args = ap.parse_args(argv)
    run(args.sizes, args.time_limit, args.frozen)


if __name__ == "__main__":
    main()
