"""Run one model under every requested mode and phase, producing one result row per combination.

Each combination compiles from scratch (Dynamo reset, caches off) so compile time and kernel counts
are cold numbers, then measures steady-state latency and compares outputs (and, for training,
parameter gradients) with eager on a fresh copy of the same seeded model.
"""

from __future__ import annotations

import statistics
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.utils._pytree import tree_leaves

from bench import measure
from bench.modes import CUDAGRAPHS, Compiled, base_mode, compile_model
from bench import inductor_metrics
from eqsat_torch.inductor import compat

PHASES = ("infer", "train")
DYNAMIC_SUFFIX = "+dyn"  # rows of a mode compiled with the batch dim marked dynamic


def mode_label(mode: str, dynamic: bool) -> str:
    return mode + DYNAMIC_SUFFIX if dynamic else mode


def mark_batch_dynamic(inputs: tuple) -> None:
    """Dim 0 of every tensor input symbolic from the first compile (``maybe_mark_dynamic``: a model
    that fixes its batch size gets a static graph instead of an error)."""
    for t in inputs:
        if isinstance(t, torch.Tensor) and t.dim() > 0:
            compat.maybe_mark_dynamic(t, 0)


@dataclass
class Outcome:
    """What one step produced: outputs, and parameter gradients (by name) for training."""

    outputs: list[torch.Tensor]
    grads: dict[str, torch.Tensor]

    def to_saveable(self) -> dict:
        return {"outputs": self.outputs, "grads": self.grads}


def training_inputs(inputs: tuple) -> tuple:
    """Float inputs become leaves that require grad, so the backward covers the whole graph
    (parameter-free models such as split_cat_64 still get a real backward)."""
    return tuple(t.detach().clone().requires_grad_() if _is_float_tensor(t) else t for t in inputs)


def make_step(fn: Callable, model: torch.nn.Module, inputs: tuple, phase: str) -> Callable[[], object]:
    """One inference call under no_grad, or one forward + sum-loss backward with fresh gradients."""
    if phase == "infer":
        def infer():
            with torch.no_grad():
                return fn(*inputs)
        return infer

    def train():
        for t in [*model.parameters(), *inputs]:
            if isinstance(t, torch.Tensor):
                t.grad = None
        out = fn(*inputs)
        sum(t.float().sum() for t in tree_leaves(out) if _is_float_tensor(t)).backward()
        return out
    return train


def _is_float_tensor(value) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point()


def _outcome(out, model: torch.nn.Module, inputs: tuple) -> Outcome:
    named = [*model.named_parameters(), *((f"input.{i}", t) for i, t in enumerate(inputs))]
    grads = {n: t.grad.detach().cpu() for n, t in named if isinstance(t, torch.Tensor) and t.grad is not None}
    return Outcome(measure.tensors(out), grads)


def _build(builder: Callable, phase: str, settings: dict) -> tuple[torch.nn.Module, tuple]:
    model, inputs = builder(settings["size"], device=settings["device"], dtype=settings["dtype"])
    return model, training_inputs(inputs) if phase == "train" else inputs


def _grad_error(actual: dict[str, torch.Tensor], expected: dict[str, torch.Tensor]) -> float | None:
    if not expected:
        return None
    if actual.keys() != expected.keys():
        return float("inf")
    names = sorted(expected)
    return measure.max_abs_error([actual[n] for n in names], [expected[n] for n in names])


def _summarize_reports(reports: list[dict]) -> dict:
    """Totals over the optimized graphs of one compile (forward and backward count separately)."""
    if not reports:
        return {}
    rules: Counter = Counter()
    for report in reports:
        rules.update({name: int(count) for name, count in (report.get("rules_fired") or {}).items()})

    def total(key):
        values = [r[key] for r in reports if r.get(key) is not None]
        return sum(values) if values else None

    return {
        "graphs_changed": sum(1 for r in reports if r.get("changed")),
        "graphs_skipped": sum(1 for r in reports if r.get("skipped")),
        "optimizer_s": total("optimizer_seconds"),
        "verify_s": sum((r.get("phase_seconds") or {}).get("verify", 0.0) for r in reports),
        "candidates_measured": sum(isinstance(n, int) for r in reports if r.get("cache") != "hit"  # a hit measured nothing
                                   for n in (r.get("inductor_launches") or {}).values()),
        "winners": [r["inductor_winner"] for r in reports if r.get("inductor_winner")],
        "egraph_nodes": total("egraph_nodes"),
        "cost_before": total("cost_before"),
        "cost_after": total("cost_after"),
        "rules_fired": dict(rules),
    }


