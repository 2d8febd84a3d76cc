"""bench/scripts/compose_table.py on the CPU, one tiny model: the GPU script's table is built end to end."""
import json

import pytest

from bench.scripts import compose_table


@pytest.mark.slow
def test_compose_table_runs_one_tiny_model_on_cpu(tmp_path):
    compose_table.main([str(tmp_path), "--device", "cpu", "--models", "gpt_neox", "--size", "tiny",
                        "--settings", "infer", "--rounds", "1"])
    data = json.loads((tmp_path / "compose.json").read_text())
    (row,) = data["rows"]
    assert (row["model"], row["setting"]) == ("gpt_neox", "infer")
    for mode in compose_table.MODES:  # every mode compiled, counted and timed
        assert row[f"launches_{mode}"] > 0 and row[f"latency_ms_{mode}"] > 0, row
    assert row["compile_vs_inductor"] > 0 and row["speedup_vs_best_stock"] > 0
    assert "| gpt_neox | infer |" in (tmp_path / "compose.md").read_text()
