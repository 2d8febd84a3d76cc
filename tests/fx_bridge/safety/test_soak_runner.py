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