def run_mode(builder: Callable, mode: str, phase: str, reference: Outcome, settings: dict
             ) -> tuple[dict, Outcome | None, Callable[[], object] | None]:
    """Compile, count and check one (model, mode, phase); never raises for a failing mode. Returns the
    row, what the step produced and the compiled step itself (None when it failed), which
    ``paired_latency`` times.
    ``settings["dynamic"]``: the batch dim is marked dynamic (the row's mode is ``MODE+dyn``);
    ``settings["keep_compiled"]``: no Dynamo reset first, so modes compiled earlier stay usable (each
    mode has its own backend object, so none reuses another's code; caches stay off)."""
    dynamic = bool(settings.get("dynamic"))
    row: dict = {"mode": mode_label(mode, dynamic), "phase": phase, "status": "ok", "shapes": (
        "dynamic" if dynamic else "static")}
    model, inputs = _build(builder, phase, settings)
    if dynamic:
        mark_batch_dynamic(inputs)
    row["params"] = sum(p.numel() for p in model.parameters())
    row["source"] = getattr(model, "source", type(model).__name__)  # the library and class (bench.models.zoo)
    keep = settings.get("keep_compiled")
    if not keep:
        compat.reset_dynamo()
    inductor_metrics.reset()
    try:
        with inductor_metrics.inductor_config_patch(base_mode(mode), freezing=settings.get("freezing", False)), \
                inductor_metrics.capture_output_code() as code:
            compiled: Compiled = compile_model(mode, model)
            step = make_step(compiled.fn, model, inputs, phase)
            start = time.perf_counter()
            out = step()
            measure.sync(settings["device"])
            first_call_s = time.perf_counter() - start
            if mode.endswith(CUDAGRAPHS):  # the first call warms up; the second records the graphs, the third replays
                step()
                out = step()
    except Exception as err:  # a failing compile is a result to report, not a harness crash
        if not keep:  # a reset would also drop the modes kept for timing: they would recompile unpatched
            compat.reset_dynamo()
        first_line = (str(err).strip().splitlines() or [""])[0][:300]
        reason = f"{type(err).__name__}: {first_line}"
        return {**row, "status": "error", "reason": reason, "traceback": traceback.format_exc()[-2000:]}, None, None

    outcome = _outcome(out, model, inputs)
    if mode != "eager":
        launches = inductor_metrics.launch_counts([_from_partitions(c) for c in code])
        row.update({f"kernels_{k}": v for k, v in launches.items()})
        row.update({f"inductor_count_{k}": v for k, v in inductor_metrics.kernel_counts().items()})
        row["compile_s"] = first_call_s
        row["counters"] = inductor_metrics.inductor_counters()
    row["graphs"] = compiled.collect_reports()
    row.update(_summarize_reports(row["graphs"]))
    row["max_abs_err"] = measure.max_abs_error(outcome.outputs, reference.outputs)
    row["max_abs_err_grad"] = _grad_error(outcome.grads, reference.grads)
    row["peak_mem_bytes"] = measure.peak_memory_bytes(step, settings["device"])
    return row, outcome, step


def _from_partitions(code: str) -> str:
    """A wrapper for ``launch_counts``, which counts what follows ``def call(``. With graph partitions
    (CUDA graphs turn them on) the kernels sit in ``partition_N`` functions defined before ``call``,
    which runs them: count from the first partition on."""
    start = code.find("def partition_")
    return code if start < 0 else "def call(" + code[start:]


def interleaved(steps: dict[str, Callable[[], object]], rounds: int, time_one: Callable) -> dict[str, list]:
    """``time_one(step)`` of every compiled mode, in ``rounds`` interleaved rounds whose order rotates,
    so drift in clocks and host load hits every mode alike. Small steps are bound by the host issuing
    launches, and two compiles timed minutes apart differ by more than the modes do; the spread of one
    mode over the rounds is the noise a ratio must beat."""
    names = list(steps)
    runs: dict[str, list] = {name: [] for name in names}
    for r in range(rounds if names else 0):   # every mode failed to compile: nothing to time
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            runs[name].append(time_one(steps[name]))
    return runs


def paired_latency(steps: dict[str, Callable[[], object]], device: str, rounds: int,
                   min_seconds: float) -> dict[str, list[dict]]:
    """``measure.latency`` of every compiled mode, in interleaved rounds (``interleaved``), holding the
    device to itself (``measure.device_to_myself``) for all of them."""
    with measure.device_to_myself():
        return interleaved(steps, rounds, lambda step: measure.latency(step, device, min_seconds))


def latency_summary(runs: list[dict]) -> dict:
    """A row's latency fields from its rounds: the median of the rounds' medians, the smallest minimum,
    and every round's median (``latency_ms_runs``) when there is more than one."""
    medians = [r["latency_ms"] for r in runs]
    summary = {"latency_ms": statistics.median(medians), "latency_min_ms": min(r["latency_min_ms"] for r in runs)}
    if len(runs) > 1:
        summary["latency_ms_runs"] = medians
    return summary


def warm_up(modes: list[str], device: str) -> None:
    """Compile a trivial function once per mode before measuring, so one-time start-up (imports,
    C++/Triton toolchain probes, egglog initialisation) is not charged to whichever model runs first."""
    x = torch.randn(8, 8, device=device)
    for mode in modes:
        if mode == "eager":
            continue
        with inductor_metrics.inductor_config_patch(base_mode(mode)):
            compile_model(mode, _Tiny()).fn(x)
    compat.reset_dynamo()


class _Tiny(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([p.relu() for p in x.split(4, dim=1)], dim=1).sum(0)


def eager_reference(builder: Callable, phase: str, settings: dict) -> Outcome:
    """Outputs and gradients of a fresh eager copy: what every mode must reproduce."""
    model, inputs = _build(builder, phase, settings)
    out = make_step(model, model, inputs, phase)()
    return _outcome(out, model, inputs)

