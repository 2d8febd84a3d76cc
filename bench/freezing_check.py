"""Which rewrite makes a model wrong under Inductor's ``freezing``: compile it with eqsat, the inner
compiler Inductor or eager, and each batch rule switched off in turn; max error against eager.

    python -m bench.freezing_check --device cuda --model bart
"""
from __future__ import annotations

import argparse

import torch
import torch._inductor.config as inductor_config

from bench.models import REGISTRY
from fx_bridge import eqsat_backend, torch_compat

VARIANTS = [("inductor", ()), ("eager", ()), ("inductor", ("batch_layernorm",)), ("inductor", ("batch_linear",)),
            ("inductor", ("batch_linear_lhs",)), ("inductor", ("batch",))]


def _first(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="bart")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--size", default="small")
    args = ap.parse_args(argv)
    model, inputs = REGISTRY[args.model](args.size, device=args.device)
    with torch.no_grad(), inductor_config.patch(freezing=True):
        want = _first(model(*inputs))
        torch_compat.reset_dynamo()
        alone = _first(torch.compile(model)(*inputs))
        print(f"inductor alone: max err {(alone - want).abs().max().item():.3g}", flush=True)
        for inner, disabled in VARIANTS:
            torch_compat.reset_dynamo()
            backend = eqsat_backend(inner=inner, disabled=list(disabled))
            got = _first(torch.compile(model, backend=backend)(*inputs))
            used = sorted({r for rep in backend.reports for r in rep.rules_used})
            print(f"inner={inner} disabled={list(disabled)}: max err {(got - want).abs().max().item():.3g}; "
                  f"used {used}", flush=True)


if __name__ == "__main__":
    main()
