"""Extraction: choose one e-node per needed e-class so the program is acyclic and cheap.

``bottom_up`` is the tree-optimal baseline (a Dijkstra-style pass: a class is final once its cheapest
node's children are all final, so the choice is acyclic by construction). ``dag_cost`` prices a
choice counting every shared class once, which is how the program really runs.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Callable, Iterable

from .serialized import EGraphView, ENode

NodeCost = Callable[[ENode, EGraphView], float]
Choice = dict[str, str]  # e-class → chosen e-node id


@dataclass
class Extraction:
    choice: Choice
    cost: float
    extractor: str
    seconds: float = 0.0


class ExtractionError(RuntimeError):
    pass


def bottom_up(view: EGraphView, roots: Iterable[str], node_cost: NodeCost) -> Choice:
    """Tree-optimal choice for every class reachable from ``roots``."""
    parents: dict[str, list[str]] = {}
    pending: dict[str, int] = {}
    own: dict[str, float] = {}
    heap: list[tuple[float, str]] = []
    for nid, node in view.nodes.items():
        kids = set(node.children)
        pending[nid] = len(kids)
        own[nid] = node_cost(node, view)
        for c in kids:
            parents.setdefault(c, []).append(nid)
        if not kids:
            heapq.heappush(heap, (own[nid], nid))
    best: dict[str, float] = {}
    choice: Choice = {}
    while heap:
        cost, nid = heapq.heappop(heap)
        cls = view.nodes[nid].eclass
        if cls in choice:
            continue
        choice[cls], best[cls] = nid, cost
        for p in parents.get(cls, ()):
            pending[p] -= 1
            if pending[p] == 0:
                pnode = view.nodes[p]
                total = own[p] + sum(best[c] for c in set(pnode.children))
                heapq.heappush(heap, (total, p))
    missing = [r for r in roots if r not in choice]
    if missing:
        raise ExtractionError(f"no finite program for e-classes {missing[:5]}")
    return reachable(view, roots, choice)


def reachable(view: EGraphView, roots: Iterable[str], choice: Choice) -> Choice:
    """The part of ``choice`` the roots actually use (iterative: graphs can be thousands deep)."""
    out: Choice = {}
    stack = list(roots)
    while stack:
        cls = stack.pop()
        if cls in out:
            continue
        out[cls] = choice[cls]
        stack.extend(view.nodes[choice[cls]].children)
    return out


def dag_cost(view: EGraphView, choice: Choice, node_cost: NodeCost) -> float:
    """Cost of the program ``choice`` describes, each class paid once however often it is read."""
    return sum(node_cost(view.nodes[n], view) for n in choice.values())


def is_acyclic(view: EGraphView, roots: Iterable[str], choice: Choice) -> bool:
    state: dict[str, int] = {}  # 1 = on stack, 2 = done
    for root in roots:
        stack = [(root, iter(view.nodes[choice[root]].children))]
        if state.get(root) == 2:
            continue
        state[root] = 1
        while stack:
            cls, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[cls] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return False
            elif nxt not in state:
                state[nxt] = 1
                stack.append((nxt, iter(view.nodes[choice[nxt]].children)))
    return True
