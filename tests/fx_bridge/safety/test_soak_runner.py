"""``bench.soak.pool.run_cases``: a case that hangs or kills its worker is reported lost, and the others
still come back (the lead's 10,000-case runs use many workers; one bad case must not stop them)."""
import os
import time

import pytest

from bench.soak.pool import run_cases


def _work(job):
    seed, train, what, _ = job
    if what == "hang":
        time.sleep(3600)
    if what == "die":
        os._exit(3)
    return {"seed": seed, "train": train, "problem": None, "problems": [], "fallbacks": [], "changed": 0}


@pytest.mark.slow  # spawns workers that import torch, and waits out one case's timeout
def test_a_hanging_case_and_a_dying_worker_lose_only_their_cases():
    jobs = [(0, False, "ok", None), (1, True, "hang", None), (2, False, "die", None),
            (3, True, "ok", None), (4, False, "ok", None)]
    results = {r["seed"]: r for r in run_cases(jobs, workers=2, case_timeout=60, memory_gb=None, work=_work)}
    assert sorted(results) == [0, 1, 2, 3, 4]
    assert [results[s]["problem"] for s in (0, 3, 4)] == [None, None, None]
    assert results[1]["problem"] == "lost" and "timed out" in results[1]["detail"], results[1]
    assert results[2]["problem"] == "lost" and "died" in results[2]["detail"], results[2]


_RESERVE_THEN_CAP = """
import mmap, sys
import torch
from bench.soak.pool import _limit_memory
reserved = mmap.mmap(-1, 8 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                     prot=0)  # address space held, no memory: as a CUDA build's driver holds it
_limit_memory(1.0)
torch.ones(2**26).sum()  # 256 MB: under the cap
try:
    torch.ones(2**29)  # 2 GB: over it
except (MemoryError, RuntimeError):
    sys.exit(0)
sys.exit(5)
"""


def test_the_memory_cap_counts_from_the_workers_own_address_space():
    """A worker that already holds 8 GB of address space (torch 2.11's CUDA build on a CPU soak: 726
    ``MemoryError`` crashes under a fixed 6 GB cap) can still run a case within ``--memory-gb``, and a
    case that goes past it still fails."""
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    done = subprocess.run([sys.executable, "-c", _RESERVE_THEN_CAP], cwd=root, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
