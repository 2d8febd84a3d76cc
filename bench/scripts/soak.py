"""Soak: thousands of random graphs through the backend, inference and training, against eager.

    python -m bench.scripts.soak --cases 10000 --workers 14 --summary soak.json
    python -m bench.scripts.soak --cases 2000 --workers 14 --device cuda --inductor   # the real compile

Each case is a random Torch-IR graph (``bench.graphgen``) whose outputs may be inputs, views of
inputs and repeated values, and which has (drawn per case) what issue 28 found missing: inputs with
layouts (transposed, channels_last, expanded, sliced), a grad-mode region (``no_grad`` in training,
``enable_grad`` in a call made under ``no_grad``, ``inference_mode``), and in-place writes to inputs
and views of inputs read back through split/cat/stack/unbind. The eager reference gets the same
layouts. A case runs in one of three modes: inference (grad on, nothing requires grad), training
(the inputs require grad; only fresh clones are written) and ``no_grad`` (the inputs require grad, the
call runs under ``torch.no_grad()`` with an ``enable_grad`` region).

Each case also draws (issue 41) the context it runs in, from its own stream (``_draw_context``):
ambient autocast at call time (CPU bfloat16; CUDA float16 or bfloat16), an autocast region inside the
function (a ``with torch.autocast(...)`` block, maybe with a nested ``enabled=False`` one; programs
also draw issue 41's split → linear per piece → cat), ``torch.set_float32_matmul_precision`` at
compile and call time (restored after), and, for a quarter of the training cases, instead of a random graph a
mixed-precision training step of an ``nn.Module`` (``bench.mpmodules``: ``Linear``/``LayerNorm`` groups
on split pieces). In a case whose context changes precision, output dtypes must be eager's, and
gradients (of inputs and parameters) may be off eager's by at most twice what the same compile
without eqsat is off plus a floor (``_grad_tolerance``), not the loose default. The record's
``context`` says what was drawn; the summary counts it. ``--no-contexts``: a seed's program and run as
before issue 41 (what the regression tests that name a seed use).

By default a case is compiled by Dynamo with the eqsat pre-grad pass, then AOTAutograd's forward
(and backward) graphs go through the post-grad pass, mutation epilogue included, and run eagerly
(Inductor's codegen is not what is soaked). ``--inductor`` compiles through the real backend
(``EqsatBackend()``: inner Inductor, post-grad pass on): slow on CPU (a C++ compile per graph), meant
for the GPU. Checked against eager: output values (or, off them, no farther from a float64 run than
eager's: ``_values``), strides of every output on dims of size > 1,
``requires_grad`` of every output, storage relations (which outputs share storage with which inputs
and each other, and which *are* them), the values (and whole storage) of every input afterwards,
and gradients of every float input. A difference the same compile without eqsat shows too is
not ours: it is counted apart. Programs eager itself rejects are redrawn (and counted).

The summary counts cases, mismatches by kind, graphs kept as they were by reason, and cases per
feature (layouts, grad regions, in-place writes).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import multiprocessing.connection
import signal
import sys
import time

import torch

from bench.soak.check import reproducer, run_case
from bench.soak.pool import run_cases
from bench.soak.summary import summarize, totals


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=10_000, help="total cases, half inference, half training")
    ap.add_argument("--seeds", default=None,
                    help="run these cases instead, comma-separated, a training case with a t suffix: 17,68t")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=max(1, multiprocessing.cpu_count() - 1),
                    help="processes, each running one case at a time")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--inductor", action="store_true",
                    help="compile through the real backend (inner Inductor, post-grad pass) instead of running AOT's graphs eagerly")
    ap.add_argument("--case", type=int, default=None, help="print one case's program (with --train: a training case)")
    ap.add_argument("--train", action="store_true", help="with --case")
    ap.add_argument("--no-contexts", dest="contexts", action="store_false",
                    help="draw no context (autocast, matmul precision, module steps): a seed's program and run as before issue 41")
    ap.add_argument("--out", default=None, help="write every case as JSON lines here, as it ends")
    ap.add_argument("--summary", default=None, help="write the totals as JSON here (also on Ctrl-C or a timeout's SIGTERM)")
    ap.add_argument("--memory-gb", type=float, default=6.0,
                    help="address space per CPU worker above what it holds before its first case (a CUDA build's "
                         "libraries and driver reservation): a case that blows up aborts its worker, not the machine")
    ap.add_argument("--case-timeout", "--stall", dest="case_timeout", type=float, default=300.0,
                    help="seconds one case may run; then its worker is killed, the case reported lost, and a "
                         "fresh worker goes on (--stall: the old name)")
    args = ap.parse_args(argv)
    if args.case is not None:
        print(reproducer(args.case, args.train, args.device, args.contexts), end="")
        result = run_case(args.case, args.train, device=args.device, inductor=args.inductor, contexts=args.contexts)
        print(json.dumps({k: v for k, v in result.items() if k != "traceback"}))
        print(result.get("traceback", ""), end="")
        return 1 if result["problem"] else 0
    if args.seeds:
        jobs = [(int(s.rstrip("t")), s.endswith("t"), args.device, args.inductor, args.contexts)
                for s in args.seeds.split(",")]
    else:
        jobs = [(args.seed + i, i % 2 == 1, args.device, args.inductor, args.contexts) for i in range(args.cases)]
    t0 = time.perf_counter()
    results: list[dict] = []
    memory = args.memory_gb if args.device == "cpu" else None  # CUDA reserves address space of its own
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))    # ``timeout``: still write what came back
    out = open(args.out, "w") if args.out else None
    interrupted = False
    try:
        for r in run_cases(jobs, args.workers, args.case_timeout, memory):
            results.append(r)
            if out:
                out.write(json.dumps(r) + "\n")
                out.flush()
    except (KeyboardInterrupt, SystemExit):
        interrupted = True
    finally:
        if out:
            out.close()
    seconds = time.perf_counter() - t0
    t = totals(results)
    line = (summarize(results) + f"; {seconds:.0f} s on {args.workers} workers, {t['cpu_seconds']:.0f} s of CPU "
            f"in cases ({t['cases_per_cpu_second']:.2f} cases per CPU-second)")
    if interrupted:
        line += f" (interrupted: {len(jobs) - len(results)} of {len(jobs)} cases not run)"
    if args.inductor or args.device != "cpu":
        line += f" ({'Inductor' if args.inductor else 'AOT graphs run eagerly'}, {args.device})"
    for r in sorted(results, key=lambda r: r["seed"]):
        if r["problem"]:
            print(f"  seed {r['seed']} {'train' if r['train'] else 'infer'}: {r['problem']} {r.get('detail', '')}")
        for e in r.get("internal_errors", ()):  # kept, so no wrong answer, but a bug of ours
            print(f"  seed {r['seed']} {'train' if r['train'] else 'infer'}: graph kept: {e[:160]}")
    print(line)
    if args.summary:
        with open(args.summary, "w") as f:
            json.dump({**totals(results), "requested": len(jobs), "interrupted": interrupted,
                       "seconds": round(seconds, 1), "workers": args.workers, "case_timeout": args.case_timeout,
                       "seed": args.seed, "device": args.device, "inductor": args.inductor, "draws_contexts": args.contexts,
                       "torch": torch.__version__, "command": " ".join(sys.argv), "line": line}, f, indent=1)
    return 1 if interrupted or any(r["problem"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
