"""Which rewrite makes a model wrong under Inductor's ``freezing``: compile it with eqsat, the inner
compiler Inductor or eager, and each batch rule switched off in turn; max error against eager. Then,
graph by graph, with the backend's GPU guard lifted (``batch_layernorm`` on): each Dynamo graph eqsat
optimized, run eagerly and through Inductor with freezing (without our post-grad pass, then with it).
A graph that runs right eagerly and wrong through Inductor alone is Inductor's miscompile of a valid
program: its code goes to ``--dump`` (the reproducer for upstream).

    python -m bench.scripts.freezing_check --device cuda --model bart --dump DIR
    python -m bench.scripts.freezing_check --gpu-cost --no-prepack    # on a CPU: the rewrites a GPU compile makes
    python -m bench.scripts.freezing_check --device cuda --only-disabled batch_linear_lhs   # one variant, no graph-by-graph part

On a CPU the calibrated CPU model batches nothing in BART, and freezing packs the linears' weights into
mkldnn ops our passes do not rewrite; ``--gpu-cost`` prices with the GPU model and ``--no-prepack``
keeps the linears as ``addmm``, so the batched layer norms and linears a GPU compile chooses go
through CPU Inductor with freezing (torch 2.13, transformers 5.17 BART with ``batch_linear_lhs`` off:
max error 6.05 before issue 28's stack-slot guard, the same as the H200; the cause is
docs/upstream/inductor_stack_slot_reuse.py).
"""
from __future__ import annotations

import argparse
import pathlib

import torch
import torch._inductor.config as inductor_config

from bench.models import REGISTRY
from eqsat.cost import CostModel
from eqsat_torch import eqsat_backend
from eqsat_torch.inductor import compat
from eqsat_torch.backend import optimize_or_keep
from eqsat_torch.options import Options
from eqsat_torch.inductor.post_grad import EqsatPostGradPass

VARIANTS = [("inductor", ()), ("eager", ()), ("inductor", ("batch_layernorm",)), ("inductor", ("batch_linear",)),
            ("inductor", ("batch_linear_lhs",)), ("inductor", ("batch",))]


def _first(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="bart")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--size", default="small")
    ap.add_argument("--dump", default=None, help="write the code of every graph Inductor gets wrong here")
    ap.add_argument("--gpu-cost", action="store_true", help="price with the GPU cost model (on a CPU)")
    ap.add_argument("--no-prepack", action="store_true", help="CPU: keep linears as addmm under freezing")
    ap.add_argument("--only-disabled", default=None,
                    help="only the variants disabling these rules (comma-separated), without the graph-by-graph part")
    args = ap.parse_args(argv)
    only = None if args.only_disabled is None else tuple(args.only_disabled.split(","))
    model, inputs = REGISTRY[args.model](args.size, device=args.device)
    cost = CostModel.for_device("cuda") if args.gpu_cost else None
    prepack = {"cpp.weight_prepack": False} if args.no_prepack else {}
    with torch.no_grad(), inductor_config.patch(freezing=True, **prepack):
        want = _first(model(*inputs))
        compat.reset_dynamo()
        alone = _first(torch.compile(model)(*inputs))
        print(f"inductor alone: max err {(alone - want).abs().max().item():.3g}", flush=True)
        for inner, disabled in VARIANTS if only is None else [("inductor", only)]:
            compat.reset_dynamo()
            backend = eqsat_backend(inner=inner, disabled=list(disabled), cost=cost)
            got = _first(torch.compile(model, backend=backend)(*inputs))
            used = sorted({r for rep in backend.reports for r in rep.rules_used})
            print(f"inner={inner} disabled={list(disabled)}: max err {(got - want).abs().max().item():.3g}; "
                  f"used {used}", flush=True)
        for post_grad in (False, True) if only is None else ():
            compat.reset_dynamo()
            got = _first(torch.compile(model, backend=_per_graph(post_grad, args.dump, cost))(*inputs))
            print(f"unguarded, post_grad={post_grad}: model max err {(got - want).abs().max().item():.3g}", flush=True)


def _err(a, b) -> float:
    leaves = [(x, y) for x, y in zip(a, b) if isinstance(x, torch.Tensor) and x.is_floating_point()]
    return max(((x - y).abs().max().item() for x, y in leaves if x.numel()), default=0.0)


def _per_graph(post_grad: bool, dump: str | None, cost: CostModel | None = None):
    """A backend optimizing each graph with every rule (no GPU guard), then comparing the optimized
    graph run eagerly with it compiled by Inductor (``freezing`` on, our post-grad pass or not)."""
    count = [0]

    def backend(gm, example_inputs):
        new_gm, report = optimize_or_keep(gm, example_inputs, Options(cost=cost), frozen_params=True)
        compiler = (compat.compile_fx_with_post_grad_pass(lambda user: EqsatPostGradPass(Options(cost=cost), then=user))
                    if post_grad else compat.compile_fx())
        compiled = compiler(new_gm, example_inputs)
        i, count[0] = count[0], count[0] + 1

        def run(*args):
            out = compiled(*args)
            eager, original = new_gm(*args), gm(*args)
            err, ours = _err(out, eager), _err(eager, original)
            print(f"  graph {i} ({len(gm.graph.nodes)} nodes; rules {sorted(report.rules_used)}): optimized graph "
                  f"eagerly vs original {ours:.3g}; Inductor vs eagerly {err:.3g}", flush=True)
            if dump and err > 1e-3 and ours <= 1e-3:
                path = pathlib.Path(dump) / f"graph{i}_post_grad{int(post_grad)}.py"
                path.parent.mkdir(parents=True, exist_ok=True)
                shapes = [(tuple(a.shape), str(a.dtype), tuple(a.stride())) for a in args if isinstance(a, torch.Tensor)]
                path.write_text(f"# inputs (shape, dtype, strides): {shapes}\n{new_gm.code}")
            return out
        return run

    return backend


if __name__ == "__main__":
    main()
