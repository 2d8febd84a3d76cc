"""Cost of a program: α·kernel launches + β·bytes moved, modelled on what Inductor generates.

One formula, ``CostModel.kernel_price(launches, bytes, loop nests)``, priced in two views:
- ``program_cost(view, choice, roots)`` prices a whole chosen program: it groups fusible nodes into
  the kernels Inductor would generate (``eqsat.fusion``) and counts bytes crossing kernel boundaries.
  The "never worse than the input" comparison and the report use it.
- ``node_cost(node, view)`` is its per-e-node linear approximation, which bottom-up and the ILP
  optimise: the price of the node's share of a kernel (``launch_and_bytes``): a pointwise op pays a
  share of a launch and of its output bytes (it usually fuses), a reduction or extern op a full
  launch plus its traffic, views and sources nothing. Where nothing fuses (a program of extern
  calls) the two agree exactly (``tests/eqsat/test_one_cost_formula.py``).
Costs are in microseconds: α is the time per launch, β the time per byte. On CPU a launch is a call of
one C++ function, which holds every fused group between two extern calls (``CostModel._cpp_correction``).

``train_step`` prices the pre-grad graph of a training step, whose backward AOTAutograd derives from
what we choose: a matmul's backward is two matmuls of its size (input and weight gradient), a
reduction's or norm's two reductions, every other kernel's roughly one of its own, except a cat (its
backward slices the gradient: views) and a split (its backward concatenates the pieces' gradients). So fusing q/k/v in training
saves 6 matmul launches for one weight cat and one gradient cat.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from .combo import combo_savings, group_deps
from .fusion import plan_groups
from .kernel import Kernel, class_bytes, list_elements, matmul_writes_cat_slice, outer_product, topo_order
from .ops import CTOR_CATEGORY, Category, Ctor, Role, is_free_unary
from .serialized import Choice, EGraphView, ENode

UNKNOWN = 1e12  # a node whose shape no analysis derived is never worth choosing
TWO_STEP_VARIANCE = 1024  # torch._inductor.config.cpp.use_two_step_variance_threshold

# A training step's kernels per forward kernel: a matmul has two gradient matmuls; a reduction or norm
# two gradient reductions (the input's, and the other operand's or the affine weights'), whatever
# form the same contraction takes (mm, or a decomposed mul + sum); any other op one (the default, 2).
_STEP_FACTOR = {Category.MATMUL: 3.0, Category.REDUCTION: 3.0, Category.NORM: 3.0}

# Per-node share of a launch and of the output bytes, by category: the linear stand-in for fusion.
LAUNCH_SHARE = {Category.POINTWISE: 0.25, Category.REDUCTION: 1.0, Category.NORM: 1.0,
                Category.MATMUL: 1.0, Category.OPAQUE: 1.0, Category.COPY: 1.0}
WRITE_SHARE = {Category.POINTWISE: 0.5, Category.REDUCTION: 1.0, Category.NORM: 1.0,
               Category.MATMUL: 1.0, Category.OPAQUE: 1.0, Category.COPY: 1.0}
READS_INPUTS = {Category.REDUCTION, Category.NORM, Category.MATMUL}
FUSIBLE = {Category.POINTWISE, Category.REDUCTION, Category.NORM}


@dataclass(frozen=True)
class ProgramCost:
    generated: int
    extern: int
    bytes: float
    cost: float
    loops: int = 0  # loop nests inside the generated kernels (what CPU generated_kernel_count counts)

    @property
    def kernels(self) -> int:
        return self.generated + self.extern


@dataclass(frozen=True)
class CostModel:
    """α·launches + β·bytes. Defaults: fitted on CPU by ``bench/scripts/calibrate.py`` (see its table)."""

    alpha: float = 5.0        # µs per kernel launch
    beta: float = 1e-4        # µs per byte read or written
    frozen_params: bool = False  # weights folded by Inductor (freezing): a cat of params is free
    pointwise_cat_inputs: int = 8  # GPU Inductor lowers cats of ≤ 8 inputs to a fusible pointwise op
    outer_loop_fusion: bool = False  # the C++ (CPU) backend fuses every loop nest sharing the outer loop
    loop_cost: float = 0.0    # µs per loop nest inside a fused kernel (CPU: an OpenMP barrier each)
    train_step: bool = False  # a forward graph whose backward follows from our choice (see module doc)
    split_sms: int = 0        # GPU multiprocessors: Triton splits reductions with too few outputs in two
    # One op on a stack of independent pointwise operands can pay (Optimus' batch_tanh, ...): on CPU it
    # is one loop nest for many. Not under Triton: Inductor already fuses each into its neighbours,
    # and the stack makes it materialise operands it fused before (zoo Llama, H200 model on the fake
    # H200: 31 launches as written, 38 with the rotary embedding's q/k products batched, 27 without).
    batch_pointwise: bool = True
    # Inductor's combo kernels are on in the compile (``torch._inductor.config.combo_kernels``): the
    # independent generated kernels of one dependency level, 8 at a time, launch as one kernel per
    # kind (pointwise, reduction); extern calls never join (``combo_savings``)
    combo_kernels: bool = False

    @classmethod
    def for_device(cls, device: str, **kw) -> "CostModel":
        """CPU Inductor always emits ConcatKernel and fuses by outer loop. On a GPU, α and β are the
        least-squares fit of H200 latency on launches and bytes over the calibration corpus
        (``results/…nvidia-h200/calibrate.txt``): 13.9 µs per launch, 4.05e-6 µs per byte. An
        H200 has 132 multiprocessors (``eqsat.kernel.splits_reduction``)."""
        if device == "cpu":
            kw = {"pointwise_cat_inputs": 0, "outer_loop_fusion": True, "loop_cost": 1.0, **kw}
        else:
            kw = {"alpha": 13.9, "beta": 4.05e-6, "split_sms": 132, "batch_pointwise": False, **kw}
        return cls(**kw)

    @property
    def gpu(self) -> bool:
        """A model of Inductor's Triton backend (``for_device("cuda")``), not of its C++ one."""
        return self.split_sms > 0

    def kernel_price(self, launch_count: float, nbytes: float, loops: float = 0) -> float:
        """The model's one formula: α per launch, β per byte moved, ``loop_cost`` per loop nest. A whole
        program pays it per fused group (``program_cost``), an e-node for its share of a kernel
        (``node_cost``)."""
        return self.alpha * launch_count + self.beta * nbytes + self.loop_cost * loops

    # -- whole program -------------------------------------------------------------------------
    def program_cost(self, view: EGraphView, choice: Choice, roots: Iterable[str]) -> ProgramCost:
        roots = list(roots)
        groups, group_bytes = plan_groups(view, choice, roots, self.frozen_params,
                                          self.pointwise_cat_inputs, self.outer_loop_fusion, self.split_sms)
        extern = sum(1 for g in groups if g[0].kind == "extern")
        generated = sum(launches(g) for g in groups) - extern
        loops = sum(len(g) for g in groups if g[0].kind != "extern")
        nbytes = sum(group_bytes)
        cost = 0.0
        for g, b in zip(groups, group_bytes):
            n_loops = 0 if g[0].kind == "extern" else len(g)
            cost += self._backward_factor(view, choice, g) * self.kernel_price(launches(g), b, n_loops)
        if self.train_step:
            cost += sum(self._split_backward(view, view.nodes[choice[c]])
                        for c in topo_order(view, roots, choice) if view.nodes[choice[c]].ctor == Ctor.SPLIT)

        if self.outer_loop_fusion:  # the C++ backend: see ``_cpp_correction``
            cost += self._cpp_correction(view, choice, groups)
        if self.combo_kernels and self.gpu:  # launches combo kernels give for free are not bought
            saved = combo_savings(groups)
            generated, cost = generated - saved, cost - self.kernel_price(saved, 0)
        return ProgramCost(generated, extern, nbytes, cost, loops)

    def _backward_factor(self, view: EGraphView, choice: Choice, group: list[Kernel]) -> float:
        """How many times a forward kernel's cost the step pays: 1 outside training; a cat's copies 1
        (gradient: views); otherwise its most expensive op's ``_STEP_FACTOR``."""
        if not self.train_step:
            return 1.0
        if all(k.copy_of is not None for k in group):
            return 1.0
        return max(_STEP_FACTOR.get(CTOR_CATEGORY.get(view.nodes[choice[k.writes]].ctor), 2.0)
                   if k.writes in choice else 2.0 for k in group)

    def _split_backward(self, view: EGraphView, node: ENode) -> float:
        share = self._split_backward_kernel(view, node)
        return UNKNOWN if share is None else self.kernel_price(*share)

    @staticmethod
    def _split_backward_kernel(view: EGraphView, node: ENode) -> tuple[float, float, int] | None:
        """The gradient of a split is the cat of its pieces' gradients: one kernel copying them."""
        nb = class_bytes(view, node.children[0])
        return None if nb is None else (1.0, 2 * nb, 1)

    def _cpp_correction(self, view: EGraphView, choice: Choice, groups: list[list[Kernel]]) -> float:
        """What the C++ backend costs beyond α per group plus one loop nest per kernel:
        - α is per C++ function, not per fused group: Inductor emits every fused group it schedules
          between two extern calls into one function (``CppScheduling`` flushes its kernel group only
          at an extern kernel), so a group that follows another generated group in schedule order
          pays its loop nests and bytes but no call;
        - a layer norm over fewer than ``config.cpp.use_two_step_variance_threshold`` (1024) elements
          is lowered in two steps: a sum, its division by the size and a sum of squared deviations
          before the output loop, two loop nests more than one reduction."""
        extra = 0.0
        for g, opens in zip(groups, _opens_cpp_function(groups)):
            if g[0].kind == "extern":
                continue
            factor = self._backward_factor(view, choice, g)
            two_step = sum(1 for k in g if k.kind == "reduction" and k.writes in choice
                           and view.nodes[choice[k.writes]].ctor == Ctor.LAYER_NORM and k.space[1] < TWO_STEP_VARIANCE)
            extra += factor * self.kernel_price(0 if opens else -1, 0, 2 * two_step)
        return extra

    # -- per e-node linear approximation ---------------------------------------------------------
    def node_cost(self, node: ENode, view: EGraphView) -> float:
        """``kernel_price`` of the node's share of a kernel (``launch_and_bytes``), times what a
        training step pays for it (its ``_STEP_FACTOR``; a cat's copies and a split's cat once)."""
        share = self.launch_and_bytes(node, view)
        if share is None:
            return UNKNOWN
        cat = self._node_category(node, view)
        once = node.ctor in Role.CONCAT or node.ctor == Ctor.SPLIT or cat in (Category.SOURCE, Category.VIEW)
        step = _STEP_FACTOR.get(cat, 2.0) if self.train_step and not once else 1.0
        return step * self.kernel_price(*share)

    def launch_and_bytes(self, node: ENode, view: EGraphView) -> tuple[float, float, int] | None:
        """(launches, bytes, loop nests) of one e-node standing alone, the linear stand-in for the kernels
        ``program_cost`` plans: a pointwise op pays a share of a launch and of its output bytes (it usually
        fuses), a reduction or extern op a full launch plus its traffic, views and sources nothing; None
        when no analysis derived a shape it needs."""
        cat = self._node_category(node, view)
        if self.train_step and node.ctor == Ctor.SPLIT:
            return self._split_backward_kernel(view, node)
        if cat in (Category.SOURCE, Category.VIEW) or is_free_unary(node.ctor, node.args):
            return (0.0, 0.0, 0)
        if node.ctor in Role.CONCAT:
            return self._cat_kernel(node, view)
        return self._forward_kernel(node, view, cat)

    def _node_category(self, node: ENode, view: EGraphView) -> Category:
        cat = CTOR_CATEGORY.get(node.ctor, Category.OPAQUE)
        if self.gpu and cat == Category.MATMUL and outer_product(view, node):
            return Category.POINTWISE  # Inductor's broadcast multiply (``eqsat.kernel.outer_product``)
        return cat

    def _forward_kernel(self, node: ENode, view: EGraphView, cat: Category) -> tuple[float, float, int] | None:
        if node.ctor == Ctor.OPAQUE:
            return (1.0, 0.0, 0)  # its outputs are read through Get, whose shapes we know
        out = class_bytes(view, node.eclass)
        if out is None:
            return None
        if cat == Category.POINTWISE:  # a broadcast writes at most what it reads once fused
            out = min(out, _pointwise_reads(view, node))
        nbytes = WRITE_SHARE[cat] * out
        if cat in READS_INPUTS:
            ins = [_read_bytes(view, c, cat) for c in node.children if view.sort.get(c) == "Tensor"]
            if any(b is None for b in ins):
                return None
            nbytes += sum(ins)
        return (LAUNCH_SHARE[cat], nbytes, 0)

    def _cat_kernel(self, node: ENode, view: EGraphView) -> tuple[float, float, int] | None:
        """Parameters: one kernel copying them all (CPU: one function; Triton: a foreach kernel), free
        when frozen. Activations: inputs computed by a fusible kernel or a matmul are written in place
        by their producer (free); every other input costs a copy, except where GPU Inductor lowers the
        cat (of at most ``pointwise_cat_inputs``) as one pointwise kernel: then it is priced as one."""
        elems = list_elements(view, node.children[0])
        sizes = [class_bytes(view, e) for e in elems]
        if any(b is None for b in sizes):
            return None
        if all(e in view.params for e in elems):
            return (0.0, 0.0, 0) if self.frozen_params else (1.0, 2 * sum(sizes), len(elems))
        copied = [b for e, b in zip(elems, sizes) if not _written_in_place(view, e)]
        if copied and len(elems) <= self.pointwise_cat_inputs:
            return self._forward_kernel(node, view, Category.POINTWISE)
        return (1.0 if copied else 0.0, 2 * sum(copied), len(copied))


