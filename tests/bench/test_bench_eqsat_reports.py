"""The eqsat modes turn the backend's per-graph reports into row fields (backend contract: a callable
for `torch.compile` with `.reports`, each `.to_dict()`-able). A stand-in that forwards to Inductor
checks the harness side of that contract without depending on the optimizer."""

import sys
import types

import pytest
import torch

from bench.models import REGISTRY
from bench.runner import _summarize_reports, eager_reference, run_mode


class _Report:
    def __init__(self, nodes, skipped=""):
        self.nodes, self.skipped = nodes, skipped

    def to_dict(self):
        return {"optimizer_seconds": 0.5, "egraph_nodes": self.nodes, "rules_fired": {"cat_of_split": 2},
                "cost_before": 10.0, "cost_after": 4.0, "changed": not self.skipped, "skipped": self.skipped}


class _InductorWithReports:
    def __init__(self, search):
        self.search, self.reports = search, []

    def __call__(self, gm, example_inputs):
        from eqsat_torch.inductor import compat

        self.reports.append(_Report(nodes=len(gm.graph.nodes)))
        return compat.compile_fx()(gm, example_inputs)


def test_reports_are_summed_over_graphs():
    """Inductor's measuring too: its seconds, the programs it counted (not those with the code of one
    counted, nor those left out) and the winner of each graph it decided."""
    measured = {**_Report(3).to_dict(), "phase_seconds": {"build": 0.25, "verify": 0.25}, "inductor_winner": "no x",
                "inductor_launches": {"input": 5, "optimized": 6, "no x": 4, "no y": "same as input",
                                      "no z": "not measured: seconds= ran out"}}
    cached = {**measured, "cache": "hit", "phase_seconds": {"cache": 0.01}}  # its counts are the cold run's
    summary = _summarize_reports([measured, _Report(5, skipped="unsupported op").to_dict()])
    assert _summarize_reports([cached])["candidates_measured"] == 0
    assert summary == {"graphs_changed": 1, "graphs_skipped": 1, "optimizer_s": 1.0, "egraph_nodes": 8, "cost_before": 20.0, "cost_after": 8.0,
                       "verify_s": 0.25, "candidates_measured": 3, "winners": ["no x"],
                       "rules_fired": {"cat_of_split": 4}}


def test_eqsat_mode_rows_carry_backend_reports(monkeypatch):
    module = types.ModuleType("eqsat_torch.backend")
    backends = []
    module.eqsat_backend = lambda search: backends.append(_InductorWithReports(search)) or backends[-1]
    monkeypatch.setitem(sys.modules, "eqsat_torch.backend", module)
    settings = {"size": "tiny", "device": "cpu", "dtype": torch.float32, "min_seconds": 0.01}
    builder = REGISTRY["split_cat_64"]
    row, _, _ = run_mode(builder, "eqsat", "infer", eager_reference(builder, "infer", settings), settings)
    assert row["status"] == "ok", row
    assert [b.search for b in backends] == ["saturate"]  # the harness passes eqsat_backend(search=...)
    assert len(row["graphs"]) == 1 and row["egraph_nodes"] == row["graphs"][0]["egraph_nodes"] > 64
    assert row["rules_fired"] == {"cat_of_split": 2} and row["max_abs_err"] == pytest.approx(0, abs=1e-6)


def test_post_grad_reports_count_in_the_optimizer_time():
    """A training step's optimizer time is the Dynamo graph's and the Aten graphs' (forward, backward)."""
    from bench.modes import Compiled

    backend = types.SimpleNamespace(reports=[_Report(3)], post_grad_reports=[_Report(4), _Report(5)])
    graphs = Compiled(torch.nn.Identity(), backend).collect_reports()
    assert [g.get("stage") for g in graphs] == [None, "post_grad", "post_grad"]
    assert _summarize_reports(graphs)["optimizer_s"] == 1.5
