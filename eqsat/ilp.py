"""DAG-optimal extraction as an ILP (SciPy's HiGHS), after breaking cycles inside SCCs only.

An ILP without ordering constraints is exact only on an acyclic e-graph, and ordering constraints make
HiGHS hopeless on real graphs. So cycles are cut first, and only where they live: inside each strongly
connected component of the class graph a node is kept only if its children in that component were
finalised earlier by the bottom-up pass (so the bottom-up choice survives); nodes crossing components,
where the fusion alternatives are, are all kept. Every solution of the pruned ILP is then acyclic.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Iterable

import networkx as nx
import numpy as np

from .serialized import Choice, EGraphView


def break_cycles(view: EGraphView, roots: Iterable[str], rank: dict[str, int], best: dict[str, float],
                 tree: Choice, costs: dict[str, float], finite: float) -> list[str]:
    """Nodes kept for the ILP: finite cost, reachable from the roots, no cycle among them, and not
    dominated: a node costing at least its class's tree-optimal program (``best``, the bottom-up
    choice ``tree``) is dropped, since that program, put in its place, adds at most ``best`` and
    removes the node (never dearer, still acyclic: the bottom-up program only reads its own classes).
    On a 1,024-way split→sigmoid→cat most classes are free views whose every other node goes."""
    succ: dict[str, list[str]] = {}
    stack, seen = list(roots), set(roots)
    while stack:
        c = stack.pop()
        kids = succ[c] = []
        for n in view.classes[c]:
            for k in view.nodes[n].children:
                kids.append(k)
                if k not in seen:
                    seen.add(k)
                    stack.append(k)
    comp = {c: i for i, scc in enumerate(nx.strongly_connected_components(nx.DiGraph(succ))) for c in scc}
    kept = []
    for c in succ:
        if c not in rank:
            continue
        for n in view.classes[c]:
            kids = view.nodes[n].children
            if costs[n] >= finite or any(k not in rank for k in kids) or (n != tree[c] and costs[n] >= best[c]):
                continue
            if all(comp[k] != comp[c] or rank[k] < rank[c] for k in kids):
                kept.append(n)
    return kept


@dataclass
class IlpResult:
    choice: Choice | None
    status: str
    gap: float | None
    objective: float | None
    variables: int


def solve(view: EGraphView, roots: list[str], kept: list[str], costs: dict[str, float],
          time_limit: float, node_limit: int | None = None) -> IlpResult:
    """Minimise Σ cost·x over kept nodes: roots chosen, every chosen node's child classes chosen.
    ``node_limit`` (branch-and-bound nodes) is the work limit that keeps the answer the same on any
    machine; ``time_limit`` is only the outer safety."""
    # SciPy on first use: it is a second of import that a compile served from the cache never needs
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    if not kept:  # SciPy refuses a problem with no columns: nothing to choose is trivially optimal
        return IlpResult(None, "infeasible: no columns", None, None, 0) if roots else IlpResult({}, "optimal", None, 0.0, 0)
    t0 = time.perf_counter()
    col = {n: i for i, n in enumerate(kept)}
    members: dict[str, list[int]] = {}
    for n in kept:
        members.setdefault(view.nodes[n].eclass, []).append(col[n])
    rows, cols, vals, lower = [], [], [], []

    def add_row(entries: list[tuple[int, float]], lo: float) -> None:
        r = len(lower)
        for j, v in entries:
            rows.append(r)
            cols.append(j)
            vals.append(v)
        lower.append(lo)

    for r in dict.fromkeys(roots):
        add_row([(j, 1.0) for j in members.get(r, [])], 1.0)
    for n in kept:
        for k in set(view.nodes[n].children):
            add_row([(j, 1.0) for j in members.get(k, [])] + [(col[n], -1.0)], 0.0)
    a = coo_matrix((vals, (rows, cols)), shape=(len(lower), len(kept))).tocsr()
    c = np.array([costs[n] for n in kept])
    remaining = max(time_limit - (time.perf_counter() - t0), 0.05)
    res = milp(c, constraints=LinearConstraint(a, np.array(lower), np.inf), integrality=np.ones(len(kept)),
               bounds=Bounds(0, 1), options={"time_limit": remaining, "disp": False,
                                             **({"node_limit": node_limit} if node_limit is not None else {})})
    if res.x is None:
        return IlpResult(None, res.message, None, None, len(kept))
    chosen = {n for n in kept if res.x[col[n]] > 0.5}
    best: Choice = {}
    for n in sorted(chosen, key=lambda n: costs[n]):
        best.setdefault(view.nodes[n].eclass, n)
    gap = getattr(res, "mip_gap", None)
    return IlpResult(best, "optimal" if res.status == 0 else "work or time limit", None if res.status == 0 else gap,
                     float(res.fun), len(kept))
