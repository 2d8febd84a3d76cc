"""Detect graph breaks with Dynamo itself and classify each one by registry code and AST node.

The break count is `graphs - 1` from a counting backend (the metric explain derives), raised to
the number of logged breaks when Dynamo gave up on a whole frame; explain's own count is kept
next to it because it under-reports (whole-frame fallback gives -1).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from eqsat_torch.mend import dynamo_compat, runtime
from eqsat_torch.mend.rule_trap import is_validation_guard
from eqsat_torch.mend.source import enclosing_function, parse_file, statement_at

DATA_DEPENDENT = "data-dependent control flow"
SIDE_EFFECT = "print/logging/warnings"
VALIDATION = "validation guard"
SCALAR_READ = ".item()/.tolist()"
DYNAMIC_SHAPE = "dynamic-shape op"
OTHER = "other"

_SIDE_EFFECT_CODES = {"GB0059", "GB0291", "GB0007"}
_SCALAR_CODES = {"GB0124", "GB0109"}


@dataclass
class Site:
    """A distinct break location (innermost user frame) and how often Dynamo hit it."""

    filename: str
    lineno: int
    category: str
    gb_code: str | None
    gb_type: str
    frames: list[tuple[str, int]]
    hits: int = 1

    @property
    def where(self) -> str:
        return f"{self.filename}:{self.lineno}"


@dataclass
class Detection:
    graphs: int
    explain_breaks: int | None
    sites: list[Site] = field(default_factory=list)
    output: object = None

    @property
    def breaks(self) -> int:
        """graphs - 1, but never fewer than the breaks Dynamo logged: a break inside a loop
        makes Dynamo skip the whole frame (0 graphs; explain says -1)."""
        return max(self.graphs - 1, sum(site.hits for site in self.sites), 0)


def _node_at(filename: str, lineno: int) -> ast.stmt | None:
    tree = parse_file(filename)
    func = enclosing_function(tree, lineno) if tree else None
    return statement_at(func, lineno) if func else None


def _line_text(filename: str, lineno: int) -> str:
    """Source of the statement at the line (an `if`'s test only), for spotting `.item()`/`.tolist()`."""
    node = _node_at(filename, lineno)
    if node is None:
        return ""
    return ast.unparse(node.test if isinstance(node, (ast.If, ast.While)) else node)


def classify(raw: dynamo_compat.RawBreak) -> str:
    text = raw.text
    node = _node_at(raw.filename, raw.lineno)
    if raw.gb_code in _SIDE_EFFECT_CODES and any(k in text for k in ("print", "logging", "warn")):
        return SIDE_EFFECT
    if raw.gb_code in _SCALAR_CODES or ".item()" in _line_text(raw.filename, raw.lineno) or "item()" in raw.gb_type:
        return SCALAR_READ
    if raw.gb_code == "GB0036" or "Dynamic shape operator" in raw.gb_type:
        return DYNAMIC_SHAPE
    if raw.gb_code == "GB0033" and ".tolist()" in _line_text(raw.filename, raw.lineno):
        return SCALAR_READ
    if raw.gb_code in {"GB0170", "GB0033"} or "Data-dependent branching" in raw.gb_type:
        if node is not None and is_validation_guard(node):
            return VALIDATION
        return DATA_DEPENDENT if isinstance(node, (ast.If, ast.While)) else OTHER
    return OTHER


def detect(fn, args=(), kwargs=None, explain: bool = True) -> Detection:
    """Compile `fn` once with a counting backend and classify its breaks."""
    with runtime.boundary():
        cap, output = dynamo_compat.capture(fn, args, kwargs)
    sites: dict[tuple[str, int], Site] = {}
    for raw in cap.breaks:
        key = (raw.filename, raw.lineno)
        if key in sites:  # keep the longest user stack: an inlined call shows its callers, a fresh frame does not
            sites[key].hits += 1
            if len(raw.frames) > len(sites[key].frames):
                sites[key].frames = raw.frames
            continue
        sites[key] = Site(raw.filename, raw.lineno, classify(raw), raw.gb_code, raw.gb_type, raw.frames)
    explained = dynamo_compat.explain_break_count(fn, args, kwargs) if explain else None
    return Detection(cap.graphs, explained, list(sites.values()), output)
