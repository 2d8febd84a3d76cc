"""Why a graph was kept as it was, in one of four words a user can act on.

- "skipped": the graph uses something we do not rewrite (mutation, symbolic shapes, ...);
- "your rule/option": a user rule or option is wrong (fix it);
- "validation mismatch": ``validate=True`` caught the optimized graph disagreeing with the original;
- "internal error": a bug of ours; the log says so and carries the traceback to report it.
"""
from __future__ import annotations

import logging

from eqsat_rules.compile import RuleError

from eqsat_torch.lowering.lowered import Unsupported
from eqsat_torch.options import OptionError
from eqsat_torch.report import Report
from eqsat_torch.safety.validation import ValidationError

log = logging.getLogger("eqsat")


def kept_original(e: Exception, graph_nodes: int, where: str) -> Report:
    """The report (and the warning) for a graph of ``graph_nodes`` kept because of ``e``."""
    if isinstance(e, ValidationError):
        report, category, reason = e.report, "validation mismatch", e.report.validated
    else:
        report = Report(graph_nodes=graph_nodes)
        if isinstance(e, Unsupported):
            category, reason = "skipped", str(e)
        elif isinstance(e, (RuleError, OptionError)):
            category, reason = "your rule/option", f"{type(e).__name__}: {e}"
        else:
            category, reason = "internal error", f"{type(e).__name__}: {e}"
    report.fallback = category
    report.changed = False
    report.skipped = reason if category == "skipped" else f"{category}: {reason}"
    if category == "internal error":
        log.warning("eqsat%s: internal error (a bug in eqsat, please report it with this traceback); "
                    "keeping the original graph of %d nodes: %s", where, graph_nodes, reason, exc_info=e)
    else:
        log.warning("eqsat%s: %s; keeping the original graph of %d nodes: %s", where, category,
                    graph_nodes, reason)
    return report
