"""The vocabulary of the fusion model: a ``Kernel``, the bytes and sizes of e-classes, and Inductor's
thresholds that decide what a kernel is (split reductions, outer products, matmuls writing cat slices).
``eqsat.fusion`` plans kernels from a chosen program, ``eqsat.fusion_groups`` fuses them."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable

from .ops import Ctor, Role
from .serialized import Choice, EGraphView, ENode, walk

DTYPE_BYTES = {
    "float64": 8, "int64": 8, "complex64": 8, "float32": 4, "int32": 4,
    "float16": 2, "bfloat16": 2, "int16": 2, "int8": 1, "uint8": 1, "bool": 1, "scalar": 0, "scalar_float": 0,
}


def class_bytes(view: EGraphView, cls: str) -> float | None:
    """Bytes of the tensor an e-class holds; None when no analysis derived its shape."""
    shp = view.shape.get(cls)
    if shp is None:
        return None
    return math.prod(shp) * DTYPE_BYTES.get(view.dtype.get(cls, "float32"), 4)


def numel(view: EGraphView, cls: str) -> int:
    shp = view.shape.get(cls)
    return math.prod(shp) if shp is not None else -1


def matmul_writes_cat_slice(view: EGraphView, cls: str) -> bool:
    """Inductor lets a 2-D matmul (mm, addmm) write its result straight into a cat's slice; a batched
    one (bmm, baddbmm, a linear or matmul of 3-D operands: a view of an mm) is copied there by a
    kernel of its own (H200 probe: cat([layer_norm(x), bmm(a, b)]) is 3 launches, with mm it is 2)."""
    shape = view.shape.get(cls)
    return shape is not None and len(shape) == 2




def _left_operand(node: ENode) -> int:
    """Where a matmul's left operand is: after the bias of ``addmm`` and ``baddbmm``."""
    return 1 if node.ctor in Role.BIAS_FIRST else 0


def outer_product(view: EGraphView, node: ENode) -> bool:
    """A matmul contracting one element, which Inductor decomposes for a GPU into a broadcast
    multiply (``torch._inductor.decomposition``: a ``bmm`` of ``[B, M, 1] @ [B, 1, N]``, an ``mm`` or
    ``addmm`` with K = 1 unless M or N is 1): a pointwise op that fuses, no extern call. The rotary
    embedding's ``inv_freq @ position_ids`` of Llama-style models (fake H200: Mixtral's 2)."""
    a = node.children[_left_operand(node)]
    shape_a, out = view.shape.get(a), view.shape.get(node.eclass)
    if not shape_a or not out or len(out) < 2 or shape_a[-1] != 1:
        return False
    b = node.children[_left_operand(node) + 1] if len(node.children) > 1 else None
    batched = node.ctor in Role.BATCHED_MATMUL or node.ctor == Ctor.MATMUL and len(view.shape.get(b) or ()) >= 3
    return batched or (out[-2] != 1 and out[-1] != 1)


def list_elements(view: EGraphView, list_cls: str, choice: Choice | None = None) -> list[str]:
    """Element classes of a cons list: the chosen cells, or each cell's first ``TCons`` node."""
    out: list[str] = []
    seen: set[str] = set()
    cls = list_cls
    while cls not in seen:
        seen.add(cls)
        if choice is not None:
            cell = view.nodes[choice[cls]]
        else:
            cell = next((view.nodes[n] for n in view.classes[cls] if view.nodes[n].ctor == Ctor.CONS), None)
        if cell is None or cell.ctor != Ctor.CONS:
            break
        out.append(cell.children[0])
        cls = cell.children[1]
    return out


@dataclass
class Kernel:
    """One schedulable unit: a fusible buffer computation, a copy into a cat slice, or an extern call."""

    index: int
    kind: str                   # "pointwise" | "reduction" | "extern"
    writes: str | None          # the buffer (e-class, or "copy:…" for cat-slice copies) it computes
    out_bytes: float
    space: tuple[int, int]      # (outer numel, reduced numel); pointwise is (numel, 1)
    reads: dict[str, float] = field(default_factory=dict)  # buffer → bytes read
    lead: int = 0               # extent of the first dim: the CPU backend fuses loops sharing it
    views: frozenset = frozenset()  # the exact tensors (views included) it reads: Triton fuses
    #                                 kernels horizontally only when they read the same indices
    copy_of: str | None = None  # the cat whose slice this copy writes
    copies_input: bool = False  # … of a whole graph input or parameter (Triton: one foreach kernel)
    fuses: bool = True          # False: a generated kernel that fuses with nothing (a scatter)
    split: bool = False         # a reduction Triton runs in two kernels (see ``splits_reduction``)
    inner: bool = True          # a reduction of the innermost dims (``_Planner._inner_reduction``)
    index_reads: frozenset = frozenset()  # a scatter's index and values: their producers fuse into it


def topo_order(view: EGraphView, roots: Iterable[str], choice: Choice) -> list[str]:
    """Chosen classes reachable from ``roots``, producers first (depth-first post-order)."""
    return walk(view, roots, choice).postorder



def splits_reduction(numel: int, rnumel: int, inner: bool, num_sm: int) -> bool:
    """Whether Triton splits a reduction of ``numel`` outputs over ``rnumel`` elements into two
    kernels (a partial reduction, then one over the partials) on a GPU of ``num_sm`` multiprocessors
    (0: never, the C++ backend), after Inductor's ``num_splits`` / ``reduction_split_factor``: too few
    outputs to fill the GPU (fewer than ``2·num_sm`` for a row sum, ``64·num_sm`` for a column sum)
    and a reduction long enough to share out (more than 8192 elements in a row, more than 4 × 32
    (values per thread × the least split) down a column). H200 (132 SMs): wukong's layer-norm weight
    and bias gradients, column sums of 16 outputs over 1024 rows, are a ``triton_red`` and a
    ``triton_per`` each."""
    if num_sm <= 0 or numel >= num_sm * 64 or rnumel <= 32:
        return False
    return numel < 2 * num_sm and rnumel > 8192 if inner else rnumel > 128


def lead_extent(view: EGraphView, cls: str) -> int:
    shp = view.shape.get(cls)
    return shp[0] if shp else 1

