"""`python -m bench run|zoo|demo`: compile every model under every mode and write rows, report and plots."""

from __future__ import annotations

import argparse
import gzip
import importlib.metadata
import json
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from tqdm import tqdm

from bench import plots, report, zoo_report
from bench.report import LATENCY_KEYS
from bench.models import REGISTRY, ZOO
from bench.modes import CG_MODES, CUDAGRAPHS, MODES
from bench.run_tag import device_name, run_tag
from bench.runner import PHASES, eager_reference, latency_summary, mode_label, paired_latency, run_mode, warm_up
from bench import inductor_metrics
from eqsat_torch.inductor import compat

DEMO_MODELS = ("split_cat_64", "recsys_tower", "split_stack_unbind")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def _names(p: argparse.ArgumentParser, flag: str, choices, default, what: str, help: str = "") -> None:
    """``flag`` takes one or more of `choices` (space-separated); --help lists them all, and an unknown
    name is argparse's "invalid choice" error, which lists them too."""
    default = list(default)
    shown = "all" if default == list(choices) else " ".join(default)
    p.add_argument(flag, nargs="+", choices=list(choices), default=default, metavar=what.upper(),
                   help=f"{help + '; ' if help else ''}one or more of: %(choices)s (default: {shown})")


def _size(text: str) -> str | int:
    return int(text) if text.isdigit() else text


def _measurement_args(p: argparse.ArgumentParser, out: str, size: str, rounds: int) -> None:
    """The options `run` and `zoo` share: where, how big, how timed, where the files go."""
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--size", type=_size, default=size, help="tiny|small|medium|large or an int")
    p.add_argument("--dtype", choices=list(DTYPES), default="float32")
    p.add_argument("--out", default=out, help="output directory; {tag} becomes date_torch-version_device")
    p.add_argument("--min-seconds", type=float, default=0.5, help="CPU timing budget per measurement")
    p.add_argument("--rounds", type=int, default=rounds,
                   help="measure the compiled modes of a model in this many interleaved rounds (latency is "
                        "the median over rounds, latency_ms_runs keeps each): the run-to-run noise next to the "
                        "ratios")
    p.add_argument("--threads", type=int, default=None,
                   help="CPU intra-op threads (Inductor's C++ kernels use as many); 1 keeps timings "
                        "stable on a shared machine, where OpenMP threads stall behind other processes")
    p.add_argument("--latency-stat", choices=list(LATENCY_KEYS), default="median",
                   help="latency shown in report.md and plots (results.jsonl keeps both)")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__, epilog=(
        f"Models of run: {', '.join(REGISTRY)}. Models of zoo: {', '.join(ZOO)}. "
        f"Modes: {', '.join(MODES + CG_MODES)}. Settings of zoo: {', '.join(zoo_report.SETTINGS)}. "
        "`python -m bench run --help` tells more."))
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="benchmark models × modes × phases")
    _names(run, "--models", REGISTRY, REGISTRY, "model")
    _names(run, "--modes", MODES + CG_MODES, MODES, "mode", help="MODE_cg: MODE with CUDA graphs (--device cuda)")
    _measurement_args(run, "bench/out/{tag}", "small", 1)
    run.add_argument("--dynamic", action="store_true",
                     help="also run every compiled mode with the batch dim marked dynamic (rows 'MODE+dyn')")
    run.add_argument("--train", action=argparse.BooleanOptionalAction, default=True,
                     help="also measure a training step (forward + sum-loss backward)")
    run.add_argument("--no-infer", dest="infer", action="store_false",
                     help="the training step only (a big model's compiles may not all fit one session)")
    run.add_argument("--freezing", action="store_true",
                     help="Inductor's freezing (parameters folded into constants) for every mode; it "
                          "only applies to inference compiles, the training step is unchanged")
    run.add_argument("--save-outputs", action="store_true",
                     help="also save every mode's outputs and gradients under OUT/outputs/")
    zoo = sub.add_parser("zoo", help="full library models and ours under every setting: inference, training "
                                     "step, freezing, CUDA graphs")
    _names(zoo, "--models", ZOO, ZOO, "model")
    _names(zoo, "--modes", [m for m in MODES if m != "eager"], ("inductor", "eqsat"), "mode",
           help="compiled modes, inductor among them (the baseline); the cudagraphs setting runs each as MODE_cg")
    _names(zoo, "--settings", zoo_report.SETTINGS, zoo_report.SETTINGS, "setting", help="cudagraphs is skipped on CPU")
    _measurement_args(zoo, "bench/out/zoo_{tag}", "small", 3)
    rerender = sub.add_parser("report", help="rewrite report.md and plots of an earlier run from its results.jsonl "
                                             "(or results.jsonl.gz)")
    rerender.add_argument("dir", type=Path)
    rerender.add_argument("--latency-stat", choices=list(LATENCY_KEYS), default="median")
    sub.add_parser("demo", help="small CPU subset: inductor vs eqsat, inference only, one thread, minimum "
                                "latency (robust on a busy laptop or CI box); prints the table")
    return p


