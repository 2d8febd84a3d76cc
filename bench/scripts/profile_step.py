"""Where a step's time goes under each mode: host time to enqueue it, GPU kernel time, and the kernels.

    python -m bench.scripts.profile_step --device cuda --models llama --modes inductor eqsat --rounds 5

A latency that differs while the launch count does not (or moves the other way) has one of two
causes: the host takes longer to issue the step (Python wrapper, allocations, extern-call set-up) or
the GPU takes longer to run it (a slower kernel, more bytes). Every mode is compiled once, then all
are measured in interleaved rounds, so clock and load drift hit them alike; the spread over rounds
is the noise a difference must beat. Per round and mode: ``wall`` (synchronised step, median of
``--steps``), ``enqueue`` (the same call without waiting for the GPU), and from `torch.profiler` the
GPU kernel time per step and the kernels that take it.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from bench.models import REGISTRY
from bench.modes import compile_model
from bench.measure import sync
from bench.runner import interleaved, make_step, training_inputs
from bench import inductor_metrics
from eqsat_torch.inductor import compat


def host_times(step, device: str, steps: int) -> tuple[float, float]:
    """Median ms of a synchronised step, and of the call alone (the host's share)."""
    walls, enqueues = [], []
    for _ in range(steps):
        sync(device)
        start = time.perf_counter()
        step()
        issued = time.perf_counter()
        sync(device)
        walls.append(time.perf_counter() - start)
        enqueues.append(issued - start)
    return 1e3 * statistics.median(walls), 1e3 * statistics.median(enqueues)


def kernel_times(step, device: str, steps: int) -> dict[str, tuple[int, float]]:
    """Kernel name -> (launches per step, GPU µs per step), from the profiler's device events."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(steps):
            step()
        sync(device)
    kernels: dict[str, tuple[int, float]] = {}
    for e in prof.key_averages():
        if e.device_type == torch.autograd.DeviceType.CUDA and e.self_device_time_total > 0:
            kernels[e.key] = (round(e.count / steps), e.self_device_time_total / steps)
    return kernels


def profile(name: str, modes: list[str], args) -> None:
    phase = "train" if args.train else "infer"
    compat.reset_dynamo()
    steps = {}
    for mode in modes:  # no reset in between: each mode keeps its compiled code (Dynamo guards on the backend)
        model, inputs = REGISTRY[name](args.size, device=args.device)
        if args.train:
            inputs = training_inputs(inputs)
        with inductor_metrics.inductor_config_patch(mode, freezing=args.freezing):
            step = make_step(compile_model(mode, model.train(args.train)).fn, model, inputs, phase)
            for _ in range(3):
                step()
        steps[mode] = step
    rows = interleaved(steps, args.rounds, lambda step: host_times(step, args.device, args.steps))
    print(f"== {name} / {phase}{' / freezing' if args.freezing else ''}: wall ms, enqueue ms per round")
    for mode in modes:
        walls = [w for w, _ in rows[mode]]
        print(f"  {mode:18s} wall {statistics.median(walls):.3f} (rounds {min(walls):.3f}..{max(walls):.3f})"
              f"  enqueue {statistics.median(e for _, e in rows[mode]):.3f}")
    if args.device != "cuda":
        return
    for mode in modes:
        kernels = kernel_times(steps[mode], args.device, args.steps)
        total = sum(us for _, us in kernels.values())
        print(f"  {mode}: GPU {total:.1f} µs/step in {sum(n for n, _ in kernels.values())} kernels")
        for key, (n, us) in sorted(kernels.items(), key=lambda kv: -kv[1][1])[:args.top]:
            print(f"    {us:8.1f} µs  x{n}  {key[:110]}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", required=True)
    ap.add_argument("--modes", nargs="+", default=["inductor", "eqsat"])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--size", default="small")
    ap.add_argument("--train", action="store_true")
    ap.add_argument("--freezing", action="store_true")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args(argv)
    for name in args.models:
        try:
            profile(name, args.modes, args)
        except Exception as e:  # a diagnostic: report and go on
            print(f"== {name}: {type(e).__name__}: {str(e)[:300]}")


if __name__ == "__main__":
    main()
