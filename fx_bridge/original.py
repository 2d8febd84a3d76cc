"""Find the input program inside the saturated e-graph.

egglog keeps every e-node it was given, so each term lowering emitted is still there, now in a
(possibly larger) e-class. Matching them by constructor and argument classes gives the input program
as a choice: the cost to beat ("never worse"), and the nodes whose FX names and metadata raising keeps.
"""
from __future__ import annotations

import torch

from eqsat.extract import Choice
from eqsat.serialized import EGraphView, ENode

from .lower import Lowered
from .terms import IVec, Ref, Term, TList


class _Matcher:
    def __init__(self, low: Lowered, view: EGraphView):
        self.low, self.view = low, view
        self.choice: Choice = {}

    def cls(self, ref: Ref) -> str:
        return self.view.lets[ref.let]

    def match_list(self, list_cls: str, items: tuple) -> bool:
        """Choose cons cells of ``list_cls`` that spell ``items``. A list class can hold several cells
        with the same head once rules union lists, so this searches (iteratively, lists can be long)
        for a chain that ends in ``TNil`` instead of taking the first cell that fits."""
        heads = [self.cls(item) for item in items]
        ok: dict[tuple[str, int], str | None] = {}  # (class, position) → the cell that works, or None
        stack = [(list_cls, 0)]
        while stack:
            cls, k = stack[-1]
            if (cls, k) in ok:
                stack.pop()
                continue
            if k == len(heads):
                ok[(cls, k)] = next((n.id for n in self._nodes(cls) if n.ctor == "TNil"), None)
                stack.pop()
                continue
            cells = [n for n in self._nodes(cls) if n.ctor == "TCons" and n.children[0] == heads[k]]
            pending = [(n.children[1], k + 1) for n in cells if (n.children[1], k + 1) not in ok]
            if pending:
                stack.extend(pending)
                continue
            ok[(cls, k)] = next((n.id for n in cells if ok[(n.children[1], k + 1)] is not None), None)
            stack.pop()
        if ok[(list_cls, 0)] is None:
            return False
        cls = list_cls
        for k in range(len(heads) + 1):
            cell = ok[(cls, k)]
            self.choice[cls] = cell
            if k < len(heads):
                cls = self.view.nodes[cell].children[1]
        return True

    def _nodes(self, cls: str):
        return (self.view.nodes[i] for i in self.view.classes[cls])

    def matches(self, node: ENode, term: Term) -> bool:
        if node.ctor != term.ctor or len(node.args) != len(term.args):
            return False
        for (kind, v), a in zip(node.args, term.args):
            if isinstance(a, Ref):
                if kind != "class" or v != self.cls(a):
                    return False
            elif isinstance(a, TList):
                if kind != "class" or not self.match_list(v, a.items):
                    return False
            elif kind != "lit" or v != (tuple(a.items) if isinstance(a, IVec) else a):
                return False
        return True

    def term_node(self, let: str, term: Term) -> ENode | None:
        cls = self.view.lets.get(let)
        if cls is None:
            return None
        return next((n for n in self._nodes(cls) if self.matches(n, term)), None)


def original_program(low: Lowered, view: EGraphView
                     ) -> tuple[Choice, dict[str, torch.fx.Node], dict[str, set[str]]]:
    """The input program inside the saturated e-graph: a choice (where rules merged two of its
    classes, the earliest term wins, so this may already be cheaper than the input), the FX node
    each input e-node came from, and every input e-node of each class."""
    m = _Matcher(low, view)
    fx_of_enode: dict[str, torch.fx.Node] = {}
    nodes_of_class: dict[str, set[str]] = {}
    for let, term in low.originals.items():
        node = m.term_node(let, term)
        if node is None:
            raise LookupError(f"term {let} = {term} is missing from the e-graph")
        m.choice.setdefault(node.eclass, node.id)
        nodes_of_class.setdefault(node.eclass, set()).add(node.id)
        fx_node = low.node_of_let.get(let)
        if fx_node is not None:
            fx_of_enode.setdefault(node.id, fx_node)
    return m.choice, fx_of_enode, nodes_of_class