@dataclass
class Case:
    """One model and phase: its compiled modes (``(mode, dynamic)``), the runner's settings, and the
    row keys that tell it from the other cases of the model (the zoo's setting)."""

    model: str
    builder: Callable
    phase: str
    variants: list[tuple[str, bool]]
    settings: dict
    fields: dict = field(default_factory=dict)


def _start(args: argparse.Namespace) -> tuple[Path, dict, dict]:
    """Check the device and make the output folder; the run's metadata and the runner's settings."""
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: CUDA is not available on this machine; nothing was run")
    if args.threads:
        torch.set_num_threads(args.threads)
    tag = run_tag(args.device)
    out_dir = Path(args.out.format(tag=tag))
    out_dir.mkdir(parents=True, exist_ok=True)
    meta = {"tag": tag, "torch": torch.__version__, "device": args.device, "device_name": device_name(args.device),
            "size": args.size, "dtype": args.dtype, "threads": torch.get_num_threads(),
            "transformers": _version("transformers")}
    settings = {"size": args.size, "device": args.device, "dtype": DTYPES[args.dtype], "min_seconds": args.min_seconds,
                "rounds": args.rounds}
    return out_dir, meta, settings


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def run(args: argparse.Namespace) -> Path:
    """Run every case, streaming rows to results.jsonl; then write report.md and plots."""
    if args.device != "cuda" and any(m.endswith(CUDAGRAPHS) for m in args.modes):
        raise SystemExit("CUDA graphs (MODE_cg) need --device cuda")
    out_dir, meta, settings = _start(args)
    meta["freezing"] = settings["freezing"] = args.freezing
    phases = [p for p in PHASES if (p == "infer" and args.infer) or (p == "train" and args.train)]
    variants = [(m, d) for m in args.modes for d in ((False, True) if args.dynamic and m != "eager" else (False,))]
    cases = [Case(model, REGISTRY[model], phase, variants, settings) for model in args.models for phase in phases]
    write_outputs(_stream(cases, out_dir, meta, args.save_outputs), meta, out_dir, args.latency_stat)
    return out_dir


def zoo(args: argparse.Namespace) -> Path:
    """Every zoo model under every setting, model after model (a run cut short by a time limit still
    has every setting of the models it finished), modes interleaved within each setting."""
    if "inductor" not in args.modes:
        raise SystemExit("--modes must include inductor: every ratio in the zoo is against it")
    out_dir, meta, settings = _start(args)
    skipped = {s: why for s in args.settings if (why := zoo_report.unavailable(s, args.device))}
    for name, why in skipped.items():
        print(f"setting {name} skipped: {why}", file=sys.stderr)
    meta["skipped_settings"] = skipped
    cases = []
    for model in args.models:
        for name in (s for s in args.settings if s not in skipped):
            _, phase, frozen, suffix = zoo_report.SETTINGS[name]
            cases.append(Case(model, ZOO[model], phase, [(m + suffix, False) for m in args.modes],
                              {**settings, "freezing": frozen}, {"setting": name, "freezing": frozen}))
    write_outputs(_stream(cases, out_dir, meta, save_outputs=False), meta, out_dir, args.latency_stat)
    return out_dir


def _stream(cases: list[Case], out_dir: Path, meta: dict, save_outputs: bool) -> list[dict]:
    """Rows of every case, each written to results.jsonl as it comes (a run cut short keeps them)."""
    rows: list[dict] = []
    warm_up(list(dict.fromkeys(m for case in cases for m, _ in case.variants)), meta["device"])
    bar = tqdm(total=sum(len(case.variants) for case in cases), unit="case", file=sys.stderr)
    with open(out_dir / "results.jsonl", "w") as results:
        for case in cases:
            for row, outcome in _run_model_phase(case, bar):
                bar.update(1)
                row = {"model": case.model, **row, **meta, **case.fields}
                rows.append(row)
                results.write(json.dumps(row) + "\n")
                results.flush()
                if save_outputs and outcome is not None:
                    _save_outcome(out_dir, row, outcome)
    bar.close()
    return rows


