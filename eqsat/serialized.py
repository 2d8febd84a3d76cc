"""A typed view of egglog's serialized e-graph: term e-nodes with decoded literals, plus analyses.

The JSON mixes program e-nodes (Tensor / TTuple / TList constructors) with analysis rows (``shape``,
``dtype``, ``IsParam``) and primitive literals. Extraction, cost and raising only want the
program part, with every literal argument already decoded and shapes looked up per e-class.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterable

from .ops import constructors
from .schema import ID_CTORS, NAME_CTORS, TERM_SORTS

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


ROOT = object()  # the source of a raising walk: an edge to every root, in order


@dataclass
class Walk:
    """A depth-first walk of a program from its roots, children in argument order."""

    preorder: list[str]   # classes in the order first reached
    postorder: list[str]  # producers first
    acyclic: bool


def walk(view: EGraphView, roots: Iterable[str], choice: Choice) -> Walk:
    """Walk the program ``choice`` from ``roots`` (a child without a chosen node is a leaf). Plain
    Python: building a networkx graph for each walk was most of the time pricing a candidate."""
    pre: list[str] = []
    post: list[str] = []
    on_stack: dict[str, bool] = {}  # reached class → still on the stack
    acyclic = True

    def kids(c: str):
        return iter(dict.fromkeys(view.nodes[choice[c]].children)) if c in choice else iter(())

    for r in dict.fromkeys(roots):
        if r in on_stack:
            continue
        on_stack[r] = True
        pre.append(r)
        stack = [(r, kids(r))]
        while stack:
            c, it = stack[-1]
            for k in it:
                if k not in on_stack:
                    on_stack[k] = True
                    pre.append(k)
                    stack.append((k, kids(k)))
                    break
                acyclic &= not on_stack[k]
            else:
                stack.pop()
                on_stack[c] = False
                post.append(c)
    return Walk(pre, post, acyclic)


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
    terms = constructors()
    for nid_, node in raw.items():
        op, ecls = node["op"], node["eclass"]
        if ecls in view.sort:
            if node.get("subsumed") or op in ID_CTORS:  # a loading number (eqsat.bulk), not a program e-node
                continue
            if op in NAME_CTORS:  # a bound name (Program.let), not a program e-node
                view.lets[_decode(raw, node["children"][0])] = ecls
                continue
            if op not in terms:  # a rule's own table of terms (rules/listpat.py's picks)
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

