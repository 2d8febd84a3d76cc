"""Corpus: transformers==4.52.4 models from tiny configs (code we did not write).

Per model: breaks before and after mending, and bit-identical outputs vs the original eager run.
Over the corpus, at least the GraphMend paper's 73% of breaks must be removed.
"""

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(transformers.__version__ != "4.52.4", reason="break counts are for transformers 4.52.4"),
]

from fx_bridge.mend import corpus, mend  # noqa: E402

# (breaks before, breaks after) measured on torch 2.13 CPU; see docs/mend.md for the causes.
EXPECTED = {
    "t5": (3, 0), "bart": (3, 0), "bart-fp16": (6, 0), "marian": (3, 0), "blenderbot": (3, 0),
    "pegasus": (2, 0), "biogpt": (2, 0), "whisper": (3, 0), "layoutlmv3": (2, 0),
    "longformer": (5, 3), "led": (5, 3), "phi3-longrope": (5, 5),
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


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_model(name):
    report = run(name)
    assert report.outputs_equal, report.detail
    assert (report.before.breaks, report.after.breaks) == EXPECTED[name]


def test_corpus_removes_at_least_73_percent():
    reports = [run(name) for name in EXPECTED]
    before = sum(r.before.breaks for r in reports)
    after = sum(r.after.breaks for r in reports)
    assert all(r.outputs_equal for r in reports)
    assert (before - after) / before >= 0.73, (before, after)
