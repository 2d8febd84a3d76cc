"""End to end: the CLI compiles a tiny model under each mode on CPU, writes its files, and every
mode reproduces eager outputs and gradients."""

import importlib
import json
import os
import re
import subprocess
import sys

import pytest
import torch

from bench.cli import main, parser


def _eqsat_backend_missing() -> bool:
    try:
        importlib.import_module("eqsat_torch.backend").eqsat_backend
    except (ImportError, AttributeError):
        return True
    return False


def _run_and_check(tmp_path, modes: list[str], device: str = "cpu", dynamic: bool = False):
    out = tmp_path / "run"
    main(["run", "--models", "recsys_tower", "--modes", *modes, "--size", "tiny", "--device", device,
          "--min-seconds", "0.05", "--out", str(out), "--save-outputs"] + (["--dynamic"] if dynamic else []))
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    labels = modes + [f"{m}+dyn" for m in modes if dynamic and m != "eager"]
    assert {(r["mode"], r["phase"]) for r in rows} == {(m, p) for m in labels for p in ("infer", "train")}
    report = (out / "report.md").read_text()
    assert "## Inference" in report and "## Training step" in report and "geomean" in report
    assert (out / "kernels_infer.png").exists() or importlib.util.find_spec("matplotlib") is None

    for row in rows:
        if row["status"] == "skipped" and row["mode"].startswith("eqsat"):
            assert _eqsat_backend_missing(), row["reason"]  # only a missing backend may skip a mode
            continue
        assert row["status"] == "ok", row.get("traceback", row)
        assert row["latency_ms"] > 0
        assert (row["peak_mem_bytes"] or 0) > 0 if device == "cuda" else row["peak_mem_bytes"] is None
        if row["mode"] != "eager":
            assert row["kernels_total"] > 0 and row["compile_s"] > 0
        saved = torch.load(out / "outputs" / f"recsys_tower.{row['mode']}.{row['phase']}.pt")
        eager = torch.load(out / "outputs" / f"recsys_tower.eager.{row['phase']}.pt")
        torch.testing.assert_close(saved["outputs"], eager["outputs"], rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(saved["grads"], eager["grads"], rtol=1e-4, atol=1e-5)
        if row["phase"] == "train":
            assert set(saved["grads"]) >= {"input.0", "tower.0.weight"}
    return rows


@pytest.mark.slow
@pytest.mark.full  # ~120 s of CPU; symbolic graphs through the passes are the fast tier's tests/fx_bridge/inductor/post_grad/test_dynamic.py
def test_cli_dynamic_rows_sit_next_to_static_ones(tmp_path):
    """``--dynamic``: each compiled mode again with a symbolic batch dim, matching eager, optimized by
    eqsat (no graph skipped), and reported next to its static row."""
    rows = _run_and_check(tmp_path, ["eager", "inductor", "eqsat"], dynamic=True)
    for row in rows:
        if row["mode"] == "eqsat+dyn":
            assert row["graphs"] and not any(g.get("skipped") for g in row["graphs"]), row["graphs"]
            assert row["graphs_changed"] > 0, row["graphs"]
    report = (tmp_path / "run" / "report.md").read_text()
    assert report.index("| recsys_tower | eqsat |") < report.index("| recsys_tower | eqsat+dyn |")


@pytest.mark.slow  # ~120 s of CPU; the fast tier's CLI run end to end is test_zoo_cli's (inductor and eqsat)
def test_cli_every_mode_matches_eager(tmp_path):
    _run_and_check(tmp_path, ["eager", "inductor", "inductor_optimus", "eqsat_greedy", "eqsat"])


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cli_every_mode_matches_eager_on_cuda(tmp_path):
    _run_and_check(tmp_path, ["eager", "inductor", "inductor_optimus", "eqsat_greedy", "eqsat"], device="cuda")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_cuda_request_without_cuda_stops_with_a_message(tmp_path):
    with pytest.raises(SystemExit, match="CUDA is not available"):
        main(["run", "--models", "recsys_tower", "--device", "cuda", "--out", str(tmp_path)])
    assert not (tmp_path / "results.jsonl").exists()


@pytest.mark.slow
def test_cli_freezing_folds_parameters_in_every_mode(tmp_path):
    """``--freezing``: every mode compiles with Inductor's freezing, outputs still match eager,
    and the rows and the report say the run was frozen."""
    out = tmp_path / "run"
    main(["run", "--models", "recsys_tower", "--modes", "eager", "inductor", "eqsat", "--size", "tiny",
          "--no-train", "--freezing", "--min-seconds", "0.05", "--out", str(out), "--save-outputs"])
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert all(r["status"] == "ok" and r["freezing"] is True for r in rows), rows
    eager = torch.load(out / "outputs" / "recsys_tower.eager.infer.pt")
    for mode in ("inductor", "eqsat"):
        saved = torch.load(out / "outputs" / f"recsys_tower.{mode}.infer.pt")
        torch.testing.assert_close(saved["outputs"], eager["outputs"], rtol=1e-4, atol=1e-5)
    assert "freezing on" in (out / "report.md").read_text()


def test_cli_no_infer_runs_the_training_step_only(tmp_path):
    main(["run", "--models", "split_cat_64", "--modes", "eager", "--size", "tiny", "--no-infer",
          "--min-seconds", "0.01", "--out", str(tmp_path)])
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [r["phase"] for r in rows] == ["train"] and rows[0]["status"] == "ok", rows


def test_help_lists_every_model_and_mode():
    """``python -m bench --help`` (and each command's) names what ``--models`` and ``--modes`` take,
    read from the registries, so a model added to the zoo shows up without touching the CLI."""
    from bench.models import REGISTRY, ZOO
    from bench.modes import CG_MODES, MODES

    def help_text(*command: str) -> str:
        done = subprocess.run([sys.executable, "-m", "bench", *command, "--help"], capture_output=True, text=True,
                              check=True, env={**os.environ, "COLUMNS": "200"})
        return " ".join(done.stdout.split())

    top = help_text()
    for name in [*REGISTRY, *ZOO, *MODES, *CG_MODES]:
        assert re.search(rf"\b{re.escape(name)}\b", top), name
    run_help, zoo_help = help_text("run"), help_text("zoo")
    assert all(name in run_help for name in [*REGISTRY, *MODES, *CG_MODES])
    assert all(name in zoo_help for name in [*ZOO, "inductor_optimus", "frozen", "cudagraphs"])


@pytest.mark.parametrize("argv, message", [
    (["run", "--models", "no_such_model"], "argument --models: invalid choice: 'no_such_model'"),
    (["run", "--modes", "eqsat", "turbo"], "argument --modes: invalid choice: 'turbo'"),
    (["zoo", "--modes", "eager"], "argument --modes: invalid choice: 'eager'"),  # the zoo compiles every mode
    (["zoo", "--settings", "infer,train"], "argument --settings: invalid choice: 'infer,train'"),
])
def test_unknown_name_is_an_argparse_error_listing_the_choices(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--out", str(tmp_path)])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "(choose from" in err
    assert not (tmp_path / "results.jsonl").exists()


def test_models_and_modes_take_several_names():
    args = parser().parse_args(["run", "--models", "dlrm", "split_cat_64", "--modes", "inductor", "eqsat_cg"])
    assert (args.models, args.modes) == (["dlrm", "split_cat_64"], ["inductor", "eqsat_cg"])
    assert parser().parse_args(["zoo"]).settings == ["infer", "train", "frozen", "cudagraphs"]
