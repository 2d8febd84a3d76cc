"""The eqsat backend under DDP and FSDP2: two CPU processes (gloo), parameters after a few SGD steps
equal the same run in eager. Inductor variants compile in both processes: slow on a CI machine."""
import pytest
import torch.distributed as dist
import torch.multiprocessing as mp

import dist_worker

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs gloo")

WORLD = 2


def _spawn(worker, inner: str) -> None:
    mp.spawn(worker, args=(WORLD, dist_worker.free_port(), inner), nprocs=WORLD, join=True)


def test_ddp_pieces_match_eager():
    _spawn(dist_worker.ddp_worker, "eager")


@pytest.mark.slow
def test_ddp_inductor_matches_eager():
    _spawn(dist_worker.ddp_worker, "inductor")


@pytest.mark.slow
def test_fsdp2_matches_eager():
    _spawn(dist_worker.fsdp_worker, "eager")


@pytest.mark.slow
def test_fsdp2_inductor_matches_eager():
    _spawn(dist_worker.fsdp_worker, "inductor")
