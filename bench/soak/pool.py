"""Running many cases in worker processes: one case at a time each, a timeout and a memory cap per
worker, a lost case recorded as ``lost``."""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import multiprocessing
import multiprocessing.connection
import os
import time
from typing import Callable

import torch

from bench.soak.check import run_case
from eqsat_torch.inductor import compat


# -- the command --------------------------------------------------------------------------------------
def _address_space() -> int:
    """This process's virtual size in bytes (``VmSize``), what ``RLIMIT_AS`` counts."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))


def _memory_cap(gb: float | None) -> int | None:
    """The address-space cap of a worker: ``gb`` above what it holds before its first case. Not ``gb``
    in all: a CUDA build maps gigabytes of libraries, and its driver, started by any case
    (``cudaGetDeviceCount`` in a backward), reserves more; under a fixed 6 GB cap 726 of 5,000 cases
    of a CPU soak on an H100 machine (torch 2.11) crashed with ``MemoryError``. So the driver is
    started first, on a build with one, and its reservation counted in the baseline."""
    if not gb:
        return None
    if torch.version.cuda or torch.version.hip:
        torch.cuda.is_available()
    return _address_space() + int(gb * 2**30)


def _limit_memory(gb: float | None) -> None:
    limit = _memory_cap(gb)
    if limit is not None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _worker(args):
    seed, train, device, inductor, contexts = args
    torch.set_num_threads(1)
    os.environ["EQSAT_CACHE"] = "0"  # every case runs the optimizer: no graph comes from eqsat_torch.cache
    if inductor:
        import torch._inductor.config as inductor_config

        inductor_config.compile_threads = 1      # one process per core already
        inductor_config.fx_graph_cache = False   # every case runs the post-grad pass, none is a cache hit
    logging.getLogger("eqsat").setLevel(logging.ERROR)   # fallbacks are counted, not printed
    logging.getLogger("torch").setLevel(logging.CRITICAL)
    compat.skip_guard_latency_profile()            # telemetry only: 7 % of a case's CPU
    t0, cpu0 = time.perf_counter(), time.process_time()
    try:
        result = run_case(seed, train, device=device, inductor=inductor, contexts=contexts)
    except Exception as e:  # noqa: BLE001 — never lose the other cases over one
        result = {"seed": seed, "train": train, "mode": "?", "problem": "crash", "problems": [],
                  "detail": f"soak itself: {type(e).__name__}: {e}", "features": {}, "redrawn": 0,
                  "fallbacks": [], "changed": 0}
    result["seconds"] = round(time.perf_counter() - t0, 2)
    result["cpu_seconds"] = round(time.process_time() - cpu0, 3)  # the box may be shared: wall is not the cost
    return result


def _serve(conn, memory_gb: float | None, work: Callable = _worker) -> None:
    """A worker process: cases in, results out, until told to stop (None)."""
    _limit_memory(memory_gb)
    while (job := conn.recv()) is not None:
        conn.send(work(job))


def _lost(job, why: str) -> dict:
    seed, train = job[:2]
    return {"seed": seed, "train": train, "mode": "?", "problem": "lost", "problems": [("lost", why)],
            "detail": f"{why} (rerun it with --case {seed}{' --train' if train else ''})", "features": {},
            "redrawn": 0, "fallbacks": [], "changed": 0}


@dataclasses.dataclass
class _Slot:
    proc: multiprocessing.Process
    conn: object
    job: tuple | None = None
    started: float = 0.0
    served: int = 0


def run_cases(jobs: list[tuple], workers: int, case_timeout: float, memory_gb: float | None,
              recycle: int = 1000, work: Callable = _worker):
    """Yield a result per job, as cases end, from ``workers`` processes, each running one case at a
    time: a case running past ``case_timeout`` seconds has its process killed, one whose process
    dies (out of memory, a crash in native code) is reported lost; either way a fresh process takes
    the next case, so one bad case never stops the soak. A process is replaced after ``recycle``
    cases (compile caches grow: ~0.2 MB a case on CPU, no slower after 200 cases; a new process costs
    ~4.5 s of CPU, imports and the first compile). ``work`` (importable by name) turns a job into its result."""
    ctx = multiprocessing.get_context("spawn")
    todo = list(reversed(jobs))
    slots: list[_Slot] = []

    def spawn() -> _Slot:
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_serve, args=(child, memory_gb, work), daemon=True)
        proc.start()
        child.close()
        return _Slot(proc, parent)

    def retire(slot: _Slot, kill: bool) -> None:
        if kill:
            slot.proc.kill()
        else:
            with contextlib.suppress(OSError):
                slot.conn.send(None)
        slot.proc.join(5)
        if slot.proc.is_alive():
            slot.proc.kill()
            slot.proc.join()
        slot.conn.close()

    try:
        slots = [spawn() for _ in range(min(workers, len(jobs)))]
        while todo or any(s.job for s in slots):
            for k, s in enumerate(slots):
                if s.job is None and todo:
                    if s.served >= recycle:
                        retire(s, kill=False)
                        s = slots[k] = spawn()
                    s.job, s.started = todo.pop(), time.monotonic()
                    s.conn.send(s.job)
            busy = [s for s in slots if s.job]
            ready = multiprocessing.connection.wait([s.conn for s in busy] + [s.proc.sentinel for s in busy], timeout=1.0)
            now = time.monotonic()
            for k, s in enumerate(slots):
                if s.job is None:
                    continue
                result = None
                if s.conn in ready:
                    try:
                        result = s.conn.recv()
                    except (EOFError, OSError):
                        result = _lost(s.job, f"its worker died (exit code {s.proc.exitcode}; out of memory?)")
                elif s.proc.sentinel in ready or not s.proc.is_alive():
                    result = _lost(s.job, f"its worker died (exit code {s.proc.exitcode}; out of memory?)")
                elif now - s.started > case_timeout:
                    result = _lost(s.job, f"timed out after {case_timeout:.0f} s")
                if result is None:
                    continue
                s.job, s.served = None, s.served + 1
                if result["problem"] == "lost":
                    retire(s, kill=True)
                    slots[k] = spawn()
                yield result
    finally:
        for s in slots:
            retire(s, kill=True)