def launches(group: list[Kernel]) -> int:
    """Kernel launches of one fused group: two when it holds a split reduction (partials, then
    their reduction), else one."""
    return 2 if any(k.split for k in group) else 1


def _opens_cpp_function(groups: list[list[Kernel]]) -> list[bool]:
    """For each group, whether it starts a new C++ function: Inductor orders fused nodes by their
    first member, then topologically (dependencies first), and a generated group opens a function
    when it comes first or right after an extern call. A cat's readers are ordered after the copies
    into its slices; its in-place writers are not tracked (the planner lists no cat per writer)."""
    deps = group_deps(groups)
    order: list[int] = []
    seen: set[int] = set()
    for start in sorted(range(len(groups)), key=lambda i: min(k.index for k in groups[i])):
        stack = [(start, False)]
        while stack:
            i, done = stack.pop()
            if done:
                order.append(i)
                continue
            if i in seen:
                continue
            seen.add(i)
            stack.append((i, True))
            stack.extend((d, False) for d in sorted(deps[i], reverse=True) if d not in seen)
    opens = [True] * len(groups)
    for prev, i in zip(order, order[1:]):
        opens[i] = groups[prev][0].kind == "extern"
    return opens


def _pointwise_reads(view: EGraphView, node: ENode) -> float:
    ins = [class_bytes(view, c) for c in node.children if view.sort.get(c) == "Tensor"]
    return float("inf") if any(b is None for b in ins) or not ins else sum(ins)


def _read_bytes(view: EGraphView, cls: str, reader: Category) -> float | None:
    """Bytes a reduction or norm reads from ``cls``: a pointwise producer fuses into it, so when the
    class can be computed pointwise from smaller inputs (a broadcast product), those inputs are what
    it reads (the whole-program model, ``eqsat.fusion``, checks the fusion really happens)."""
    nbytes = class_bytes(view, cls)
    if nbytes is None or reader not in FUSIBLE:
        return nbytes
    fused = [_pointwise_reads(view, view.nodes[n]) for n in view.classes.get(cls, ())
             if CTOR_CATEGORY.get(view.nodes[n].ctor) == Category.POINTWISE]
    return min([nbytes, *fused])


def _written_in_place(view: EGraphView, cls: str) -> bool:
    """A producer Inductor lets write straight into a cat's slice: a fusible kernel, a 2-D matmul."""
    categories = {CTOR_CATEGORY.get(view.nodes[n].ctor) for n in view.classes.get(cls, ())}
    return bool(categories & FUSIBLE) or Category.MATMUL in categories and matmul_writes_cat_slice(view, cls)
