"""Corpus: transformers 5.x models (the ``hf`` extra) from tiny configs (code we did not write).

Per model, the mender's contract: breaks never rise, and the mended program's outputs are
bit-identical to the original run's, or every rewrite is undone. Transformers 5.x removed most
breaks these configs reached in 4.52.4 (legacy caches and their logger warnings): of GraphMend's
models only bart-fp16, longformer, grounding-dino and clap-fused still break. Break counts are
pinned as measured on ``MEASURED_ON`` (torch 2.13 CPU); another 5.x checks the contract only.
One model runs in the fast tier; the slow tier runs GraphMend's 13 models; the rest is ``full``.
`python -m bench.scripts.mend_corpus_table` prints the table of docs/mend.md from the same runs.
"""

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.skipif(int(transformers.__version__.split(".")[0]) < 5,
                                reason="the hf extra pins transformers 5.x; the corpus is built for it")

from bench.mend_corpus import corpus
from eqsat_torch.mend import mend  # noqa: E402

MEASURED_ON = "5.25.0"
# (breaks before, breaks after, outputs bit-identical) with transformers MEASURED_ON, torch 2.13 CPU.
# bart-fp16 and led: the mended fp16 program's outputs differ, so the mender undid every rewrite.
EXPECTED = {
    "t5": (0, 0, True), "bart": (0, 0, True), "bart-fp16": (4, 4, False), "marian": (0, 0, True),
    "blenderbot": (0, 0, True), "pegasus": (0, 0, True), "biogpt": (0, 0, True), "whisper": (0, 0, True),
    "layoutlmv3": (0, 0, True), "longformer": (5, 3, True), "phi3-longrope": (0, 0, True),
    "grounding-dino": (12, 12, True), "clap-fused": (2, 2, True), "led": (5, 5, False), "m2m100": (0, 0, True), "mbart": (0, 0, True),
}
_results = {}


def run(name):
    if name not in _results:
        model, kwargs = corpus.build(name)
        with torch.no_grad():
            report = mend(model, (), kwargs, explain=False)
        report.patch.undo()
        _results[name] = report
    return _results[name]


def check(name, report):
    """The contract on any 5.x; the measured counts on MEASURED_ON."""
    assert report.after.breaks <= report.before.breaks, (report.before.breaks, report.after.breaks)
    assert report.outputs_equal or not report.applied, report.detail  # differing outputs: all undone
    if transformers.__version__ == MEASURED_ON and name in EXPECTED:
        got = (report.before.breaks, report.after.breaks, report.outputs_equal)
        assert got == EXPECTED[name], (got, report.detail)


def test_fast_model_is_left_as_it_runs():
    """The CI-facing corpus check: 5.x's T5 compiles in one graph; the mender finds nothing to
    rewrite and the compiled outputs are bit-identical to eager."""
    report = run("t5")
    check("t5", report)
    assert report.outputs_equal and not report.applied, report.detail


def test_every_graphmend_model_is_measured():
    assert set(corpus.GRAPHMEND) <= set(EXPECTED) <= set(corpus.models())


@pytest.mark.slow
@pytest.mark.parametrize("name", [pytest.param(n, marks=[] if n in corpus.GRAPHMEND else [pytest.mark.full])
                                  for n in sorted(corpus.models())])
def test_model(name):
    check(name, run(name))


@pytest.mark.slow
def test_graphmend_models_removal_share_on_5x():
    """On MEASURED_ON the mender removes 2 of the 23 breaks left in GraphMend's models (longformer's);
    transformers 4.52.4 had 55, of which it removed 43 (docs/mend.md)."""
    if transformers.__version__ != MEASURED_ON:
        pytest.skip(f"counts measured on transformers {MEASURED_ON}")
    reports = [run(name) for name in corpus.GRAPHMEND]
    before = sum(r.before.breaks for r in reports)
    after = sum(r.after.breaks for r in reports)
    assert (before, after) == (23, 21)


@pytest.mark.slow
def test_mended_model_compiles_with_inductor():
    """Longformer mended (5 breaks to 3) through Inductor matches eager."""
    model, kwargs = corpus.build("longformer")
    with torch.no_grad():
        expected = model(**kwargs)
        report = mend(model, (), kwargs, explain=False)
        try:
            torch._dynamo.reset()
            out = torch.compile(model)(**kwargs)
        finally:
            report.patch.undo()
            torch._dynamo.reset()
    assert report.applied and report.after.breaks < report.before.breaks
    torch.testing.assert_close(out.last_hidden_state, expected.last_hidden_state, rtol=1e-4, atol=1e-4)
