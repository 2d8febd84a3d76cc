"""Which kernels a model launches under each mode: the wrapper's launch lines (and eqsat's report),
so a launch count that differs between modes can be traced to the kernel that differs.

    python -m bench.kernel_dump --device cuda --models split_stack_unbind --modes inductor_optimus eqsat
"""
from __future__ import annotations

import argparse
import re

import torch

from bench.models import REGISTRY
from bench.modes import compile_model
from fx_bridge import inductor_metrics

_LINE = re.compile(r"^\s+(\w+ = )?(triton_\w+\.run|cpp_fused_\w+|extern_kernels\.\w+|torch\.ops\.\w+\.\w+)", re.M)


def dump(name: str, mode: str, device: str, size: str, train: bool) -> None:
    model, inputs = REGISTRY[name](size, device=device)
    inductor_metrics.cold_compile_reset()
    with inductor_metrics.inductor_config_patch(mode), inductor_metrics.capture_output_code() as codes:
        compiled = compile_model(mode, model.train(train))
        out = compiled.fn(*inputs)
        if train:
            outs = out if isinstance(out, (tuple, list)) else [out]
            sum(o.float().sum() for o in outs).backward()
    counts = inductor_metrics.launch_counts(codes)
    print(f"== {name} / {mode}{' / train' if train else ''}: {counts}")
    for i, code in enumerate(codes):
        body = code.split("def call(", 1)[-1]
        print(f"  graph {i}: " + ", ".join(m.group(2) for m in _LINE.finditer(body)))
    for r in compiled.collect_reports():
        print(f"  eqsat: {r.get('rules_used')} kernels {r.get('kernels_before')} -> {r.get('kernels_after')}"
              f" {r.get('skipped') or ''}{r.get('fallback') or ''}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", required=True)
    ap.add_argument("--modes", nargs="+", default=["inductor", "inductor_optimus", "eqsat"])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--size", default="small")
    ap.add_argument("--train", action="store_true")
    args = ap.parse_args(argv)
    for name in args.models:
        for mode in args.modes:
            try:
                dump(name, mode, args.device, args.size, args.train)
            except Exception as e:  # a diagnostic: report and go on
                print(f"== {name} / {mode}: {type(e).__name__}: {str(e)[:300]}")


if __name__ == "__main__":
    main()
