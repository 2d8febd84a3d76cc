"""Report arithmetic and the Inductor adapter's Optimus option lists (no compilation)."""

import re

import pytest
import torch._inductor.config as inductor_config
from torch._inductor.fx_passes import group_batch_fusion, split_cat

from bench import measure, report
from bench.run_tag import run_tag
from bench import inductor_metrics


def _row(model, mode, kernels, latency):
    return {"model": model, "mode": mode, "phase": "infer", "status": "ok",
            "kernels_total": kernels, "kernels_generated": kernels, "kernels_extern": 0, "latency_ms": latency}


def test_geomean_row_combines_per_model_ratios():
    rows = [_row("a", "inductor", 10, 2.0), _row("a", "eqsat", 5, 1.0),
            _row("b", "inductor", 10, 2.0), _row("b", "eqsat", 20, 4.0)]
    text = report.render(rows, {"tag": "t", "torch": "x", "device_name": "cpu", "size": "tiny", "dtype": "float32"})
    geo = [line for line in text.splitlines() if "geomean" in line and "| eqsat |" in line]
    cells = [c.strip() for c in geo[0].split("|")]
    assert cells[4] == "1.00"  # kernels ratio: sqrt(0.5 * 2)
    assert cells[7] == "1.00"  # speedup: sqrt(2 * 0.5)
    assert report.geomean([2.0, 8.0]) == pytest.approx(4.0)


def test_speedup_over_rounds_is_the_median_of_per_round_ratios():
    """Load that drifts between rounds hits both modes of a round: the per-round ratio cancels it
    where the ratio of the two medians (2.0 / 2.6 here) does not."""
    base, mode = _row("a", "inductor", 10, 2.0), _row("a", "eqsat", 8, 2.6)
    base["latency_ms_runs"], mode["latency_ms_runs"] = [2.6, 2.6, 1.5, 1.5, 2.0], [2.5, 2.6, 2.6, 1.4, 1.8]
    text = report.render([base, mode], {"tag": "t", "torch": "x", "device_name": "cpu", "size": "tiny",
                                        "dtype": "float32"})
    row = next(line for line in text.splitlines() if line.startswith("| a | eqsat"))
    cells = [c.strip() for c in row.split("|")]
    assert cells[6] == "2.600 ±23%"  # (2.6 - 1.4) / 2 / 2.6
    assert cells[7] == "1.04 (0.58–1.11)"  # ratios 1.04, 1.00, 0.58, 1.07, 1.11


def test_skipped_mode_is_reported_with_its_reason():
    rows = [_row("a", "inductor", 10, 2.0),
            {"model": "a", "mode": "eqsat", "phase": "infer", "status": "skipped", "reason": "no backend"}]
    text = report.render(rows, {"tag": "t", "torch": "x", "device_name": "cpu", "size": "tiny", "dtype": "float32"})
    assert "skipped: no backend" in text


def test_optimus_options_enable_every_registered_key_normalization_first():
    pre, post = inductor_metrics.optimus_options()
    assert list(pre)[0] == "normalization_pass" and list(post)[0] == "normalization_aten_pass"
    assert set(pre) == set(split_cat.pre_grad_pass_names) | set(group_batch_fusion.list_group_batch_fusions(True))
    assert set(post) == set(split_cat.post_grad_pass_names) | set(group_batch_fusion.list_group_batch_fusions(False))


def test_config_patch_switches_optimus_only_for_its_mode():
    with inductor_metrics.inductor_config_patch("inductor_optimus"):
        assert "batch_linear" in inductor_config.pre_grad_fusion_options
        assert inductor_config.fx_graph_cache is False
    for mode in ("inductor", "eqsat"):
        with inductor_metrics.inductor_config_patch(mode):
            assert inductor_config.pre_grad_fusion_options == {} == inductor_config.post_grad_fusion_options


def test_run_tag_names_date_torch_and_device():
    assert re.fullmatch(r"\d{4}-\d\d-\d\d_torch-\d+\.\d+\.\d+\w*_cpu[-\w.]*", run_tag("cpu"))


