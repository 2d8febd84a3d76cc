"""Markdown tables: the one place the harness and its scripts format them.

A cell is any value; ``str`` of it, with ``|`` escaped and line breaks flattened so an error message
cannot split a row. Scripts that print rows as they are measured use ``header`` once, then ``row``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def cell(value: object) -> str:
    return " ".join(str(value).split()).replace("|", "\\|")


def row(cells: Iterable[object]) -> str:
    return "| " + " | ".join(cell(c) for c in cells) + " |"


def header(columns: Sequence[object]) -> list[str]:
    """The column names and the separator line under them."""
    return [row(columns), "|" + "---|" * len(columns)]


def table(columns: Sequence[object], rows: Iterable[Sequence[object]]) -> list[str]:
    """Header, separator and one line per row; a row must have one cell per column."""
    lines = header(columns)
    for cells in rows:
        if len(cells) != len(columns):
            raise ValueError(f"a row of {len(cells)} cells under {len(columns)} columns: {list(cells)}")
        lines.append(row(cells))
    return lines
