"""What we record per graph: the log lines and our artifacts in torch's structured trace.

Logs go to the ``eqsat`` logger (``TORCH_LOGS=eqsat``: one summary line per graph at INFO;
``TORCH_LOGS=+eqsat``: the details too, at DEBUG). The trace (``TORCH_TRACE=<dir>``, shown by
``tlparse`` next to Dynamo's and Inductor's) gets the graph before and after, the whole report and
the e-graph statistics; payloads are only built when tracing is on.
"""
from __future__ import annotations

import json
import logging

import torch

from eqsat_torch.inductor import compat
from eqsat_torch.report import Report

log = logging.getLogger("eqsat")

PREFIX = {"pre_grad": "eqsat", "post_grad": "eqsat_post_grad"}
LABEL = {"pre_grad": "pre-grad", "post_grad": "post-grad"}
STATS = ("egraph_sizes", "egraph_nodes", "stop_reason", "rules_fired", "rules_used", "extractor", "ilp_status",
         "cost_before", "cost_after", "kernels_before", "kernels_after", "phase_seconds", "cache")


def graph_before(stage: str, graph: torch.fx.Graph) -> None:
    compat.trace_artifact(f"{PREFIX[stage]}_graph_before", "string", lambda: _code(graph))


def graph_after(stage: str, graph: torch.fx.Graph, report: Report) -> None:
    """The graph's record once it is decided (optimized, or kept with the reason in ``report``)."""
    log.info("%s", report.summary(LABEL[stage]))
    if log.isEnabledFor(logging.DEBUG):
        log.debug("eqsat %s details:\n  %s", LABEL[stage], report.details().replace("\n", "\n  "))
    prefix = PREFIX[stage]
    compat.trace_artifact(f"{prefix}_graph_after", "string", lambda: _code(graph))
    compat.trace_artifact(f"{prefix}_report", "json", lambda: json.dumps(report.to_dict(), default=str))
    compat.trace_artifact(f"{prefix}_egraph_stats", "json",
                                lambda: json.dumps({k: report.to_dict()[k] for k in STATS}, default=str))


def _code(graph: torch.fx.Graph) -> str:
    return graph.python_code(root_module="self").src
