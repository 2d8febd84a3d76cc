"""Mend every corpus model and print the markdown table of docs/mend.md.

    python -m bench.scripts.mend_corpus_table [--models t5,bart] > table.md     (about 10 min on 2 CPU cores)

Per model: breaks before and after (graphs - 1 from a counting backend), the rewrites applied,
the categories of the break sites before, the output check, and the measured scalar-capture
suggestion when `.item()`/dynamic-shape breaks are left. Totals for GraphMend's set and for all.
"""

from __future__ import annotations

import argparse
import collections
import sys

import torch

from bench.mend_corpus import corpus
from eqsat_torch.mend import mend


def _counts(items) -> str:
    return ", ".join(f"{k} x{n}" for k, n in collections.Counter(items).items()) or "-"


def row(name: str) -> tuple[str, int, int]:
    """One table row, and the model's (breaks before, breaks after)."""
    model, kwargs = corpus.build(name)
    with torch.no_grad():
        report = mend(model, (), kwargs, explain=False)
    report.patch.undo()
    outputs = "bit-identical" if report.outputs_equal else f"DIFFERENT ({report.detail})"
    if report.outputs_equal and "compiled run" in report.detail:
        outputs = "bit-identical to the compiled original (which differs from eager)"
    line = (f"| {name} | {report.before.breaks} | {report.after.breaks} | {_counts(d.rule for d in report.applied)} | "
            f"{_counts(s.category for s in report.before.sites)} | {outputs} | {report.suggestion or '-'} |")
    return line, report.before.breaks, report.after.breaks


def _total(label: str, pairs: list[tuple[int, int]]) -> str:
    before, after = sum(b for b, _ in pairs), sum(a for _, a in pairs)
    share = 100 * (before - after) / before if before else 0.0
    return f"| **{label}** | **{before}** | **{after}** | **{before - after} removed = {share:.1f}%** | | | |"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scripts.mend_corpus_table", description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(corpus.models()), help="comma-separated corpus names")
    names = parser.parse_args(argv).models.split(",")
    print("| model | breaks before | after | rewrites | break sites before | outputs | suggested config (measured) |")
    print("|---|---|---|---|---|---|---|")
    results = {}
    for name in names:
        line, before, after = row(name)
        results[name] = (before, after)
        print(line, flush=True)
    paper = [v for k, v in results.items() if k in corpus.GRAPHMEND]
    if paper:
        print(_total("GraphMend's models", paper))
    print(_total("all", list(results.values())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
