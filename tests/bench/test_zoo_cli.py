"""`python -m bench zoo` end to end on CPU: tiny models, one round; the CUDA-graph setting is skipped
with its reason, every other setting's rows match eager and land in results.jsonl and report.md."""

import importlib.util
import json

import pytest
import torch

from bench.cli import main

CG_REASON = "CUDA graphs need a CUDA device (--device cuda)"


def _zoo(out, models: list[str], *extra: str) -> list[dict]:
    main(["zoo", "--models", *models, "--size", "tiny", "--rounds", "1", "--min-seconds", "0.02",
          "--out", str(out), *extra])
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def _check_rows(rows: list[dict]) -> None:
    for row in rows:
        assert row["status"] == "ok", row.get("traceback", row)
        assert row["max_abs_err"] < 1e-4 and (row["max_abs_err_grad"] or 0) < 1e-3, row
        assert row["kernels_total"] > 0 and row["compile_s"] > 0 and row["latency_ms"] > 0
        assert row["freezing"] is (row["setting"] == "frozen")
        assert row["skipped_settings"] == {"cudagraphs": CG_REASON}


def test_zoo_on_cpu_writes_every_setting_but_cuda_graphs(tmp_path, capsys):
    """Progress is tqdm's bar on stderr. The report re-renders from results.jsonl alone."""
    out = tmp_path / "zoo"
    rows = _zoo(out, ["ten_unequal_linears"], "--settings", "infer", "frozen", "cudagraphs")
    assert [(r["setting"], r["mode"]) for r in rows] == [
        ("infer", "inductor"), ("infer", "eqsat"), ("frozen", "inductor"), ("frozen", "eqsat")]
    _check_rows(rows)
    infer = {r["mode"]: r for r in rows if r["setting"] == "infer"}
    # the ten linears fuse into fewer C++ calls, not fewer loop nests: Inductor decides (on the CPU by
    # loop nests) and eqsat's program is never more than Inductor's
    assert infer["eqsat"]["kernels_total"] <= infer["inductor"]["kernels_total"]

    stderr = capsys.readouterr().err
    assert f"setting cudagraphs skipped: {CG_REASON}" in stderr
    assert "| 0/4 [" in stderr and "ten_unequal_linears/eqsat/frozen: 100%" in stderr and "| 4/4 [" in stderr
    text = (out / "report.md").read_text()
    assert f"`cudagraphs` was not run: {CG_REASON}." in text
    assert "| infer | eqsat | 1 |" in text and "| frozen | eqsat | 1 |" in text
    assert "## Inference (infer)" in text and "## Inference with Inductor's freezing" in text
    assert "| ten_unequal_linears | UnequalLinears |" in text
    assert infer["eqsat"]["verify_s"] > 0 and infer["eqsat"]["candidates_measured"] >= 2  # a CPU compile too
    assert "| ten_unequal_linears | infer | eqsat |" in text
    if importlib.util.find_spec("matplotlib"):
        assert (out / "speedup_vs_inductor.png").exists() and (out / "kernels_frozen.png").exists()
    (out / "report.md").unlink()
    main(["report", str(out)])
    assert (out / "report.md").read_text() == text


def test_zoo_needs_inductor_among_the_modes(tmp_path):
    with pytest.raises(SystemExit, match="must include inductor"):
        main(["zoo", "--models", "ten_unequal_linears", "--modes", "eqsat", "--out", str(tmp_path)])
    assert not (tmp_path / "results.jsonl").exists()


@pytest.mark.slow
def test_zoo_default_settings_with_a_library_model(tmp_path):
    """GPT-2 from transformers and the two-stage split-cat: inference, training step and freezing."""
    pytest.importorskip("transformers")
    rows = _zoo(tmp_path, ["gpt2", "split_cat_two_stage"])
    assert {(r["model"], r["setting"], r["mode"]) for r in rows} == {
        (m, s, mode) for m in ("gpt2", "split_cat_two_stage") for s in ("infer", "train", "frozen")
        for mode in ("inductor", "eqsat")}
    _check_rows(rows)
    assert all(r["phase"] == ("train" if r["setting"] == "train" else "infer") for r in rows)
    text = (tmp_path / "report.md").read_text()
    assert "## Training step" in text and "| train | eqsat | 2 |" in text


