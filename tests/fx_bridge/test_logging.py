"""The ``eqsat`` logger under torch's logging controls: one short line per graph at INFO, the details
at DEBUG. ``TORCH_LOGS`` is read when torch is imported, so each case runs in a fresh interpreter."""
import os
import re
import subprocess
import sys

import pytest

from eqsat_torch.report import SUMMARY_CHARS, Report

SCRIPT = """
import logging, sys, torch
if sys.argv[1] == "set_logs":
    torch._logging.set_logs(modules={"eqsat": logging.DEBUG})
from eqsat_torch.backend import eqsat_backend

def f(x):
    return torch.cat([p.relu() for p in torch.split(x, 4, 1)], 1)

torch.compile(f, backend=eqsat_backend(inner="eager", cache=False))(torch.randn(8, 16))
"""


def _eqsat_messages(how: str, torch_logs: str | None) -> list[str]:
    """The messages (the text after torch's ``I... file:line] [compile id]`` prefix) the ``eqsat`` logger wrote."""
    env = {k: v for k, v in os.environ.items() if k != "TORCH_LOGS"}
    if torch_logs is not None:
        env["TORCH_LOGS"] = torch_logs
    done = subprocess.run([sys.executable, "-c", SCRIPT, how], env=env, capture_output=True, text=True,
                          timeout=300, cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert done.returncode == 0, done.stderr[-3000:]
    return [m.group(1) for m in re.finditer(r"^[IVWE]\d{4} [^\]]*\] (?:\[[^\]]*\] )?(eqsat.*)$", done.stderr, re.M)]


def _summaries(messages):
    return [m for m in messages if m.startswith("eqsat pre-grad: ")]


def _details(messages):
    return [m for m in messages if m.startswith("eqsat pre-grad details:")]


def test_torch_logs_eqsat_shows_one_short_line_per_graph():
    messages = _eqsat_messages("env", "eqsat")
    (line,) = _summaries(messages)
    assert len(line) <= SUMMARY_CHARS and re.search(r"\d+ nodes, kernels \d+→\d+, cost .*rules used", line), line
    assert not _details(messages), messages


def test_torch_logs_plus_eqsat_adds_the_details():
    messages = _eqsat_messages("env", "+eqsat")
    assert len(_summaries(messages)) == 1 and len(_details(messages)) == 1, messages


def test_set_logs_debug_adds_the_details():
    messages = _eqsat_messages("set_logs", None)
    assert len(_summaries(messages)) == 1 and len(_details(messages)) == 1, messages


def test_no_torch_logs_no_info_lines():
    assert _eqsat_messages("env", None) == []


@pytest.mark.parametrize("report", [
    Report(graph_nodes=4096, changed=True, rules_used={f"rule_{i}": i for i in range(40)}, cost_before=123456.7,
           cost_after=98765.4, kernels_before=1234, kernels_after=987, phase_seconds={"build": 12.5}, cache="miss"),
    Report(graph_nodes=50_001, skipped="internal error: " + "a long exception message " * 40,
           fallback="internal error", phase_seconds={"lower": 0.5}, cache="off"),
], ids=["optimized", "kept"])
def test_the_summary_stays_short(report):
    line = report.summary("post-grad")
    assert len(line) <= SUMMARY_CHARS and "\n" not in line, (len(line), line)
    assert ("kept as they were (internal error" in line) == bool(report.skipped), line
