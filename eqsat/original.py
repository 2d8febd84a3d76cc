"""The input program: found in an e-graph and priced, by one function (``input_program``).

egglog keeps every e-node it was given, so each term lowering emitted is still there, later in a
(possibly larger) e-class. Matching them by constructor and argument classes gives the input program
as a choice. Before any rule ran that is exactly the program as written: its price is the cost to
beat ("never worse"). After saturation it is the extractor's "input" candidate, and its e-nodes are
the ones whose FX names and metadata raising keeps.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from .cost import CostModel, ProgramCost
from .ops import Ctor
from .serialized import Choice, EGraphView, ENode
from .terms import IVec, Ref, Term, TList


@dataclass
class InputProgram:
    choice: Choice                         # one input e-node per class (where classes merged, the earliest)
    roots: list[str]                       # the classes of the program's outputs
    enode_of_let: dict[str, str]           # let → the e-node of its term
    nodes_of_class: dict[str, set[str]]    # class → every input e-node in it
    cost: ProgramCost | None = None        # priced with the model given


class _Matcher:
    def __init__(self, view: EGraphView):
        self.view = view
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
                ok[(cls, k)] = next((n.id for n in self._nodes(cls) if n.ctor == Ctor.NIL), None)
                stack.pop()
                continue
            cells = [n for n in self._nodes(cls) if n.ctor == Ctor.CONS and n.children[0] == heads[k]]
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


def input_program(view: EGraphView, originals: Mapping[str, Term], roots: Sequence[str],
                  model: CostModel | None = None) -> InputProgram:
    """The program ``originals`` (let → term, in binding order) with outputs ``roots`` (lets), found in
    ``view``, and priced with ``model`` when one is given. Where rules merged two of its classes the
    earliest term wins, so after saturation this may already be cheaper than the input."""
    m = _Matcher(view)
    enode_of_let: dict[str, str] = {}
    nodes_of_class: dict[str, set[str]] = {}
    for let, term in originals.items():
        node = m.term_node(let, term)
        if node is None:
            raise LookupError(f"term {let} = {term} is missing from the e-graph")
        m.choice.setdefault(node.eclass, node.id)
        nodes_of_class.setdefault(node.eclass, set()).add(node.id)
        enode_of_let[let] = node.id
    classes = [view.lets[let] for let in roots]
    cost = model.program_cost(view, m.choice, classes) if model is not None else None
    return InputProgram(m.choice, classes, enode_of_let, nodes_of_class, cost)
