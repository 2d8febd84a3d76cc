"""The zoo's report.md from synthetic rows (no compilation): geomeans against Inductor compiled the
same way, with and without CUDA graphs, and the rows worse than Inductor flagged."""

import pytest

from bench import report, zoo_report

META = {"tag": "t", "torch": "x", "device": "cuda", "device_name": "H200", "size": "small", "dtype": "float32",
        "transformers": "5.17.0", "skipped_settings": {}}


def _row(model, setting, mode, kernels, latency, runs=None, **extra):
    row = {"model": model, "setting": setting, "mode": mode, "phase": zoo_report.SETTINGS[setting][1],
           "status": "ok", "kernels_total": kernels, "kernels_generated": kernels, "kernels_extern": 0,
           "latency_ms": latency, "source": f"lib {model}", "params": 1500, **extra}
    if runs:
        row["latency_ms_runs"] = runs
    return row


ROWS = [
    # without CUDA graphs eqsat is 2× faster on a and 1.25× slower on b: geomean sqrt(2 · 0.8)
    _row("a", "infer", "inductor", 10, 2.0), _row("a", "infer", "eqsat", 5, 1.0),
    _row("b", "infer", "inductor", 10, 1.0), _row("b", "infer", "eqsat", 10, 1.25),
    # with CUDA graphs, against inductor_cg (not inductor): 1.5× and 1.0×
    _row("a", "cudagraphs", "inductor_cg", 10, 0.6), _row("a", "cudagraphs", "eqsat_cg", 5, 0.4),
    _row("b", "cudagraphs", "inductor_cg", 10, 0.5), _row("b", "cudagraphs", "eqsat_cg", 12, 0.5),
]


def _lines(text: str, prefix: str) -> list[list[str]]:
    return [[c.strip() for c in line.split("|")[1:-1]] for line in text.splitlines() if line.startswith(prefix)]


def test_geomean_per_setting_is_against_inductor_compiled_alike():
    text = zoo_report.render(ROWS, META)
    summary = {(cells[0], cells[1]): cells[2:] for cells in _lines(text, "| infer |") + _lines(text, "| cudagraphs |")}
    assert summary[("infer", "eqsat")] == ["2", "0.71", "1.26", "1"]  # models, ×kernels sqrt(.5·1), speedup, worse
    assert summary[("cudagraphs", "eqsat_cg")] == ["2", "0.77", "1.22", "1"]  # sqrt(.5·1.2), sqrt(1.5·1)
    assert set(summary) == {("infer", "eqsat"), ("cudagraphs", "eqsat_cg")}  # baselines are not rated
    assert text.index("## Inference (infer)") < text.index("## Inference with CUDA graphs")


def test_rows_worse_than_inductor_are_flagged_in_the_table_and_listed():
    text = zoo_report.render(ROWS, META)
    flags = {(cells[0], cells[1]): cells[-1] for cells in _lines(text, "| a |") + _lines(text, "| b |")}
    assert flags[("b", "eqsat")] == "**slower**"
    assert flags[("b", "eqsat_cg")] == "**more launches**"
    assert flags[("a", "eqsat")] == flags[("a", "eqsat_cg")] == flags[("a", "inductor")] == ""
    listed = text.split("## Rows worse than Inductor")[1].split("##")[0]
    assert listed.strip().splitlines() == ["- b / infer / eqsat: slower", "- b / cudagraphs / eqsat_cg: more launches"]


def test_a_slower_median_within_the_rounds_noise_is_not_flagged():
    """Slower in one round of three, faster in the others: not worse. Slower in all three: worse."""
    inductor = _row("a", "infer", "inductor", 10, 1.0, runs=[1.0, 1.0, 1.0])
    noisy = _row("a", "infer", "eqsat", 10, 1.05, runs=[1.2, 0.98, 0.99])
    slower = _row("a", "infer", "eqsat", 10, 1.05, runs=[1.05, 1.02, 1.1])
    by_mode = {"inductor": inductor}
    assert report.worse_than_inductor(noisy, {**by_mode, "eqsat": noisy}, "latency_ms") == ""
    assert report.worse_than_inductor(slower, {**by_mode, "eqsat": slower}, "latency_ms") == "slower"


def test_failed_rows_and_settings_not_run_are_stated():
    rows = [_row("a", "infer", "inductor", 10, 2.0),
            {"model": "a", "setting": "infer", "mode": "eqsat", "phase": "infer", "status": "error",
             "reason": "RuntimeError: boom"}]
    text = zoo_report.render(rows, {**META, "skipped_settings": {"cudagraphs": "CUDA graphs need a CUDA device"}})
    assert "- a / infer / eqsat: error" in text
    assert "`cudagraphs` was not run: CUDA graphs need a CUDA device." in text
    assert _lines(text, "| a | eqsat |")[0][2] == "error: RuntimeError: boom"
    assert "| a | lib a | 1.5 k |" in text  # the models table: what each was built from


