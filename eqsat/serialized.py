"""A typed view of egglog's serialized e-graph: term e-nodes with decoded literals, plus analyses.

The JSON mixes program e-nodes (Tensor / TTuple / TList constructors) with analysis rows (``shape``,
``dtype``, ``IsParam``) and primitive literals. Extraction, cost and raising only want the
program part, with every literal argument already decoded and shapes looked up per e-class.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterable, Iterator

import networkx as nx

from .schema import NAME_CTORS, TERM_SORTS

Arg = tuple  # ("class", class_id) for a term child, ("lit", value) for a literal
Choice = dict[str, str]  # e-class → chosen e-node id: a program read out of the e-graph


@dataclass
class ENode:
    id: str
    ctor: str
    eclass: str
    args: list[Arg]

    @cached_property
    def children(self) -> tuple[str, ...]:
        """The term e-classes this node reads, in argument order (read on every walk: cached)."""
        return tuple(a[1] for a in self.args if a[0] == "class")


@dataclass
class EGraphView:
    nodes: dict[str, ENode] = field(default_factory=dict)
    classes: dict[str, list[str]] = field(default_factory=dict)  # term class → node ids
    sort: dict[str, str] = field(default_factory=dict)           # term class → Tensor/TTuple/TList
    lets: dict[str, str] = field(default_factory=dict)           # let name → term class
    shape: dict[str, tuple] = field(default_factory=dict)
    dtype: dict[str, str] = field(default_factory=dict)
    params: set[str] = field(default_factory=set)

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)


ROOT = object()  # the source of a choice graph: an edge to every root, in order


def choice_graph(view: EGraphView, roots: Iterable[str], choice: Choice) -> nx.DiGraph:
    """Class → child class edges of the program ``choice`` describes, children in argument order,
    plus ``ROOT`` → each root: walks from ``ROOT`` visit exactly what the roots use."""
    g = nx.DiGraph()
    g.add_edges_from((ROOT, r) for r in roots)
    g.add_edges_from((cls, k) for cls, nid in choice.items() for k in view.nodes[nid].children)
    return g


def _walk(view: EGraphView, roots: Iterable[str], choice: Choice) -> Iterator[tuple[str, bool]]:
    """Depth-first walk of the program ``choice`` from ``roots``, children in argument order:
    (class, True) when a class is entered, (class, False) when it is left — the order of networkx's
    walks of :func:`choice_graph` from ``ROOT``, without building the graph (extraction's search walks
    thousands of candidate programs)."""
    seen: set[str] = set()
    stack: list[tuple[str | None, Iterator[str]]] = [(None, iter(roots))]
    while stack:
        for cls in stack[-1][1]:
            if cls not in seen:
                seen.add(cls)
                yield cls, True
                nid = choice.get(cls)
                stack.append((cls, iter(view.nodes[nid].children if nid is not None else ())))
                break
        else:
            left, _ = stack.pop()
            if left is not None:
                yield left, False


def preorder(view: EGraphView, roots: Iterable[str], choice: Choice) -> list[str]:
    """Classes the roots use, each before its children."""
    return [cls for cls, entered in _walk(view, roots, choice) if entered]


def postorder(view: EGraphView, roots: Iterable[str], choice: Choice) -> list[str]:
    """Classes the roots use, producers first."""
    return [cls for cls, entered in _walk(view, roots, choice) if not entered]


def _decode(raw: dict, node_id: str):
    node = raw[node_id]
    op = node["op"]
    if op == "vec-of":
        return tuple(_decode(raw, c) for c in node["children"])
    if op == "vec-empty":
        return ()
    if op.startswith('"'):
        return json.loads(op)
    if op in ("true", "false"):
        return op == "true"
    try:
        return int(op)
    except ValueError:
        return float(op)


def parse(data: dict) -> EGraphView:
    """Decode ``egraph._serialize().to_json()`` output into an :class:`EGraphView`."""
    raw = data["nodes"]
    class_data = data["class_data"]
    view = EGraphView()
    for cid, info in class_data.items():
        if info.get("type") in TERM_SORTS:
            view.sort[cid] = info["type"]
            view.classes[cid] = []
            for name in info.get("let", "").split(","):
                if name.strip():
                    view.lets[name.strip()] = cid
    analyses = {"shape": view.shape, "dtype": view.dtype}
    literal_of_class = {v["eclass"]: k for k, v in raw.items() if k.startswith("primitive-")}
    for nid_, node in raw.items():
        op, ecls = node["op"], node["eclass"]
        if ecls in view.sort:
            if node.get("subsumed"):
                continue
            if op in NAME_CTORS:  # a bound name (Program.let), not a program e-node
                view.lets[_decode(raw, node["children"][0])] = ecls
                continue
            args = [("class", raw[c]["eclass"]) if raw[c]["eclass"] in view.sort else ("lit", _decode(raw, c))
                    for c in node["children"]]
            view.nodes[nid_] = ENode(nid_, op, ecls, args)
            view.classes[ecls].append(nid_)
        elif op in analyses:
            tensor_class = raw[node["children"][0]]["eclass"]
            analyses[op][tensor_class] = _decode(raw, literal_of_class[ecls])
        elif op == "IsParam":
            view.params.add(raw[node["children"][0]]["eclass"])
    return view

