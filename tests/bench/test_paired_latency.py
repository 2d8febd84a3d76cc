"""The harness times the modes of a model side by side: interleaved rounds, and no shared code."""
import threading
import time

import torch

from bench import measure, runner
from bench.modes import compile_model
from bench import inductor_metrics
from eqsat_torch.inductor import compat


def test_rounds_interleave_every_mode_and_rotate_the_order():
    calls: list[str] = []
    steps = {name: (lambda name=name: calls.append(name)) for name in ("a", "b", "c")}
    runs = runner.paired_latency(steps, "cpu", rounds=3, min_seconds=0.0)
    assert {name: len(r) for name, r in runs.items()} == {"a": 3, "b": 3, "c": 3}
    order = [name for i, name in enumerate(calls) if i == 0 or calls[i - 1] != name]  # one entry per timing
    assert order == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]


def test_a_model_whose_every_mode_failed_has_nothing_to_time():
    assert runner.paired_latency({}, "cpu", rounds=3, min_seconds=0.0) == {}


def test_timing_waits_for_the_device_lock_another_process_holds(tmp_path, monkeypatch):
    """Harness processes sharing one GPU take turns timing (``BENCH_DEVICE_LOCK``)."""
    monkeypatch.setenv("BENCH_DEVICE_LOCK", str(tmp_path / "gpu.lock"))
    events: list[str] = []
    holding = threading.Event()

    def other_process():
        with measure.device_to_myself():   # its own open file: flock excludes it as another process
            events.append("other in")
            holding.set()
            time.sleep(0.3)
            events.append("other out")

    thread = threading.Thread(target=other_process)
    thread.start()
    assert holding.wait(timeout=30), "the other process never got the lock"
    runner.paired_latency({"a": lambda: events.append("timed")}, "cpu", rounds=1, min_seconds=0.0)
    thread.join()
    assert events.index("other out") < events.index("timed")


def test_summary_is_the_median_of_the_rounds_with_every_round_kept():
    runs = [{"latency_ms": t, "latency_min_ms": t - 0.5} for t in (3.0, 1.0, 2.0)]
    assert runner.latency_summary(runs) == {"latency_ms": 2.0, "latency_min_ms": 0.5,
                                            "latency_ms_runs": [3.0, 1.0, 2.0]}
    assert "latency_ms_runs" not in runner.latency_summary(runs[:1])


class _Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x).relu()


def test_two_inductor_modes_kept_alive_compile_their_own_programs():
    """Dynamo would hand the second instance the first one's code under one shared backend object,
    so Inductor+Optimus would be timed with Inductor's program."""
    compat.reset_dynamo()
    x = torch.randn(4, 8)
    compiled = {}
    for mode in ("inductor", "inductor_optimus"):
        with inductor_metrics.inductor_config_patch(mode), inductor_metrics.capture_output_code() as code:
            compiled[mode] = compile_model(mode, _Net()).fn
            compiled[mode](x)
        assert code, f"{mode} reused another mode's compiled code"
    with inductor_metrics.capture_output_code() as code:
        for fn in compiled.values():
            fn(x)
    assert not code  # and once compiled, each keeps its own


def test_a_mode_that_fails_to_compile_leaves_the_kept_modes_compiled(monkeypatch):
    """A reset after the failure would make the kept Inductor step recompile when it is timed, outside
    its mode's config (Inductor+Optimus would be timed without Optimus)."""
    from bench import modes

    real = modes.compile_model

    def failing_eqsat(mode, model):
        if mode == "eqsat":
            raise RuntimeError("backend broke")
        return real(mode, model)

    monkeypatch.setattr(runner, "compile_model", failing_eqsat)
    builder = lambda size, device, dtype: (_Net().to(device, dtype), (torch.randn(4, 8, device=device, dtype=dtype),))
    settings = {"size": "tiny", "device": "cpu", "dtype": torch.float32, "min_seconds": 0.0, "keep_compiled": True}
    reference = runner.eager_reference(builder, "infer", settings)
    compat.reset_dynamo()
    row, _, step = runner.run_mode(builder, "inductor", "infer", reference, settings)
    failed, _, none = runner.run_mode(builder, "eqsat", "infer", reference, settings)
    assert row["status"] == "ok" and failed["status"] == "error" and none is None
    with inductor_metrics.capture_output_code() as code:
        step()
    assert not code  # no recompile


def test_a_training_step_timer_runs_the_step_once_per_repeat():
    calls: list[int] = []
    ms = measure.median_step_ms(lambda: calls.append(1), "cpu", repeats=5)
    assert len(calls) == 5 and ms >= 0.0