def test_a_cuda_graph_mode_that_fails_when_recording_is_a_row_not_a_crash(monkeypatch):
    """CUDA graph trees run a function once, record it at the second call and replay it at the third:
    Mixtral's experts (transformers 5.x, a host copy inside the capture) fail at the second. The runner
    makes all three calls where a failure becomes the row's error."""
    from bench import runner
    from bench.models import ZOO
    from bench.modes import Compiled

    def compile_model(mode, model):
        calls = []

        def fn(*inputs):
            calls.append(1)
            if len(calls) == 2:
                raise RuntimeError("Cannot copy between CPU and CUDA tensors during CUDA graph capture")
            return model(*inputs)
        return Compiled(fn)

    monkeypatch.setattr(runner, "compile_model", compile_model)
    settings = {"size": "tiny", "device": "cpu", "dtype": torch.float32, "keep_compiled": True}
    builder = ZOO["ten_unequal_linears"]
    reference = runner.eager_reference(builder, "infer", settings)
    row, outcome, step = runner.run_mode(builder, "eqsat_cg", "infer", reference, settings)
    assert (row["status"], outcome, step) == ("error", None, None)
    assert "during CUDA graph capture" in row["reason"]


def test_launches_in_graph_partitions_are_counted():
    """With CUDA graphs Inductor puts the kernels in ``partition_N`` functions that ``call`` runs."""
    from bench import runner
    from bench import inductor_metrics

    code = ("triton_poi_fused_0 = async_compile.triton('triton_poi_fused_0', '''...''')\n"
            "def partition_0(args):\n    triton_poi_fused_0.run(buf0)\n    buf1 = extern_kernels.mm(buf0, w)\n"
            "class Runner:\n    def call(self, args):\n        (buf1,) = self.partitions[0](partition0_args)\n"
            "        triton_poi_fused_1.run(buf1)\n")
    assert inductor_metrics.launch_counts([code])["total"] == 1  # only what follows `def call(`
    assert inductor_metrics.launch_counts([runner._from_partitions(code)]) == {"generated": 2, "extern": 1,
                                                                                "total": 3}


@pytest.mark.slow
def test_zoo_compile_overhead_table_with_inductor_deciding(tmp_path, monkeypatch):
    """The eqsat mode with the GPU model and Inductor deciding on this CPU (a fake H200): the rows
    carry the measuring's seconds, the programs measured and the winner, and report.md tabulates
    them beside Inductor alone's compile."""
    import eqsat_torch.backend
    from eqsat.cost import CostModel

    real = eqsat_torch.backend.eqsat_backend
    monkeypatch.setattr(eqsat_torch.backend, "eqsat_backend",
                        lambda **kw: real(cost=CostModel.for_device("cuda"), verify=True, cache=False, seconds=600, **kw))
    rows = _zoo(tmp_path, ["ten_unequal_linears"], "--settings", "infer")
    eqsat = next(r for r in rows if r["mode"] == "eqsat")
    assert eqsat["status"] == "ok" and eqsat["max_abs_err"] < 1e-4, eqsat.get("traceback", eqsat)
    assert eqsat["verify_s"] > 0 and eqsat["candidates_measured"] >= 2 and eqsat["winners"], eqsat
    section = (tmp_path / "report.md").read_text().split("## Compile time: eqsat beside Inductor alone")[1]
    row = _cells(section, "| ten_unequal_linears | infer | eqsat |")
    assert row[8] == str(eqsat["candidates_measured"]) and row[9] == ", ".join(eqsat["winners"])
    assert float(row[7]) == pytest.approx(100 * eqsat["verify_s"] / next(
        r for r in rows if r["mode"] == "inductor")["compile_s"], abs=0.5)
    assert "Median over the rows that measured" in section


def _cells(text: str, prefix: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith(prefix))
    return [c.strip() for c in line.split("|")[1:-1]]
