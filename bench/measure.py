"""Steady-state latency, peak memory and numerical error: the measurements that do not depend on mode."""

from __future__ import annotations

import fcntl
import os
import statistics
import time
from collections.abc import Callable
from contextlib import contextmanager

import torch
from torch.utils._pytree import tree_leaves


def latency_ms(step: Callable[[], object], device: str, min_seconds: float = 0.5) -> float:
    """Median milliseconds per call of `step` (see `latency`)."""
    return latency(step, device, min_seconds)["latency_ms"]


def latency(step: Callable[[], object], device: str, min_seconds: float = 0.5, max_reps: int = 200) -> dict:
    """Median (the headline number) and minimum milliseconds per call of an already-compiled `step`.

    CUDA uses Triton's `do_bench` (flushes L2, syncs correctly); CPU times single calls, repeating
    until `min_seconds` have passed so fast steps are not dominated by timer noise. The minimum is
    kept because on a shared CPU the median absorbs other processes' load.
    """
    if device == "cuda":
        return _cuda_latency_ms(step)
    for _ in range(3):
        step()
    times: list[float] = []
    deadline = time.perf_counter() + min_seconds
    while len(times) < 5 or (time.perf_counter() < deadline and len(times) < max_reps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return {"latency_ms": 1e3 * statistics.median(times), "latency_min_ms": 1e3 * min(times)}


def _cuda_latency_ms(step: Callable[[], object]) -> dict:
    try:
        from triton.testing import do_bench
    except ImportError:
        return _cuda_event_latency_ms(step)
    return {"latency_ms": float(do_bench(step, return_mode="median")),
            "latency_min_ms": float(do_bench(step, return_mode="min"))}


def _cuda_event_latency_ms(step: Callable[[], object], reps: int = 50) -> dict:
    for _ in range(5):
        step()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        sync("cuda")
        times.append(start.elapsed_time(end))
    return {"latency_ms": statistics.median(times), "latency_min_ms": min(times)}


@contextmanager
def device_to_myself():
    """Hold the file lock named by ``BENCH_DEVICE_LOCK`` (no lock when unset) while timing: several
    harness processes then compile in parallel on the host's cores, but only one times on the GPU at
    a time. Without it, four processes sharing an H200 gave rounds of one row 0.47, 0.60 and 0.99 ms."""
    path = os.environ.get("BENCH_DEVICE_LOCK")
    if not path:
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def median_step_ms(step: Callable[[], object], device: str | torch.device, repeats: int) -> float:
    """Median wall milliseconds of ``step`` (an optimizer step, say), synced before and after each:
    the training-step timers' one loop."""
    times = []
    for _ in range(repeats):
        sync(device)
        t0 = time.perf_counter()
        step()
        sync(device)
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def sync(device: str | torch.device) -> None:
    """Wait for the device to finish what was queued (a no-op on CPU); every timer in bench/ syncs
    through this one, so "cuda", "cuda:1" and a torch.device all mean the same thing everywhere."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def peak_memory_bytes(step: Callable[[], object], device: str) -> int | None:
    """CUDA memory one steady-state step allocates at its peak above what was resident before it
    (activations, workspaces, outputs, gradients; not the weights, nor other modes kept alive for
    interleaved timing); None on CPU (no allocator statistics there)."""
    if device != "cuda":
        return None
    sync(device)
    resident = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    step()
    sync(device)
    return int(torch.cuda.max_memory_allocated() - resident)


def tensors(value) -> list[torch.Tensor]:
    """Every tensor in a (possibly nested) model output, detached and on CPU, in a stable order."""
    return [t.detach().cpu() for t in tree_leaves(value) if isinstance(t, torch.Tensor)]


def max_abs_error(actual: list[torch.Tensor], expected: list[torch.Tensor]) -> float:
    """Largest elementwise |actual - expected| over matching tensors (inf if structure differs)."""
    if len(actual) != len(expected) or any(a.shape != e.shape for a, e in zip(actual, expected)):
        return float("inf")
    errors = [(a.double() - e.double()).abs().max().item() for a, e in zip(actual, expected) if a.numel()]
    return max(errors, default=0.0)