def test_graphs_the_optimizer_skipped_are_listed_with_reasons():
    row = {**_row("a", "eqsat", 10, 1.0), "graphs": [{"skipped": "internal error: X\nmore"}, {"skipped": ""}]}
    text = report.render([row], {"tag": "t", "torch": "x", "device_name": "cpu", "size": "tiny", "dtype": "float32"})
    skipped = text.split("## Graphs the optimizer skipped")[1]
    assert "- a / eqsat / infer: internal error: X" in skipped and "more" not in skipped


def test_cpu_latency_reports_median_above_minimum():
    stats = measure.latency(lambda: sum(range(10_000)), "cpu", min_seconds=0.02)
    assert 0 < stats["latency_min_ms"] <= stats["latency_ms"]
    assert isinstance(measure.latency_ms(lambda: None, "cpu", min_seconds=0.01), float)


def test_report_subcommand_rerenders_with_the_minimum_latency(tmp_path):
    import json

    from bench.cli import main

    meta = {"tag": "t", "torch": "x", "device": "cpu", "device_name": "cpu", "size": "tiny", "dtype": "float32"}
    rows = [{**_row("a", "inductor", 10, 9.0), "latency_min_ms": 2.0, **meta},
            {**_row("a", "eqsat", 5, 3.0), "latency_min_ms": 1.0, **meta}]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    main(["report", str(tmp_path), "--latency-stat", "min"])
    line = next(l for l in (tmp_path / "report.md").read_text().splitlines() if l.startswith("| a | eqsat |"))
    assert "| 1.000 | 2.00 |" in line  # min latency 1 ms, speedup 2/1 (the medians would give 3.00)


def test_table_formatter_escapes_cells_and_checks_widths():
    from bench import tables

    assert tables.table(("model", "reason"), [("a", "RuntimeError: x | y\nsecond line"), ("b", 1.5)]) == [
        "| model | reason |",
        "|---|---|",
        "| a | RuntimeError: x \\| y second line |",
        "| b | 1.5 |",
    ]
    with pytest.raises(ValueError, match="a row of 1 cells under 2 columns"):
        tables.table(("model", "reason"), [("a",)])


def test_every_report_row_has_one_cell_per_column_and_the_kernel_legend():
    """An error row, an ok row and the geomean row line up with the header (a reason holding ``|``
    included), and the three kernel columns are explained under the table."""
    rows = [_row("a", "inductor", 10, 2.0),
            {"model": "a", "mode": "eqsat", "phase": "infer", "status": "error", "reason": "E: a | b"},
            _row("b", "inductor", 10, 2.0), _row("b", "eqsat", 5, 1.0)]
    text = report.render(rows, {"tag": "t", "torch": "x", "device_name": "cpu", "size": "tiny", "dtype": "float32"})
    lines = [line for line in text.splitlines() if line.startswith("|")]
    assert len(lines) == 2 + 4 + 2 and all(len(re.split(r"(?<!\\)\|", line)) == len(report.COLUMNS) + 2
                                           for line in lines)
    assert "| a | eqsat | error: E: a \\| b |" in text
    legend = text.split(lines[-1], 1)[1]
    assert all(f"**{name}**" in legend for name in ("kernels (gen+ext)", "Inductor counter", "eqsat predicted"))


def test_report_subcommand_reads_a_committed_runs_gzipped_rows(tmp_path):
    """results/ keeps a run's rows as results.jsonl.gz; ``python -m bench report`` renders from them."""
    import gzip
    import json

    from bench.cli import main

    meta = {"tag": "t", "torch": "x", "device": "cpu", "device_name": "cpu", "size": "tiny", "dtype": "float32"}
    rows = [{**_row("a", "inductor", 10, 2.0), **meta}, {**_row("a", "eqsat", 5, 1.0), **meta}]
    with gzip.open(tmp_path / "results.jsonl.gz", "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    main(["report", str(tmp_path)])
    line = next(l for l in (tmp_path / "report.md").read_text().splitlines() if l.startswith("| a | eqsat |"))
    assert "| 5 (5+0) | 0.50 |" in line
