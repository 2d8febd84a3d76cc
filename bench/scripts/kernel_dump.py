"""Which kernels a model launches under each mode: the wrapper's launch lines (and eqsat's report),
so a launch count that differs between modes can be traced to the kernel that differs.

    python -m bench.scripts.kernel_dump --device cuda --models split_stack_unbind --modes inductor_optimus eqsat

A step is built as the harness builds it (inference under no_grad, training a forward and a sum-loss
backward); `--freezing` turns Inductor's freezing on for every mode; `--code FILE` appends every
wrapper's whole code (kernel sources included) to FILE.
"""
from __future__ import annotations

import argparse
import re

import torch

from bench.models import REGISTRY
from bench.modes import compile_model
from bench.runner import make_step, training_inputs
from bench import inductor_metrics
from eqsat_torch.inductor import compat

_LINE = re.compile(r"^\s+(\w+ = )?(triton_\w+\.run|cpp_fused_\w+|extern_kernels\.\w+|torch\.ops\.\w+\.\w+)", re.M)


def dump(name: str, mode: str, device: str, size: str, train: bool, freezing: bool = False,
         code_file: str | None = None) -> None:
    model, inputs = REGISTRY[name](size, device=device)
    phase = "train" if train else "infer"
    if train:
        inputs = training_inputs(inputs)
    compat.reset_dynamo()
    with inductor_metrics.inductor_config_patch(mode, freezing=freezing), \
            inductor_metrics.capture_output_code() as codes:
        compiled = compile_model(mode, model.train(train))
        make_step(compiled.fn, model, inputs, phase)()
    title = f"{name} / {mode}{' / train' if train else ''}{' / freezing' if freezing else ''}"
    if code_file:
        with open(code_file, "a") as f:
            for i, code in enumerate(codes):
                f.write(f"\n#### {title} / graph {i}\n{code}\n")
    counts = inductor_metrics.launch_counts(codes)
    print(f"== {title}: {counts}")
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
    ap.add_argument("--freezing", action="store_true")
    ap.add_argument("--code", help="append every wrapper's code to this file")
    args = ap.parse_args(argv)
    for name in args.models:
        for mode in args.modes:
            try:
                dump(name, mode, args.device, args.size, args.train, args.freezing, args.code)
            except Exception as e:  # a diagnostic: report and go on
                print(f"== {name} / {mode}: {type(e).__name__}: {str(e)[:300]}")


if __name__ == "__main__":
    main()
