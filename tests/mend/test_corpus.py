"""Corpus: transformers==4.52.4 models from tiny configs (code we did not write).

Per model: breaks before and after mending, and bit-identical outputs vs the original run. One model
runs in the fast tier; the slow tier runs GraphMend's 13 models (its removal share); the whole corpus
(about 10 min on 2 cores) is `full` (make test-all).
`python -m fx_bridge.mend.corpus_table` prints the table of docs/mend.md from the same runs.
"""

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.skipif(transformers.__version__ != "4.52.4", reason="break counts are for transformers 4.52.4")

from fx_bridge.mend import corpus, mend  # noqa: E402

# (breaks before, breaks after) measured on torch 2.13 CPU; see docs/mend.md for the causes.
EXPECTED = {
    "t5": (3, 0), "bart": (3, 0), "bart-fp16": (6, 0), "marian": (3, 0), "blenderbot": (3, 0),
    "pegasus": (2, 0), "biogpt": (2, 0), "whisper": (3, 0), "layoutlmv3": (2, 0),
    "longformer": (5, 3), "phi3-longrope": (5, 5), "grounding-dino": (16, 2), "clap-fused": (2, 2),
    "led": (5, 3), "m2m100": (3, 0), "mbart": (3, 0), "plbart-fp16": (6, 0), "blenderbot-small": (3, 0),
    "bigbird-pegasus": (3, 0), "mt5": (3, 0), "umt5": (3, 0), "longt5": (8, 8), "switch-transformers": (16, 16),
    "mixtral": (10, 10), "qwen2-moe": (9, 9), "reformer": (11, 11), "vision-encoder-decoder": (3, 0),
    "blip2": (1, 0), "speech-encoder-decoder": (3, 0), "pop2piano": (7, 7), "musicgen": (7, 7),
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


def test_fast_model_fully_mended():
    """The CI-facing corpus check: one real encoder-decoder, 3 breaks to 0, outputs bit-identical."""
    report = run("t5")
    assert report.outputs_equal, report.detail
    assert (report.before.breaks, report.after.breaks) == EXPECTED["t5"]


def test_every_corpus_model_is_listed():
    assert set(EXPECTED) == set(corpus.models())


@pytest.mark.slow
@pytest.mark.parametrize("name", [pytest.param(n, marks=[] if n in corpus.GRAPHMEND else [pytest.mark.full])
                                  for n in sorted(EXPECTED)])
def test_model(name):
    report = run(name)
    assert report.outputs_equal, report.detail
    assert (report.before.breaks, report.after.breaks) == EXPECTED[name]


@pytest.mark.slow
def test_graphmend_models_removal_share_does_not_regress():
    """43 of 55 breaks (78.2%) on GraphMend's models as transformers ships them; see docs/mend.md."""
    reports = [run(name) for name in corpus.GRAPHMEND]
    before = sum(r.before.breaks for r in reports)
    after = sum(r.after.breaks for r in reports)
    assert all(r.outputs_equal for r in reports)
    assert (before - after) / before >= 0.78, (before, after)


@pytest.mark.slow
def test_mended_model_compiles_with_inductor():
    """PLBart fp16 mended ([Where] + an in-graph logger call that reads no tensor) through Inductor."""
    model, kwargs = corpus.build("plbart-fp16")
    with torch.no_grad():
        expected = model(**kwargs)
        report = mend(model, (), kwargs, explain=False)
        try:
            torch._dynamo.reset()
            out = torch.compile(model)(**kwargs)
        finally:
            report.patch.undo()
            torch._dynamo.reset()
    assert report.after.breaks == 0
    torch.testing.assert_close(out.logits, expected.logits, rtol=2e-2, atol=2e-2)
