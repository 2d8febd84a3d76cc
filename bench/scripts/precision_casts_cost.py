"""What the low-precision tie workaround costs (issue 41, item 7).

``eqsat_torch.inductor.workarounds`` compiles a graph holding a max/min or an equality of float16 or
bfloat16 values with Inductor's ``emulate_precision_casts`` (docs/upstream/inductor_lowp_tie_mask.py).
This times float16 zoo models compiled by Inductor with and without that setting, in interleaved
rounds, so the ratio is the workaround's own price on the graphs it applies to:

    python -m bench.scripts.precision_casts_cost --device cuda --models llama gpt2 bert --rounds 5
"""
from __future__ import annotations

import argparse
import statistics

import torch

from bench.measure import latency_ms
from bench.models.zoo import MODELS
from bench.tables import table
from eqsat_torch.inductor import compat
from eqsat_torch.inductor.workarounds import config_for


def _compiled(model, inputs, emulate: bool):
    torch._dynamo.reset()
    with torch._inductor.config.patch(emulate_precision_casts=emulate):
        fn = torch.compile(model)
        with torch.no_grad():
            fn(*inputs)  # compile inside the patch
    return fn


def _applies(model, inputs) -> bool:
    """Whether the workaround would switch the setting on for the model's Dynamo graph."""
    seen = []

    def backend(gm, example_inputs):
        seen.append(bool(config_for(gm, {}).get("emulate_precision_casts")))
        return gm.forward

    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(model, backend=backend)(*inputs)
    return any(seen)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--models", nargs="+", default=["llama", "gpt2", "bert"], choices=sorted(MODELS))
    ap.add_argument("--size", default="small")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    rows = []
    for name in args.models:
        model, inputs = MODELS[name](args.size, device=args.device, dtype=torch.float16)
        applies = _applies(model, inputs)
        fns = {False: _compiled(model, inputs, False), True: _compiled(model, inputs, True)}
        times = {False: [], True: []}
        with torch.no_grad():
            for _ in range(args.rounds):
                for emulate, fn in fns.items():
                    times[emulate].append(latency_ms(lambda: fn(*inputs), args.device))
        off, on = statistics.median(times[False]), statistics.median(times[True])
        rows.append([name, "yes" if applies else "no", f"{off:.3f}", f"{on:.3f}", f"{on / off:.3f}",
                     f"{min(times[True]) / max(times[False]):.3f}–{max(times[True]) / min(times[False]):.3f}"])
        compat.reset_dynamo()
    print("\n".join(table(["model (float16)", "workaround applies", "Inductor ms", "+ emulate_precision_casts ms",
                 "ratio", "ratio range over rounds"], rows)))


if __name__ == "__main__":
    main()
