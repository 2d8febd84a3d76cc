"""Assertions that a report shows a real optimization, not our own fallback.

The backend keeps the original graph on any failure (validation mismatch, internal error, unsupported
feature) and the kept graph computes eager's values, so a test that only compares outputs passes
whether or not the rewrite happened. These checks fail in that case.
"""
from __future__ import annotations


def assert_no_fallback(report) -> None:
    """The optimizer ran to the end on this graph: not skipped, no validation mismatch, no error."""
    assert report.skipped == "", f"graph kept: {report.skipped}"
    assert report.fallback == "", f"fell back: {report.fallback}: {report.summary()}"
    assert not report.validated.startswith("mismatch"), report.validated


def assert_optimized(report, *rules: str) -> None:
    """The graph was rewritten (not skipped, not fallen back) and the program uses each named rule."""
    summary = report.summary()
    assert_no_fallback(report)
    assert report.changed, f"nothing changed: {summary}"
    missing = [r for r in rules if not report.rules_used.get(r)]
    assert not missing, f"rules {missing} not used: {summary}"


def assert_kept(report, reason: str) -> None:
    """The graph was left alone, and the report says why (``reason`` is part of the message)."""
    assert not report.changed, report.summary()
    assert reason in report.skipped, f"expected {reason!r} in skip reason {report.skipped!r}"
