"""Extraction time and cost against e-graph size: bottom-up vs SCC cycle-break + ILP.

Each e-graph is a chain of blocks (two linears sharing an input, each unioned with a piece of one
fused linear; relus; a split/cat round trip unioned with its input; a residual add), grown until it
reaches the target number of term e-nodes. Not a test: prints a table.

    python -m bench.extract_bench --sizes 1000 10000 50000 --time-limit 5
"""
from __future__ import annotations

import argparse
import time

from eqsat.cost import CostModel
from eqsat.egraph import Budget, Session
from eqsat.extract import bottom_up, extract, is_acyclic
from eqsat.serialized import parse
import rules.library as library

D = 64


def _block(i: int, x: str) -> list[str]:
    """Commands for one block reading ``x``; its output is ``$o{i}``."""
    w = [f"$w{i}_{k}" for k in range(4)]
    cmds = []
    for k, name in enumerate(w):
        shape = f"(vec-of {D} {D})" if k < 2 else f"(vec-of {D})"
        cmds += [f'(let {name} (Param "{name}"))', f"(set (shape {name}) {shape})", f"(IsParam {name})"]
    cmds += [
        f"(let $l{i}a (Linear {x} {w[0]} {w[2]}))", f"(let $l{i}b (Linear {x} {w[1]} {w[3]}))",
        f"(let $f{i} (Linear {x} (Cat (TCons {w[0]} (TCons {w[1]} (TNil))) 0)"
        f" (Cat (TCons {w[2]} (TCons {w[3]} (TNil))) 0)))",
        f"(let $s{i} (Split $f{i} (vec-of {D} {D}) 1))",
        f"(union $l{i}a (Get $s{i} 0))", f"(union $l{i}b (Get $s{i} 1))",
        f'(let $r{i} (Binary "mul" (Unary "relu" $l{i}a) (Unary "sigmoid" $l{i}b)))',
        f"(let $p{i} (Split $r{i} (vec-of 16 48) 1))",
        f"(let $c{i} (Cat (TCons (Get $p{i} 0) (TCons (Get $p{i} 1) (TNil))) 1))",
        f"(union $c{i} $r{i})",
        f'(let $o{i} (Binary "add" {x} $c{i}))',
    ]
    return cmds


def build(target_nodes: int, rows: int = 512):
    """Grow blocks until the serialized e-graph has at least ``target_nodes`` term e-nodes."""
    per_block = 47  # term e-nodes one block adds after saturation (measured)
    blocks = max(1, target_nodes // per_block)
    session = Session(library.select(), library.shape_rules())
    session.commands(['(let $o0 (Input "x"))', f"(set (shape $o0) (vec-of {rows} {D}))"])
    for i in range(1, blocks + 1):
        session.commands(_block(i, f"$o{i - 1}"))
    session.saturate(Budget(iterations=2, nodes=10**7, seconds=600))
    view = parse(session.serialize())
    return view, [view.lets[f"$o{blocks}"]]


def run(sizes: list[int], time_limit: float, frozen: bool) -> None:
    model = CostModel(frozen_params=frozen)
    print("| e-nodes | bottom-up s | bottom-up cost | ILP+extract s | ILP status | gap | chosen | cost |"
          " kernels bottom-up → chosen |")
    print("|---|---|---|---|---|---|---|---|---|")
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
        print(f"| {view.num_nodes} | {t_bu:.3f} | {tree_cost.cost:,.0f} | {res.seconds:.2f} | {res.ilp_status}"
              f" | {gap} | {res.extractor} | {res.cost:,.0f} | {tree_cost.kernels} → {res.after.kernels} |")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 50000])
    ap.add_argument("--time-limit", type=float, default=5.0)
    ap.add_argument("--frozen", action="store_true", help="weights frozen: cats of parameters are free")
    args = ap.parse_args(argv)
    run(args.sizes, args.time_limit, args.frozen)


if __name__ == "__main__":
    main()
