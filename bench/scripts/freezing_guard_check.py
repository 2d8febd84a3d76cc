"""Is the GPU guard on batched layer norms under ``freezing`` (``fx_bridge/backend.py``) explained by
Inductor's stack-slot reuse (docs/upstream/inductor_stack_slot_reuse.py)? Compile the model with every
rule (the guard bypassed: the graph goes straight to Inductor) under ``freezing``, once with Inductor's
in-place buffer reuse on and once off. Wrong with it on and right with it off: the same cause, and
the ``workarounds`` guard covers it, so the ``batch_layernorm`` guard can go.

    python -m bench.scripts.freezing_guard_check --device cuda          # transformers 4.52.4 BART

On this CPU (torch 2.13, transformers 5.17 via PYTHONPATH=/work/tf5, ``--no-prepack --disable
batch_linear_lhs``): max error 6.05 with in-place reuse, 9.54e-7 without. H200 (torch 2.11,
transformers 4.52.4 BART, every rule): 9.54e-7 with and without, so the guard went.
"""
from __future__ import annotations

import argparse

import torch
import torch._inductor.config as inductor_config

from bench.models import REGISTRY
from bench.scripts.freezing_check import _first
from eqsat.cost import CostModel
from eqsat_torch.inductor import compat
from eqsat_torch.backend import optimize_or_keep
from eqsat_torch.options import Options


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="bart")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--size", default="small")
    ap.add_argument("--disable", default="", help="comma-separated rule families to switch off")
    ap.add_argument("--no-prepack", action="store_true", help="CPU: keep linears as addmm under freezing")
    args = ap.parse_args(argv)
    model, inputs = REGISTRY[args.model](args.size, device=args.device)
    options = Options(cost=CostModel.for_device("cuda"), disabled=[d for d in args.disable.split(",") if d])
    used: set = set()

    def backend(gm, example_inputs):
        new_gm, report = optimize_or_keep(gm, example_inputs, options, frozen_params=True)
        used.update(report.rules_used)
        return compat.compile_fx()(new_gm, example_inputs)

    prepack = {"cpp.weight_prepack": False} if args.no_prepack else {}
    for inplace in (True, False):
        with torch.no_grad(), inductor_config.patch(freezing=True, inplace_buffers=inplace, **prepack):
            want = _first(model(*inputs))
            compat.reset_dynamo()
            got = _first(torch.compile(model, backend=backend)(*inputs))
        print(f"inplace_buffers={inplace}: max err {(got - want).abs().max().item():.3g}; rules {sorted(used)}",
              flush=True)


if __name__ == "__main__":
    main()
