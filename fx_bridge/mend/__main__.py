"""python -m fx_bridge.mend module:factory [--diff out.patch] [--force]

The factory returns (model, inputs): inputs a tuple of args, a dict of kwargs, or (args, kwargs).
Prints each break before and after with its category and GB code, what was rewritten or left
alone and why, the output check, writes the unified diff, and ends with `breaks: B -> A`.
An existing diff file is refused (before any mending) unless --force is given.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys

import torch

from fx_bridge.mend.detect import Detection
from fx_bridge.mend.diff import unified_diff
from fx_bridge.mend.mender import mend


def load_factory(spec: str):
    module_name, _, func_name = spec.partition(":")
    if not func_name:
        raise SystemExit(f"expected module:function, got {spec!r}")
    sys.path.insert(0, "")
    return getattr(importlib.import_module(module_name), func_name)


def split_inputs(inputs) -> tuple[tuple, dict]:
    if isinstance(inputs, dict):
        return (), inputs
    if isinstance(inputs, torch.Tensor):
        return (inputs,), {}
    is_pair = isinstance(inputs, tuple) and len(inputs) == 2
    if is_pair and isinstance(inputs[0], (tuple, list)) and isinstance(inputs[1], dict):
        return tuple(inputs[0]), inputs[1]
    return tuple(inputs), {}


def _print_detection(label: str, det: Detection) -> None:
    explained = "" if det.explain_breaks is None else f", explain says {det.explain_breaks}"
    print(f"{label}: {det.graphs} graphs, {det.breaks} breaks{explained}")
    for site in det.sites:
        print(f"  {site.where}  [{site.category}] {site.gb_code or ''} {site.gb_type} (x{site.hits})")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fx_bridge.mend", description=__doc__.splitlines()[0])
    parser.add_argument("factory", help="module:function returning (model, example inputs)")
    parser.add_argument("--diff", default="mend.patch", help="where to write the unified diff (default: mend.patch)")
    parser.add_argument("--force", action="store_true", help="overwrite the --diff file if it exists")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--grad", action="store_true", help="run with autograd enabled (default: no_grad)")
    parser.add_argument("--no-explain", action="store_true", help="skip torch._dynamo.explain's own count")
    args = parser.parse_args(argv)
    if os.path.exists(args.diff) and not args.force:
        parser.error(f"{args.diff} exists; pass --force to overwrite it")

    model, inputs = load_factory(args.factory)()
    call_args, call_kwargs = split_inputs(inputs)
    with contextlib.nullcontext() if args.grad else torch.no_grad():
        report = mend(model, call_args, call_kwargs, rounds=args.rounds, explain=not args.no_explain)

    _print_detection("before", report.before)
    print("rewrites:")
    for decision in report.decisions:
        print(f"  {decision.describe()}")
    _print_detection("after", report.after)
    print(f"outputs vs original: {'equal' if report.outputs_equal else 'DIFFERENT'} ({report.detail})")
    if report.suggestion:
        print(f"suggested config: {report.suggestion}")
    diff = unified_diff(report.decisions)
    with open(args.diff, "wb" if args.force else "xb") as f:  # "xb": still refuse if it appeared meanwhile
        f.write(diff)
    print(f"diff: {args.diff} ({len(report.applied)} rewrites)")
    print(f"breaks: {report.before.breaks} -> {report.after.breaks}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