META_KEYS = ("tag", "torch", "device", "device_name", "size", "dtype", "threads", "freezing", "transformers",
             "skipped_settings")


def write_outputs(rows: list[dict], meta: dict, out_dir: Path, latency_stat: str) -> None:
    render = zoo_report.render if any("setting" in row for row in rows) else report.render
    (out_dir / "report.md").write_text(render(rows, meta, latency_stat))
    plots.write_plots(rows, out_dir, LATENCY_KEYS[latency_stat])


def rerender(out_dir: Path, latency_stat: str) -> Path:
    """Report and plots again from results.jsonl (or the results.jsonl.gz a committed run keeps), e.g.
    with another latency statistic."""
    path = out_dir / "results.jsonl"
    if not path.exists() and path.with_suffix(".jsonl.gz").exists():
        path = path.with_suffix(".jsonl.gz")
    with (gzip.open if path.suffix == ".gz" else open)(path, "rt") as lines:
        rows = [json.loads(line) for line in lines if line.strip()]
    if not rows:
        raise SystemExit(f"{path} has no rows")
    write_outputs(rows, {k: rows[0].get(k) for k in META_KEYS}, out_dir, latency_stat)
    return out_dir


def _run_model_phase(case: Case, bar):
    """Rows of one model and phase. The static modes are compiled one after the other and kept, then
    timed in interleaved rounds (``runner.paired_latency``); then (``--dynamic``) each mode with a
    symbolic batch, compiled and timed on its own."""
    builder, phase, variants, settings = case.builder, case.phase, case.variants, case.settings
    try:
        reference = eager_reference(builder, phase, settings)
    except ModuleNotFoundError as err:  # e.g. transformers missing: skip the model, keep the run going
        for mode, dynamic in variants:
            _announce(bar, case, mode_label(mode, dynamic))
            yield {"mode": mode_label(mode, dynamic), "phase": phase, "status": "skipped", "reason": str(err)}, None
        return
    static = [mode for mode, dynamic in variants if not dynamic]
    dynamic = [mode for mode, dynamic in variants if dynamic]
    compat.reset_dynamo()
    compiled = []
    for mode in static:
        _announce(bar, case, mode)
        compiled.append(run_mode(builder, mode, phase, reference, {**settings, "keep_compiled": True}))
    yield from _timed(compiled, settings)
    for mode in dynamic:
        _announce(bar, case, mode_label(mode, True))
        yield from _timed([run_mode(builder, mode, phase, reference, {**settings, "dynamic": True})], settings)


def _timed(compiled: list[tuple], settings: dict):
    """(row, outcome) of every compiled mode, with latencies from interleaved rounds."""
    steps = {row["mode"]: step for row, _, step in compiled if step is not None}
    runs = paired_latency(steps, settings["device"], settings["rounds"], settings["min_seconds"])
    for row, outcome, _ in compiled:
        if row["mode"] in runs:
            row.update(latency_summary(runs[row["mode"]]))
        yield row, outcome


def _announce(bar: tqdm, case: Case, mode: str) -> None:
    """The bar's label: model/mode/phase, or model/mode/setting in the zoo (frozen and cudagraphs are
    inference too)."""
    bar.set_description(f"{case.model}/{mode}/{case.fields.get('setting', case.phase)}")


def _save_outcome(out_dir: Path, row: dict, outcome) -> None:
    folder = out_dir / "outputs"
    folder.mkdir(exist_ok=True)
    torch.save(outcome.to_saveable(), folder / f"{row['model']}.{row['mode']}.{row['phase']}.pt")


def main(argv: list[str] | None = None) -> None:
    warnings.filterwarnings("ignore", message="dynamo_pgo force disabled")
    args = parser().parse_args(argv)
    if args.command == "report":
        out_dir = rerender(args.dir, args.latency_stat)
        print((out_dir / "report.md").read_text())
        return
    if args.command == "demo":
        args = parser().parse_args(
            ["run", "--models", *DEMO_MODELS, "--modes", "inductor", "eqsat", "--no-train",
             "--threads", "1", "--latency-stat", "min", "--out", "bench/out/demo_{tag}"]
        )
    out_dir = zoo(args) if args.command == "zoo" else run(args)
    print((out_dir / "report.md").read_text())
    print(f"results in {out_dir}/")
