"""Data-parallel training step time and kernels: Inductor alone vs eqsat (both passes) under DDP.

    torchrun --nproc_per_node 2 -m bench.scripts.ddp_bench --models dlrm recsys_tower --size small

Each rank builds the same bench model, wraps it in ``DistributedDataParallel`` (NCCL on CUDA, gloo on
CPU) and compiles it; Dynamo's DDPOptimizer splits the graph at bucket boundaries and calls the
backend per piece. Rank 0 prints, per model and mode, the kernels of the first step (forward and
backward, summed over pieces), the median step time (forward, backward with gradient all-reduce, SGD)
and the max difference of the parameters after the timed steps against the eager DDP run.
"""
from __future__ import annotations

import argparse
import copy
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from bench import tables
from bench.measure import median_step_ms
from bench.scripts.train_step import backend_for, build, loss_of, training_inputs
from bench import inductor_metrics as im
from eqsat_torch.inductor import compat

MODES = ("eager", "inductor", "inductor_optimus", "eqsat")


def run(name: str, mode: str, size: str, device: torch.device, steps: int, bucket_mb: float):
    model, inputs = build(name, size, device)
    model = DDP(copy.deepcopy(model), device_ids=[device.index] if device.type == "cuda" else None,
                bucket_cap_mb=bucket_mb)
    inputs = training_inputs(inputs)
    fn = model if mode == "eager" else torch.compile(model, backend=backend_for(mode))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    with im.inductor_config_patch("inductor" if mode == "eager" else mode):
        im.reset()
        loss = loss_of(fn(*inputs))
        fwd = im.kernel_counts()
        loss.backward()
        total = im.kernel_counts()
    opt.step()
    def step():
        opt.zero_grad(set_to_none=True)
        loss_of(fn(*inputs)).backward()
        opt.step()

    step_ms = median_step_ms(step, device, steps)
    params = [p.detach().float().cpu() for p in model.parameters()]
    return fwd, {k: total[k] - fwd[k] for k in total}, step_ms, params


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="+", default=["dlrm", "recsys_tower", "dhen"])
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    ap.add_argument("--size", default="small")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--bucket-mb", type=float, default=25.0, help="DDP bucket size (DDP's default: 25)")
    args = ap.parse_args(argv)
    cuda = torch.cuda.is_available()
    local = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device("cuda", local) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if cuda else "gloo")
    rank = dist.get_rank()
    if rank == 0:
        print(f"world {dist.get_world_size()}, {device.type}, size {args.size}, bucket {args.bucket_mb} MiB")
        print("\n".join(tables.header(["model", "mode", "fwd kernels (gen+extern)", "bwd kernels (gen+extern)",
                                        "step ms", "max param diff vs eager"])))
    try:
        for name in args.models:
            reference = None
            for mode in ("eager",) + tuple(m for m in args.modes if m != "eager"):
                compat.reset_dynamo()
                fwd, bwd, ms, params = run(name, mode, args.size, device, args.steps, args.bucket_mb)
                reference = reference or params
                diff = max(float((a - b).abs().max()) for a, b in zip(params, reference))
                k = lambda c: f"{c['total']} ({c['generated']}+{c['extern']})"
                if rank == 0 and mode in args.modes:
                    print(tables.row([name, mode, k(fwd), k(bwd), f"{ms:.2f}", f"{diff:.2e}"]), flush=True)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
