"""Our artifacts in torch's structured trace (what ``tlparse`` reads): the report, the graph before
and after and the e-graph statistics, per graph; and ``tlparse`` listing them next to Dynamo's and
Inductor's (skipped where ``tlparse`` is not installed: ``pip install tlparse``)."""
import json
import pathlib
import shutil
import subprocess

import pytest

PROGRAM = """
import torch
def f(x, w):
    return torch.cat([torch.relu(p) for p in torch.split(x @ w, 2, dim=1)], dim=1)
x, w = torch.randn(8, 16, requires_grad=TRAIN), torch.randn(16, 8, requires_grad=TRAIN)
out = torch.compile(f, backend="eqsat", options={"inner": INNER})(x, w)
if TRAIN:
    out.sum().backward()
"""
PRE_GRAD = {"eqsat_graph_before": "string", "eqsat_graph_after": "string", "eqsat_report": "json",
            "eqsat_egraph_stats": "json"}
POST_GRAD = {k.replace("eqsat_", "eqsat_post_grad_"): v for k, v in PRE_GRAD.items()}
INFERENCE = {"INNER": "'eager'", "TRAIN": "False"}
TRAINING = {"INNER": "'inductor'", "TRAIN": "True"}  # forward and backward Aten graphs through our post-grad pass


def torch_trace(tmp_path_factory, fresh_python, settings: dict) -> pathlib.Path:
    """The trace log of PROGRAM run with ``settings`` in a fresh process."""
    program = PROGRAM
    for name, value in settings.items():
        program = program.replace(name, value)
    folder = tmp_path_factory.mktemp("trace")
    fresh_python(program, TORCH_TRACE=str(folder), TORCHINDUCTOR_CACHE_DIR=str(folder / "inductor"))
    (log,) = folder.glob("*.log")
    return log


@pytest.fixture(scope="module")
def inference_trace(tmp_path_factory, fresh_python):
    return torch_trace(tmp_path_factory, fresh_python, INFERENCE)


def artifacts_in(log) -> list[tuple[str, str]]:
    """(name, encoding) of every artifact in a trace, in order."""
    out = []
    for line in log.read_text().splitlines():
        if '"artifact"' in line and line.lstrip()[:1] not in ("", "\t"):
            head = json.loads(line[line.index("{"):])
            out.append((head["artifact"]["name"], head["artifact"]["encoding"]))
    return out


def tlparse_listing(log, out_dir) -> dict[str, list[str]]:
    """tlparse's index, as the artifact files it lists per compile id."""
    subprocess.run([shutil.which("tlparse"), str(log), "-o", str(out_dir), "--no-browser", "--overwrite"],
                   check=True, capture_output=True, timeout=300)
    listing = json.loads((out_dir / "compile_directory.json").read_text())
    return {compile_id: [a["name"] for a in entry["artifacts"]] for compile_id, entry in listing.items()}


def test_torch_trace_holds_our_artifacts(inference_trace):
    ours = {name: enc for name, enc in artifacts_in(inference_trace) if name.startswith("eqsat")}
    assert ours == PRE_GRAD
    text = inference_trace.read_text()
    assert "\"rules_fired\"" in text and "functional.split(" in text  # payloads: the report, the graph before


@pytest.mark.skipif(shutil.which("tlparse") is None, reason="tlparse is not installed (pip install tlparse)")
def test_tlparse_lists_our_artifacts_next_to_dynamos(inference_trace, tmp_path):
    (names,) = [names for names in tlparse_listing(inference_trace, tmp_path / "tl_out").values()
                if any(n.startswith("dynamo_output_graph") for n in names)]
    listed = {n.rsplit("_", 1)[0] for n in names}  # tlparse numbers each file: eqsat_report_4.json
    assert set(PRE_GRAD) <= listed
    report = json.loads(next((tmp_path / "tl_out").rglob("eqsat_report_*.json")).read_text())
    assert report["changed"] and report["rules_fired"]  # the payload is our report


@pytest.mark.slow
def test_a_training_step_traces_the_post_grad_graphs(tmp_path_factory, fresh_python, tmp_path):
    log = torch_trace(tmp_path_factory, fresh_python, TRAINING)
    names = [name for name, _ in artifacts_in(log)]
    for name in POST_GRAD:
        assert names.count(name) == 2, name  # forward and backward
    assert set(PRE_GRAD) <= set(names)
    if shutil.which("tlparse"):
        listed = {n.rsplit("_", 1)[0] for names in tlparse_listing(log, tmp_path / "tl_out").values() for n in names}
        assert set(PRE_GRAD) | set(POST_GRAD) <= listed
