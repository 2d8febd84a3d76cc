"""Cost of a program: α·kernel launches + β·bytes moved, per e-node, from the op category.

This is the first, simple model (each non-view op is one kernel reading its inputs and writing its
output); the extractor only needs ``node_cost``, so a finer model can replace it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .ops import CTOR_CATEGORY, Category
from .serialized import EGraphView, ENode

DTYPE_BYTES = {
    "float64": 8, "int64": 8, "complex64": 8, "float32": 4, "int32": 4,
    "float16": 2, "bfloat16": 2, "int16": 2, "int8": 1, "uint8": 1, "bool": 1, "scalar": 0,
}
UNKNOWN = 1e12  # a node whose shape no analysis derived is never worth choosing


@dataclass(frozen=True)
class CostModel:
    alpha: float = 1.0      # per kernel launch
    beta: float = 1e-6      # per byte read or written

    def nbytes(self, view: EGraphView, cls: str) -> float | None:
        shp = view.shape.get(cls)
        if shp is None:
            return None
        return math.prod(shp) * DTYPE_BYTES.get(view.dtype.get(cls, "float32"), 4)

    def node_cost(self, node: ENode, view: EGraphView) -> float:
        cat = CTOR_CATEGORY.get(node.ctor, Category.OPAQUE)
        if cat in (Category.SOURCE, Category.VIEW):
            return 0.0
        out = self.nbytes(view, node.eclass)
        ins = [self.nbytes(view, c) for c in node.children if view.sort.get(c) == "Tensor"]
        if node.ctor in ("Cat", "Stack"):
            ins = [self.nbytes(view, c) for c in _list_elems(node, view)]
        if node.ctor == "Opaque":
            return self.alpha  # its outputs are read through Get, whose shapes we know
        if out is None or any(b is None for b in ins):
            return UNKNOWN
        return self.alpha + self.beta * (out + sum(ins))


def _list_elems(node: ENode, view: EGraphView) -> list[str]:
    """The element classes of a cat/stack's cons list, following each cell's first choice."""
    out, cls, seen = [], node.children[0], set()
    while cls not in seen:
        seen.add(cls)
        cell = next((view.nodes[n] for n in view.classes[cls] if view.nodes[n].ctor == "TCons"), None)
        if cell is None:
            break
        out.append(cell.children[0])
        cls = cell.children[1]
    return out
