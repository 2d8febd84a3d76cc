"""What Inductor decided among on the zoo: each candidate program's launches and the winner (issue 29).

For each zoo model (inference, its Dynamo graph) eqsat optimizes with the GPU cost model and
Inductor deciding (``eqsat_torch.inductor.verify``: the GPU at hand, or a fake H200 on a machine without one),
every program between the input and ours measured (``--share 1``) or only as a compile measures them
(the default ``eqsat_torch.inductor.decide.VERIFY_SHARE``). ``--mispriced``: the GPU model with the pointwise batches
on, whose price of a stack of rotary sums Inductor does not bear out: the programs between then show
what they win. Not a test: prints a line per graph and a table.

    python -m bench.scripts.verify_candidates --device cuda --models llama,mixtral,t5 [--mispriced] [--share 1]
"""
from __future__ import annotations

import argparse
import time

import torch

from bench import tables
from bench.models import ZOO
from eqsat.cost import CostModel
from eqsat_torch import eqsat_backend
from eqsat_torch.inductor import decide as inductor_decide
from eqsat_torch.inductor import compat


def decide(name: str, device: str, mispriced: bool) -> list[dict]:
    """One model's Dynamo graphs: nodes, each candidate's launches, the winner and the seconds."""
    model, inputs = ZOO[name]("small", device, torch.float32)
    cost = CostModel.for_device("cuda", batch_pointwise=mispriced)
    backend = eqsat_backend(cost=cost, verify=True, seconds=600, cache=False, inner="eager", post_grad=False)
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(model, backend=backend)(*inputs), model(*inputs))
    return [{"model": name, "nodes": r.graph_nodes, "launches": r.inductor_launches, "won": r.inductor_winner or "–",
             "optimizer_s": r.optimizer_seconds - r.phase_seconds.get("verify", 0.0),
             "verify_s": r.phase_seconds.get("verify", 0.0)} for r in backend.reports]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--models", default="llama,mixtral,t5,bart")
    ap.add_argument("--mispriced", action="store_true", help="the GPU model with the pointwise batches on")
    ap.add_argument("--share", type=float, default=inductor_decide.VERIFY_SHARE,
                    help="decide.VERIFY_SHARE: 1 measures every program between")
    args = ap.parse_args(argv)
    inductor_decide.VERIFY_SHARE = args.share
    rows = []
    for name in args.models.split(","):
        t0 = time.perf_counter()
        try:
            rows += decide(name, args.device, args.mispriced)
        except Exception as e:  # one model failing is a line of the output, not the end of it
            rows.append({"model": name, "nodes": 0, "launches": {}, "won": f"error: {type(e).__name__}: {e}"[:200],
                         "optimizer_s": 0.0, "verify_s": 0.0})
        print(f"{name}: {time.perf_counter() - t0:.1f} s", flush=True)
        compat.reset_dynamo()
    print("\n" + "\n".join(tables.table(
        ("model", "nodes", "launches per candidate", "won", "optimizer s", "verify s"),
        [(r["model"], r["nodes"], ", ".join(f"{k} {v}" for k, v in r["launches"].items()) or "–", r["won"],
          f"{r['optimizer_s']:.1f}", f"{r['verify_s']:.1f}") for r in rows])))


if __name__ == "__main__":
    main()
