"""python -m eqsat_torch.mend module:factory [--diff out.patch] [--force]

The factory returns (model, inputs): inputs a tuple of args, a dict of kwargs, or (args, kwargs).
Prints each break before and after with its category and GB code, what was rewritten or left
alone and why, the output check, writes the unified diff (paths relative to --root, so `patch -p1`
applies it from there), and ends with `breaks: B -> A`. Every refusal (bad arguments, a factory that
does not load, a diff file already there unless --force, a diff path that cannot be written) happens
before any mending, with exit status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import tempfile

import torch

from eqsat_torch.mend.detect import Detection
from eqsat_torch.mend.diff import RUNTIME_MODULE, unified_diff
from eqsat_torch.mend.mender import mend


def load_factory(parser: argparse.ArgumentParser, spec: str):
    """The factory named `module:function`; a name that does not resolve is a usage error (exit 2)."""
    module_name, _, func_name = spec.partition(":")
    if not module_name or not func_name:
        parser.error(f"expected module:function, got {spec!r}")
    sys.path.insert(0, "")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name is None or not (module_name + ".").startswith(err.name + "."):
            raise  # the user's module exists and imports something missing: their traceback
        parser.error(f"cannot import {module_name!r}: no module named {err.name!r}")
    factory = getattr(module, func_name, None)
    if not callable(factory):
        parser.error(f"{module_name} has no function {func_name!r}")
    return factory


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



class DiffOutput:
    """The --diff file, checked before mending: a temporary file is made next to it at once (so an
    unwritable or missing folder refuses now, not after minutes of mending) and moved into place at
    the end; without --force it never replaces what is there, even if that appeared meanwhile."""

    def __init__(self, parser: argparse.ArgumentParser, path: str, force: bool):
        self.path, self.force = path, force
        if os.path.isdir(path):
            parser.error(f"--diff {path} is a directory")
        if os.path.lexists(path) and not force:
            dangling = " (a symlink to a missing file)" if not os.path.exists(path) else ""
            parser.error(f"{path} exists{dangling}; pass --force to overwrite it")
        folder = os.path.dirname(os.path.abspath(path))
        try:
            fd, self.temporary = tempfile.mkstemp(prefix=".mend-", suffix=".patch", dir=folder)
        except OSError as err:
            parser.error(f"cannot write --diff {path}: {err.strerror} ({folder})")
        os.close(fd)

    def write(self, data: bytes) -> bool:
        """Move the diff into place; False (the diff kept in the temporary file) when, without
        --force, a file appeared at the path while mending."""
        with open(self.temporary, "wb") as f:
            f.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(self.temporary, 0o666 & ~umask)  # as open() would have made it, not mkstemp's 0600
        if self.force:
            os.replace(self.temporary, self.path)  # a symlink is replaced, not followed
            return True
        try:
            os.link(self.temporary, self.path)  # unlike a rename, never replaces what is there
        except FileExistsError:
            return False
        os.unlink(self.temporary)
        return True

    def discard(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.temporary)


def _rounds(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eqsat_torch.mend", description=__doc__.splitlines()[0])
    parser.add_argument("factory", help="module:function returning (model, example inputs)")
    parser.add_argument("--diff", default="mend.patch", help="where to write the unified diff (default: mend.patch)")
    parser.add_argument("--force", action="store_true", help="overwrite the --diff file if it exists")
    parser.add_argument("--root", default=".", help="project root the diff's paths are relative to (default: .)")
    parser.add_argument("--rounds", type=_rounds, default=3)
    parser.add_argument("--grad", action="store_true", help="run with autograd enabled (default: no_grad)")
    parser.add_argument("--no-explain", action="store_true", help="skip torch._dynamo.explain's own count")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.root):
        parser.error(f"--root {args.root} is not a directory")
    output = DiffOutput(parser, args.diff, args.force)
    try:
        factory = load_factory(parser, args.factory)
        report = _mend(factory, args)
        diff, outside = unified_diff(report.decisions, args.root)
    except BaseException:
        output.discard()
        raise
    if not output.write(diff):
        print(f"{args.diff} appeared while mending; the diff is in {output.temporary}", file=sys.stderr)
        return 2
    for filename in outside:
        print(f"not in the diff (outside --root {args.root}; --root / includes it): {filename}")
    print(f"diff: {args.diff} ({len(report.applied)} rewrites; the mended code imports {RUNTIME_MODULE})")
    print(f"breaks: {report.before.breaks} -> {report.after.breaks}")
    return 0


def _mend(factory, args):
    """Mend what the factory returns, printing breaks before and after and each decision."""
    model, inputs = factory()
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
    return report


if __name__ == "__main__":
    raise SystemExit(main())