def test_a_failure_inductor_shares_is_not_worse_than_inductor():
    """Mixtral's experts under CUDA graphs fail for Inductor alone too (a host copy inside the capture)."""
    failed = [{"model": "m", "setting": "cudagraphs", "mode": mode, "phase": "infer", "status": "error",
               "reason": "RuntimeError: capture"} for mode in ("inductor_cg", "eqsat_cg")]
    by_mode = {r["mode"]: r for r in failed}
    assert report.worse_than_inductor(by_mode["eqsat_cg"], by_mode, "latency_ms") == ""
    assert "Rows worse than Inductor" not in zoo_report.render(failed, META)


def test_cuda_graph_rows_compare_with_the_cuda_graph_baseline_in_the_plots():
    speedups = report.speedups(ROWS)
    assert speedups[("a", "cudagraphs", "eqsat_cg")] == pytest.approx(1.5)  # 0.6 / 0.4, not inductor's 2.0 / 0.4
    assert speedups[("a", "infer", "eqsat")] == pytest.approx(2.0)
    assert not any(mode.startswith("inductor") for _, _, mode in speedups)


def test_inputs_copied_at_every_replay_beyond_inductor_are_noted():
    """Under CUDA graphs an input that is no parameter is copied into the recorded graph at each replay."""
    counters = {"cudagraph_recorded_non_static_inputs": 93}
    rows = [_row("bart", "cudagraphs", "inductor_cg", 79, 0.47, counters={"cudagraph_recorded_non_static_inputs": 2}),
            _row("bart", "cudagraphs", "eqsat_cg", 77, 1.24, counters=counters),
            _row("vit", "cudagraphs", "inductor_cg", 22, 0.3, counters={"cudagraph_skips": 1}),
            _row("vit", "cudagraphs", "eqsat_cg", 22, 0.3)]
    notes = zoo_report.render(rows, META).split("## CUDA graphs")[1].strip().splitlines()
    assert notes == ["- vit / inductor_cg: 1 graph(s) without CUDA graphs",
                     "- bart / eqsat_cg: 93 inputs copied at every replay (Inductor alone: 2)"]


def test_compile_overhead_table_puts_the_measuring_beside_inductor_alone():
    """verify % of Inductor alone's compile per row, the median over the rows that measured, and the
    winners per graph; a mode with CUDA graphs compares with Inductor's with CUDA graphs."""
    rows = [_row("a", "infer", "inductor", 10, 1.0, compile_s=4.0),
            _row("a", "infer", "eqsat", 9, 1.0, compile_s=9.0, optimizer_s=3.0, verify_s=1.0,
                 candidates_measured=4, winners=["no batch_add", "optimized", "optimized"]),
            _row("b", "infer", "inductor", 10, 1.0, compile_s=10.0),
            _row("b", "infer", "eqsat", 10, 1.0, compile_s=12.0, optimizer_s=5.0, verify_s=3.0,
                 candidates_measured=2, winners=["input"]),
            _row("c", "infer", "inductor", 10, 1.0, compile_s=2.0),
            _row("c", "infer", "eqsat", 10, 1.0, compile_s=2.5, optimizer_s=0.5, verify_s=0.0, candidates_measured=0),
            _row("a", "cudagraphs", "inductor_cg", 10, 1.0, compile_s=8.0),
            _row("a", "cudagraphs", "eqsat_cg", 9, 1.0, compile_s=9.0, optimizer_s=3.0, verify_s=2.0,
                 candidates_measured=2, winners=["optimized"])]
    text = zoo_report.render(rows, META)
    section = text.split("## Compile time: eqsat beside Inductor alone")[1].split("\n## ")[0]
    cells = {(c[0], c[2]): c[3:] for c in _lines(section, "| a |") + _lines(section, "| b |") + _lines(section, "| c |")}
    assert cells[("a", "eqsat")] == ["4.00", "9.00", "2.00", "1.00", "25", "4", "no batch_add, optimized×2"]
    assert cells[("b", "eqsat")] == ["10.00", "12.00", "2.00", "3.00", "30", "2", "input"]
    assert cells[("c", "eqsat")] == ["2.00", "2.50", "0.50", "0.00", "0", "0", "–"]
    assert cells[("a", "eqsat_cg")][:5] == ["8.00", "9.00", "1.00", "2.00", "25"]
    assert "verify is 25 % of Inductor alone's compile" in section  # median of 25, 30, 25: c measured nothing
