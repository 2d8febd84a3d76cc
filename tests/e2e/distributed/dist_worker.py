"""Worker processes for the distributed tests: the same few SGD steps eager and compiled with the
eqsat backend, under DDP (Dynamo's DDPOptimizer splits the graph at bucket boundaries and calls the
backend once per piece) or FSDP2 (``fully_shard``); each rank asserts its parameters match, and what
the optimizer did (under DDP it removes the cat that re-joins the split pieces)."""
from __future__ import annotations

import copy
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn

from optimized import assert_no_fallback

STEPS = 3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Tower(nn.Module):
    """Split features, per-piece MLPs, cat, a residual that re-joins the pieces, head. Over 1 MiB of parameters, so with 1 MiB buckets (the
    smallest DDPOptimizer accepts: its first bucket is 1 MiB) the graph is split in pieces."""

    def __init__(self, d=512, pieces=4):
        super().__init__()
        self.pieces = pieces
        self.inner = nn.ModuleList(nn.Linear(d // pieces, d // pieces) for _ in range(pieces))
        self.head = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 4))

    def forward(self, x):
        parts = x.split(x.shape[1] // self.pieces, 1)
        gated = torch.cat([torch.sigmoid(f(p)) * p for f, p in zip(self.inner, parts)], 1)
        return self.head(gated + torch.cat(parts, 1))


def _setup(rank: int, world: int, port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)


def _train(model: nn.Module, fn, rank: int) -> list[torch.Tensor]:
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(100 + rank)
    for _ in range(STEPS):
        x = torch.randn(8, 512, generator=g)
        opt.zero_grad()
        fn(x).square().mean().backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


def _local(p: torch.Tensor) -> torch.Tensor:
    return p.full_tensor() if hasattr(p, "full_tensor") else p


def ddp_worker(rank: int, world: int, port: int, inner: str) -> None:
    from torch.nn.parallel import DistributedDataParallel as DDP

    from eqsat_torch import eqsat_backend

    _setup(rank, world, port)
    try:
        torch.manual_seed(0)
        base = Tower()
        eager = DDP(copy.deepcopy(base), bucket_cap_mb=1)
        compiled_model = DDP(copy.deepcopy(base), bucket_cap_mb=1)
        backend = eqsat_backend(inner=inner)
        expected = _train(eager, eager, rank)
        actual = _train(compiled_model, torch.compile(compiled_model, backend=backend), rank)
        for a, e in zip(actual, expected):
            torch.testing.assert_close(a, e, rtol=1e-4, atol=1e-5)
        assert len(backend.reports) >= 2, "DDPOptimizer should split the graph at bucket boundaries"
        for report in backend.reports:
            assert_no_fallback(report)
        assert any(r.rules_used.get("cat_split_all") for r in backend.reports), [r.summary() for r in backend.reports]
    finally:
        dist.destroy_process_group()


def fsdp_worker(rank: int, world: int, port: int, inner: str) -> None:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    from eqsat_torch import eqsat_backend

    _setup(rank, world, port)
    try:
        mesh = init_device_mesh("cpu", (world,))
        torch.manual_seed(0)
        base = Tower()
        models = []
        for _ in range(2):
            m = copy.deepcopy(base)
            for layer in m.inner:
                fully_shard(layer, mesh=mesh)
            fully_shard(m, mesh=mesh)
            models.append(m)
        backend = eqsat_backend(inner=inner)
        expected = _train(models[0], models[0], rank)
        actual = _train(models[1], torch.compile(models[1], backend=backend), rank)
        for a, e in zip(actual, expected):
            torch.testing.assert_close(_local(a), _local(e), rtol=1e-4, atol=1e-5)
        # Dynamo does not trace into the sharded modules (their hooks run eagerly): the one graph it
        # hands over is the split before them, with nothing to rewrite. It must still not fall back.
        (report,) = backend.reports
        assert_no_fallback(report)
        assert not report.changed and report.graph_nodes < 10, report.summary()
    finally:
        dist.destroy_process_group()
