"""Predict the kernels Inductor generates for one chosen program, and the bytes they move.

Fusion is not additive per e-node, so this walks the whole chosen DAG the way Inductor does:
1. *Lowering*: views are free; a pointwise op is inlined into its consumers unless something forces
   it into memory (an extern kernel reads it, it is an output, a cat writes it in place, or it is
   reused and reads many buffers); reductions and norms always write a buffer; matmul-like and
   opaque ops are extern kernels; ``cat`` is a buffer its computed inputs write into in place (fusible
   kernels, and matmuls through ``out=``), with a copy for every other input (inputs, parameters,
   views, opaque outputs).
2. *Scheduling*: buffers computed by fusible nodes fuse vertically (producer → consumer) and
   horizontally (shared read) when their iteration spaces agree and the fusion creates no cycle.
   One cat's copies share a kernel: the C++ backend emits them in one function, Triton copies whole
   graph inputs and parameters with one foreach kernel (views of them, e.g. unbind pieces, one kernel
   each: H200 measurements of split_stack_unbind, 67 launches). Triton lowers a cat of at most
   ``pointwise_cat_inputs`` as one pointwise kernel when its users are pointwise, or when every input
   needs a kernel anyway (Inductor's horizontal cat: pads, single-use pointwise ops, views; H200: a
   cat of 3 split pieces is one launch).
Each fused group is one generated kernel (two for a reduction Triton splits, ``splits_reduction``);
each extern op one extern call. Bytes are what crosses a kernel boundary: distinct buffers a kernel
reads from outside it plus buffers it writes that something outside it (or the caller) reads.

Aten training graphs (H200 ``calibrate_train``, ``results/2026-12-01_…_calib``) added four
rules: a fused group keeps one iteration space (``_Groups``: a layer norm backward's row and column
sums are two kernels); Triton splits reductions with too few outputs; an ``add`` of a single-use
``mm`` is the ``addmm`` Inductor's post-grad pattern makes of it (``absorb_bias_adds``); and opaque
Aten ops with an Inductor lowering fuse as the code it generates (``eqsat.ops.OPAQUE_KINDS``).

The zoo of current-library models on the fake-H200 probe (issue 29) added, for Triton: an
``embedding_bag``'s offsets and flattened ids; a matmul contracting one element is pointwise
(``outer_product``); a small ``sort`` is a kernel and ``t[idx] = v`` a scatter; a biased linear of
a non-contiguous 3-D input is a matmul and an add (``_unfolded_bias``); a cat with an input read
elsewhere stays a ConcatKernel (``_input_read_elsewhere``, ``torch.diff`` with ``prepend`` too) and
its slice writers never fuse with its reader; a clone of a contiguous layout (fused attention's
merged heads included) is no kernel.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Iterable

from .ops import SDPA_NAME, CTOR_CATEGORY, Category, is_free_unary, op_name_of_key, opaque_kind

from .serialized import Choice, EGraphView, ENode, walk

DTYPE_BYTES = {
    "float64": 8, "int64": 8, "complex64": 8, "float32": 4, "int32": 4,
    "float16": 2, "bfloat16": 2, "int16": 2, "int8": 1, "uint8": 1, "bool": 1, "scalar": 0, "scalar_float": 0,
}
REALIZE_READS_THRESHOLD = 4  # torch._inductor.config.realize_reads_threshold
# opaque kinds Triton lowers as several kernels (planned by ``_Planner``); the C++ model keeps one call
TRITON_PLANNED = frozenset({"attention", "embedding_bag"})
SORT_MAX_RBLOCK = 512  # ir.Sort.create: a larger sort falls back to aten.sort
INDEX_DTYPES = frozenset({"int64", "int32", "bool"})
UNROLL_REDUCTIONS_THRESHOLD = 8  # torch._inductor.config.unroll_reductions_threshold


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


# matmuls Inductor lowers as a batched matmul (no M = 1 or N = 1 exception), and where their left operand is
_BATCHED = {"Bmm", "Baddbmm"}
_LEFT_OPERAND = {"Addmm": 1, "Baddbmm": 1}


def outer_product(view: EGraphView, node: ENode) -> bool:
    """A matmul contracting one element, which Inductor decomposes for a GPU into a broadcast
    multiply (``torch._inductor.decomposition``: a ``bmm`` of ``[B, M, 1] @ [B, 1, N]``, an ``mm`` or
    ``addmm`` with K = 1 unless M or N is 1): a pointwise op that fuses, no extern call. The rotary
    embedding's ``inv_freq @ position_ids`` of Llama-style models (fake H200: Mixtral's 2)."""
    a = node.children[_LEFT_OPERAND.get(node.ctor, 0)]
    shape_a, out = view.shape.get(a), view.shape.get(node.eclass)
    if not shape_a or not out or len(out) < 2 or shape_a[-1] != 1:
        return False
    b = node.children[_LEFT_OPERAND.get(node.ctor, 0) + 1] if len(node.children) > 1 else None
    batched = node.ctor in _BATCHED or node.ctor == "Matmul" and len(view.shape.get(b) or ()) >= 3
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
            cell = next((view.nodes[n] for n in view.classes[cls] if view.nodes[n].ctor == "TCons"), None)
        if cell is None or cell.ctor != "TCons":
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


_FUSIBLE = {Category.POINTWISE: "pointwise", Category.REDUCTION: "reduction", Category.NORM: "reduction"}


def topo_order(view: EGraphView, roots: Iterable[str], choice: Choice) -> list[str]:
    """Chosen classes reachable from ``roots``, producers first (depth-first post-order)."""
    return walk(view, roots, choice).postorder


class _Planner:
    """Builds the kernel list for one choice; see the module docstring for the model."""

    def __init__(self, view: EGraphView, choice: Choice, roots: list[str], frozen_params: bool,
                 pointwise_cat_inputs: int, split_sms: int = 0, triton: bool = False):
        self.view, self.choice, self.roots = view, choice, roots
        self.split_sms, self.triton = split_sms, triton
        self.addmm: dict[str, str] = {}  # an add Inductor turns into addmm → the mm it absorbs
        self.frozen_params = frozen_params
        self.pointwise_cat_inputs = pointwise_cat_inputs
        self.order = topo_order(view, roots, choice)
        self.base: dict[str, str] = {}        # class → class whose buffer it aliases (views)
        self.kind: dict[str, str] = {}        # class → source/view/pointwise/reduction/extern/cat/list
        self.users: dict[str, list[str]] = {}  # buffer class → consuming classes
        self.cat_writers: dict[str, list[str]] = {}  # cat buffer → buffers written into its slices
        self.epilogues: set[str] = set()  # pointwise classes reading a reduction (through pointwise ops)
        self.pieces: dict[str, list[str]] = {}  # tuple class → its chosen ``Get`` classes
        self.readers: dict[str, list[str]] = {}  # class (views too) → the classes reading it

    def node(self, cls: str) -> ENode:
        return self.view.nodes[self.choice[cls]]

    def tensor_inputs(self, cls: str) -> list[str]:
        """The tensor classes a node reads: list arguments are flattened to their elements."""
        out = []
        for c in self.node(cls).children:
            if self.view.sort.get(c) == "TList":
                out.extend(list_elements(self.view, c, self.choice))
            else:
                out.append(c)
        return out

    def classify(self) -> None:
        view = self.view
        for cls in self.order:
            node = self.node(cls)
            cat = CTOR_CATEGORY.get(node.ctor, Category.OPAQUE)
            if view.sort.get(cls) == "TList":
                kind = "list"
            elif cat == Category.SOURCE:
                kind = "source"
            elif self.triton and node.ctor == "View" and self._reshapes_a_broadcast(node):
                kind = "pointwise"  # reshape copies: a dim expanded from 1 merged with another
            elif cat == Category.VIEW or is_free_unary(node.ctor, node.args):
                kind = "view"
            elif node.ctor == "Contiguous":  # a clone of a contiguous layout: a no-op post-grad removes
                kind = "view" if self.triton and self._contiguous(node.children[0]) else "pointwise"
            elif node.ctor in ("Cat", "Stack"):
                elems = self.tensor_inputs(cls)
                frozen = self.frozen_params and all(self._folded(e) for e in elems)
                kind = "source" if frozen else "cat"
            elif node.ctor == "Opaque":
                kind = opaque_kind(node.args[0][1])
                kind = "extern" if kind in TRITON_PLANNED and not self.triton else kind
                kind = self._triton_kind(cls, kind) if kind in ("sort", "index_assign") else kind
            elif self.triton and cat == Category.MATMUL and outer_product(view, node):
                kind = "pointwise"
            elif self.triton and cat == Category.REDUCTION and self._unrolled(cls, node):
                kind = "pointwise"
            else:
                kind = _FUSIBLE.get(cat, "extern")
            self.kind[cls] = kind
            ins = self.tensor_inputs(cls) if kind == "view" else ()
            self.base[cls] = self.base[ins[0]] if ins else cls
            if node.ctor == "Get" and self.base[cls] == node.children[0]:
                self.pieces.setdefault(node.children[0], []).append(cls)
            if kind != "list":
                for c in self.tensor_inputs(cls):
                    self.readers.setdefault(c, []).append(cls)
            if kind in ("view", "list"):
                continue
            for c in self.tensor_inputs(cls):
                self.users.setdefault(self.base[c], []).append(cls)
                if kind == "pointwise" and (self.kind[self.base[c]] == "reduction" or self.base[c] in self.epilogues):
                    self.epilogues.add(cls)

    def absorb_bias_adds(self) -> None:
        """Inductor's post-grad pattern ``add(mm(a, b), c)`` → ``addmm(c, a, b)`` (after our pass: we
        see the add): when the mm has no other user and ``c`` is a tensor of its dtype, the add is the
        extern call and ``c`` its input (a buffer). Triton keeps the add unfused when all its users are
        pointwise (the bias fuses into them). H200, recsys_tower's backward: each feature's input
        gradient ``g·σ + gh @ W`` is an ``addmm`` (32 of them), no pointwise kernel."""
        view = self.view
        outputs = {self.base[r] for r in self.roots}
        for cls in self.order:
            node = self.node(cls)
            if self.kind[cls] != "pointwise" or node.ctor != "Binary" or op_name_of_key(node.args[0][1]) != "add":
                continue
            users = self.users.get(cls, ())
            if self.triton and cls not in outputs and all(self.kind[u] in ("pointwise", "reduction") for u in users):
                continue
            a, b = node.children[:2]
            for mm, inp in ((a, b), (b, a)):
                if (self.kind.get(mm) == "extern" and self.node(mm).ctor == "Mm" and self.users.get(mm) == [cls]
                        and view.dtype.get(inp) == view.dtype.get(mm)
                        and view.shape.get(inp) is not None and mm != inp):
                    self.kind[cls] = "extern"
                    self.addmm[cls] = mm
                    break

    def plan(self) -> list[Kernel]:
        self.classify()
        self.absorb_bias_adds()
        view, kind, base = self.view, self.kind, self.base
        root_bufs = {base[r] for r in self.roots}
        kernels: list[Kernel] = []
        inlined: dict[str, dict[str, float]] = {}   # unmaterialized pointwise class → what it reads
        inlined_views: dict[str, frozenset] = {}     # … and the exact tensors behind those reads
        in_place: set[str] = set()                   # computed buffers a cat writes into its slice
        pointwise_cats: set[str] = set()
        concat_diffs: set[str] = set()  # ``torch.diff`` of a ``prepend``/``append`` Inductor concatenates first
        for cls in self.order:
            if kind[cls] == "cat":
                elems = [base[e] for e in self.tensor_inputs(cls)]
                all_pw_users = all(kind.get(u) in ("pointwise", "reduction") for u in self.users.get(cls, ()))
                if len(elems) <= self.pointwise_cat_inputs and (
                        (all_pw_users and cls not in root_bufs) or self._copies_every_input(cls)) and not (
                        self._input_read_elsewhere(cls)):
                    pointwise_cats.add(cls)
                else:
                    in_place.update(e for e in elems if kind[e] in ("pointwise", "reduction") or (
                        kind[e] == "extern" and matmul_writes_cat_slice(view, e)
                        and (CTOR_CATEGORY.get(self.node(e).ctor) == Category.MATMUL or e in self.addmm)))
            elif self._concat_diff(cls):
                concat_diffs.add(cls)
                in_place.update(e for e in self.tensor_inputs(cls) if kind[e] in ("pointwise", "reduction"))

        def reads_of(cls: str, inputs: list[str] | None = None) -> dict[str, float]:
            """Buffers a computation reads, looking through inlined pointwise producers."""
            out: dict[str, float] = {}
            for c in self.tensor_inputs(cls) if inputs is None else inputs:
                b = base[c]
                if b in inlined:
                    for k, v in inlined[b].items():
                        out[k] = max(out.get(k, 0.0), v)
                else:
                    nb = class_bytes(view, c) or 0.0
                    bb = class_bytes(view, b)
                    out[b] = max(out.get(b, 0.0), min(nb, bb) if bb is not None else nb)
            return out

        def views_of(cls: str) -> frozenset:
            """The tensors a kernel reads, by index: through an inlined producer, its reads; but a
            slice of an inlined producer reads a slice of what it reads, at other indices than the
            producer's other slices (Triton fuses kernels horizontally only on shared indices)."""
            out: set[str] = set()
            for c in self.tensor_inputs(cls):
                if not str(view.dtype.get(c, "")).startswith("scalar"):  # Python scalars are no reads
                    out |= {c} if self._selects_part(c) else inlined_views.get(base[c], {c})
            return frozenset(out)

        def write_slices(buf: str, cls: str) -> None:
            """The ConcatKernel ``buf`` of ``cls``'s inputs: computed ones written in place, a copy
            kernel for every other."""
            writers = self.cat_writers[buf] = []
            for i, e in enumerate(self.tensor_inputs(cls)):
                if base[e] in in_place and kind[e] != "view":
                    writers.append(e)
                    continue
                eb = class_bytes(view, e) or 0.0
                reads = dict(inlined[base[e]]) if base[e] in inlined else {base[e]: eb}
                writers.append(f"copy:{buf}:{i}")
                kernels.append(Kernel(len(kernels), "pointwise", writers[-1], eb,
                                      (max(numel(view, e), 1), 1), reads, _lead(view, e),
                                      inlined_views.get(base[e], frozenset({e})),
                                      copy_of=buf, copies_input=kind[e] == "source"))

        for cls in self.order:
            k = kind[cls]
            if k in ("source", "view", "list"):
                continue
            out_bytes = sum(class_bytes(view, c) or 0.0 for c in self._outputs(cls))
            if k == "scatter":  # a clone of the first input (a fusible kernel), then the scatter into it
                first, *rest = self.tensor_inputs(cls)
                reads = reads_of(cls, rest)
                if not self._fresh(first):  # an ``empty`` is scattered into where it is: no clone
                    clone = f"clone:{cls}"
                    kernels.append(Kernel(len(kernels), "pointwise", clone, class_bytes(view, first) or 0.0,
                                          (max(numel(view, first), 1), 1), reads_of(cls, [first]),
                                          _lead(view, first), inlined_views.get(base[first], frozenset({first}))))
                    reads[clone] = kernels[-1].out_bytes
                kernels.append(Kernel(len(kernels), "pointwise", cls, out_bytes, self._space(cls, k), reads,
                                      fuses=False, index_reads=frozenset(reads_of(cls, rest))))
                continue
            if k == "attention":
                kernels.extend(self._decomposed_attention(cls, out_bytes, len(kernels), reads_of, inlined_views))
                continue
            if k == "embedding_bag":
                kernels.extend(self._embedding_bag(cls, out_bytes, len(kernels), reads_of))
                continue
            if k == "extern" and self.triton and self._unfolded_bias(cls):
                kernels.extend(self._batched_linear(cls, out_bytes, len(kernels), reads_of, views_of))
                continue
            if k == "extern":
                if cls in self.addmm.values():
                    continue  # computed by the addmm that reads it
                mm = self.addmm.get(cls)
                inputs = [c for c in self.tensor_inputs(cls) if c != mm] + (self.tensor_inputs(mm) if mm else [])
                kernels.append(Kernel(len(kernels), "extern", cls, out_bytes, (0, 0), reads_of(cls, inputs),
                                      views=views_of(cls)))
                continue
            if k == "cat" and cls not in pointwise_cats:
                write_slices(cls, cls)
                continue
            if cls in concat_diffs:
                write_slices(f"cat:{cls}", cls)
                reads = {f"cat:{cls}": sum(class_bytes(view, e) or 0.0 for e in self.tensor_inputs(cls))}
            else:
                reads = reads_of(cls)
            users = self.users.get(cls, [])
            if k in ("pointwise", "cat") and not self._must_materialize(cls, users, reads, root_bufs, in_place):
                inlined[cls], inlined_views[cls] = reads, views_of(cls)
                continue
            space, inner = self._space(cls, k), k != "reduction" or self._inner_reduction(cls)
            kernels.append(Kernel(len(kernels), "reduction" if k == "reduction" else "pointwise",
                                  cls, out_bytes, space, reads, _lead(view, self._outputs(cls)[0]),
                                  views_of(cls), split=k == "reduction" and splits_reduction(
                                      *space, inner, self.split_sms), inner=inner))
        return kernels

    def _decomposed_attention(self, cls: str, out_bytes: float, first: int, reads_of, inlined_views) -> list[Kernel]:
        """Attention as CUDA runs it when no fused kernel takes it (``eqsat.ops.DECOMPOSED_ATTENTION``):
        q, k and v each copied to the batched layout (q and k scaled; their producers' pointwise ops
        fuse in), ``bmm`` of q and k, one softmax kernel (the mask's pointwise ops fuse in), ``bmm``
        of that and v. H200, transformers 5.17's BERT: 3 Triton kernels and 2 calls an attention, 33
        launches for the model where one fused call (what the model planned) made 24."""
        view, base = self.view, self.base
        q, k, v, *mask = self.tensor_inputs(cls)
        shape_q, shape_k = view.shape.get(q) or (1,), view.shape.get(k) or (1, 1)
        rows, keys = max(numel(view, q), 1) // max(shape_q[-1], 1), shape_k[-2] if len(shape_k) > 1 else 1
        score_bytes = float(rows * keys * DTYPE_BYTES.get(view.dtype.get(q, "float32"), 4))
        kernels: list[Kernel] = []

        def add(kind: str, writes: str, nbytes: float, space: tuple[int, int], reads: dict, **kw) -> str:
            kernels.append(Kernel(first + len(kernels), kind, writes, nbytes, space, reads, **kw))
            return writes

        copies = [add("pointwise", f"{tag}:{cls}", class_bytes(view, t) or 0.0, (max(numel(view, t), 1), 1),
                      reads_of(cls, [t]), lead=_lead(view, t), views=inlined_views.get(base[t], frozenset({t})))
                  for tag, t in (("q", q), ("k", k), ("v", v))]
        scores = add("extern", f"scores:{cls}", score_bytes, (0, 0),
                     {c: kernels[i].out_bytes for i, c in enumerate(copies[:2])})
        softmax = add("reduction", f"softmax:{cls}", score_bytes, (rows, keys),
                      {scores: score_bytes, **reads_of(cls, mask)}, views=frozenset({scores}),
                      split=splits_reduction(rows, keys, True, self.split_sms))
        add("extern", cls, out_bytes, (0, 0), {softmax: score_bytes, copies[2]: kernels[2].out_bytes})
        return kernels

    def _unfolded_bias(self, cls: str) -> bool:
        """A biased linear of a 3-D (or more) input that is not contiguous (an expanded parameter,
        e.g. learned queries per batch; a slice; a piece of a stack along dim 1): Aten's ``linear``
        takes the ``addmm`` path only for a contiguous input, else it runs ``matmul`` (a ``bmm``
        on the fake H200) and adds the bias as a pointwise op of its own (interformer's pooling
        queries: 3 ``bmm`` and 3 adds; BART's cross-attention k/v projections of the layer norms
        eqsat batches)."""
        node = self.node(cls)
        if node.ctor != "Linear" or self.node(node.children[2]).ctor == "NoneT":
            return False
        x = node.children[0]
        shape = self.view.shape.get(x)
        return shape is not None and len(shape) >= 3 and not self._contiguous(x)

    def _batched_linear(self, cls: str, out_bytes: float, first: int, reads_of, views_of) -> list[Kernel]:
        """``_unfolded_bias``: the matmul (an extern call), then the bias add (a pointwise kernel
        that fuses with pointwise consumers like any other)."""
        x, w, b = self.node(cls).children
        product = f"bmm:{cls}"
        space = (max(numel(self.view, cls), 1), 1)
        return [Kernel(first, "extern", product, out_bytes, (0, 0), reads_of(cls, [x, w]), views=views_of(cls)),
                Kernel(first + 1, "pointwise", cls, out_bytes, space, {product: out_bytes, **reads_of(cls, [b])},
                       _lead(self.view, cls), frozenset({product, b}))]

    def _triton_kind(self, cls: str, kind: str) -> str:
        """Opaque ops Triton lowers unlike the C++ backend: a ``sort`` of at most 512 elements is one
        persistent Triton kernel (``ir.Sort``: a reduction over the sorted dim, taken as the last),
        a larger one an extern call; ``t[index] = value`` (our functional ``index_assign``) with a
        tensor index is a scatter (``index_put``), with slices a pointwise ``slice_scatter``. Fake H200: Mixtral's expert sort and inverse
        permutation, planned as 2 calls and a kernel, are one kernel."""
        if not self.triton:
            return "extern"
        first, *rest = self.tensor_inputs(cls)
        if kind == "sort":
            shape = self.view.shape.get(first)
            return "reduction" if shape and shape[-1] <= SORT_MAX_RBLOCK else "extern"
        index = [c for c in rest if str(self.view.dtype.get(c)) in INDEX_DTYPES]
        scatter = index and (len(rest) == 2 or self.view.dtype.get(first) != self.view.dtype.get(index[0]))
        return "scatter" if scatter else "pointwise"  # a basic index: a slice_scatter

    def _fresh(self, cls: str) -> bool:
        """An uninitialised tensor (``empty``, ``empty_like``): nothing to copy before writing it."""
        node = self.node(self.base.get(cls, cls))
        return node.ctor == "Opaque" and opaque_kind(node.args[0][1]) == "source"

    def _embedding_bag(self, cls: str, out_bytes: float, first: int, reads_of) -> list[Kernel]:
        """``F.embedding_bag`` of 2-D ids as Inductor lowers it: the offsets ``arange`` is a Triton
        kernel of its own (it reads nothing, so nothing fuses with it), the ids are flattened, a copy
        when they are a strided view (a slice of the ids of several tables), then one extern call.
        Fake H200: a bag of contiguous 2-D ids is 1 kernel + 1 call, of ``ids[:, t]`` 2 + 1; DLRM's
        8 bags were planned as 8 launches, Inductor makes 24."""
        view = self.view
        ids, *rest = self.tensor_inputs(cls)
        shape = view.shape.get(ids) or ()
        kernels: list[Kernel] = []
        if len(shape) == 2:
            offsets = f"offsets:{cls}"
            kernels.append(Kernel(first, "pointwise", offsets, float(shape[0] * DTYPE_BYTES["int64"]),
                                  (shape[0], 1), {}, shape[0]))
            reads = {offsets: kernels[0].out_bytes}
            if not self._contiguous(ids):
                flat = f"flat:{cls}"
                kernels.append(Kernel(first + 1, "pointwise", flat, class_bytes(view, ids) or 0.0,
                                      (max(numel(view, ids), 1), 1), reads_of(cls, [ids]), shape[0],
                                      frozenset({ids})))
                reads[flat] = kernels[-1].out_bytes
            else:
                reads.update(reads_of(cls, [ids]))
        else:
            rest = [ids, *rest]
            reads = {}
        kernels.append(Kernel(first + len(kernels), "extern", cls, out_bytes, (0, 0), {**reads, **reads_of(cls, rest)}))
        return kernels

    def _contiguous(self, cls: str) -> bool:
        """Whether a view is laid out as its own contiguous tensor: every slice or split piece it
        takes (through reshapes and squeezes) is along the first dim of extent above 1, every
        permute keeps the order of those dims, and nothing is expanded."""
        view = self.view
        while cls != self.base.get(cls, cls):
            node = self.node(cls)
            if node.ctor == "Get" and self.node(node.children[0]).ctor != "Split" or self._heads_back_in_place(cls):
                return True  # an output of a multi-output op
            src = self.node(node.children[0]).children[0] if node.ctor == "Get" else node.children[0]
            outer, inner = view.shape.get(cls), view.shape.get(src)
            if node.ctor == "Expand" or outer is None or inner is None:
                return False
            if node.ctor in ("Narrow", "Get") and len(outer) == len(inner):
                cut = next((d for d, (a, b) in enumerate(zip(outer, inner)) if a != b), 0)
                if math.prod(inner[:cut]) > 1:
                    return False
            if node.ctor == "Permute":
                perm = next(a[1] for a in node.args if a[0] != "class")
                kept = [d for d in perm if inner[d] != 1]
                if kept != sorted(kept):
                    return False
            cls = src
        return True

    def _selects_part(self, cls: str) -> bool:
        """``cls`` is a slice or a split piece of its buffer (through any views), not all of it."""
        while cls != self.base.get(cls, cls):
            if self.node(cls).ctor in ("Narrow", "Get"):
                return True
            cls = self.node(cls).children[0]
        return False

    def _folded(self, cls: str) -> bool:
        """A parameter, or a zero padding of one: freezing folds it into a constant."""
        node = self.node(cls)
        return self.base.get(cls, cls) in self.view.params or (
            node.ctor == "Pad" and self.base.get(node.children[0], node.children[0]) in self.view.params)

    def _unrolled(self, cls: str, node: ENode) -> bool:
        """A reduction of fewer than ``config.unroll_reductions_threshold`` (8) elements per output
        is a pointwise op to Inductor (``ir.Reduction.create`` unrolls it on a GPU): it fuses, it is
        inlined. Mixtral's top-2 router weights normalised by their sum (fake H200: no kernel)."""
        ins = [c for c in node.children if self.view.sort.get(c) == "Tensor"]
        n_in, n_out = (numel(self.view, ins[0]) if ins else -1), numel(self.view, cls)
        return n_in > 0 and n_out > 0 and n_in // n_out < UNROLL_REDUCTIONS_THRESHOLD

    def _reshapes_a_broadcast(self, node: ENode) -> bool:
        """A reshape that merges a dim an ``expand`` grew from 1 with another dim of extent above 1
        cannot be a view (stride 0 next to a real stride): Inductor copies it. transformers'
        ``repeat_kv`` of grouped-query attention, ``k[:, :, None].expand(...).reshape(b, h, s, d)``:
        fake H200, Qwen2 and Mixtral copy k and v per layer (the model had them free)."""
        src = self.node(node.children[0])
        if src.ctor != "Expand":
            return False
        outer, inner = self.view.shape.get(node.children[0]), self.view.shape.get(src.children[0])
        out = self.view.shape.get(node.eclass)
        if not outer or not inner or not out:
            return False
        inner = (1,) * (len(outer) - len(inner)) + tuple(inner)
        grown = {d for d, (a, b) in enumerate(zip(outer, inner)) if a > 1 and b == 1}
        i = j = 0
        while i < len(outer) and j < len(out):  # the groups of input dims each output dim merges
            group, have, want = [i], outer[i], out[j]
            while have != want and i + 1 < len(outer) and j + 1 < len(out):
                if have < want:
                    i += 1
                    group.append(i)
                    have *= outer[i]
                else:
                    j += 1
                    want *= out[j]
            if grown & set(group) and sum(outer[d] > 1 for d in group) > 1:
                return True
            i, j = i + 1, j + 1
        return False

    def _heads_back_in_place(self, cls: str) -> bool:
        """``attention(...).transpose(1, 2)`` of a call CUDA runs fused: flash and memory-efficient
        attention write their output as (batch, seq, heads, dim) and return it transposed, so the
        transpose back is contiguous (fake H200: GPT-2, Llama, Mixtral have no kernel there; the
        math decomposition's bmm output does need the copy)."""
        node = self.node(cls)
        if node.ctor != "Permute" or [d for d in next(a[1] for a in node.args if a[0] != "class")] != [0, 2, 1, 3]:
            return False
        src = self.node(node.children[0])
        if src.ctor != "Get":
            return False
        call = self.node(src.children[0])
        return (call.ctor == "Opaque" and opaque_kind(call.args[0][1]) == "extern"
                and op_name_of_key(call.args[0][1]).endswith(SDPA_NAME))

    def _concat_diff(self, cls: str) -> bool:
        """``torch.diff(x, prepend=p)`` is ``cat([p, x])`` and two slices of it to Inductor: Triton
        keeps that cat a ConcatKernel on the same condition as any (``_input_read_elsewhere``)."""
        node = self.node(cls)
        return (self.triton and self.kind[cls] == "pointwise" and node.ctor == "Opaque"
                and op_name_of_key(node.args[0][1]).rsplit(".", 1)[-1] == "diff"
                and len(self.tensor_inputs(cls)) > 1 and self._input_read_elsewhere(cls))

    def _input_read_elsewhere(self, cls: str) -> bool:
        """Inductor keeps a cat a ConcatKernel (its inputs written into their slices) when an input
        has another reader: a pointwise one would recompute what the pointwise cat inlines, and an
        unmaterialized pointwise input would be computed twice (``lowering.cat``'s multi-consumer
        check). Fake H200: ``torch.diff(p, prepend=p[:, :1] - 1)`` of transformers 5's packed-
        sequence mask is two slice copies and the consumer, 3 kernels, where the model planned 1."""
        for e in self.tensor_inputs(cls):
            others = [u for u in self.readers.get(e, ()) if u != cls]
            if any(self._pointwise_use(u) for u in others) or (self.kind[e] == "pointwise" and others):
                return True
        return False

    def _pointwise_use(self, cls: str) -> bool:
        """Inductor's ``is_pointwise_use``: a pointwise op, or a view all of whose readers are."""
        if self.kind.get(cls) == "view":
            return all(self._pointwise_use(u) for u in self.readers.get(cls, ()))
        return self.kind.get(cls) == "pointwise"

    def _copies_every_input(self, cls: str) -> bool:
        """Triton's horizontal cat: when no input is a buffer its producer could write into the cat
        (each is a pointwise op only the cat reads and that reads no reduction, or a view of a
        computed buffer or of an input), Inductor lowers the cat as one pointwise kernel instead of a
        copy per input (H200 probe: ten_unequal_linears' ``cat(split(wide))`` of a ConcatKernel's 8
        pieces is one kernel)."""
        for e in self.tensor_inputs(cls):
            k, b = self.kind[e], self.base[e]
            if not ((k == "pointwise" and len(set(self.users.get(e, ()))) == 1 and e not in self.epilogues)
                    or (k == "view" and self.kind[b] in ("source", "extern", "reduction", "cat")) or k == "source"):
                return False
        return True

    def _must_materialize(self, cls, users, reads, root_bufs, in_place) -> bool:
        if cls in root_bufs or cls in in_place or not users:
            return True
        if any(self.kind[u] == "extern" for u in users):
            return True
        return len(users) > 1 and len(reads) > REALIZE_READS_THRESHOLD

    def _inner_reduction(self, cls: str) -> bool:
        """Whether a reduction reduces its input's innermost dims (Inductor's ``ReductionHint.INNER``:
        a row sum); a sum over leading dims (a bias gradient, a column sum) is an outer reduction.
        Norms and opaque reductions (``var_mean`` of a layer norm) reduce the last dim."""
        node = self.node(cls)
        if node.ctor != "Reduce":
            return True
        shp = self.view.shape.get(node.children[0])
        dims = node.args[2][1]
        if shp is None or not dims:
            return True
        rank = len(shp)
        kept = [d for d in range(rank) if d not in dims and shp[d] != 1]
        return not kept or max(kept) < min(d for d in dims)

    def _outputs(self, cls: str) -> list[str]:
        """The tensor classes a node computes: itself, or the pieces read of a multi-output op."""
        return self.pieces.get(cls, [cls]) if self.view.sort.get(cls) == "TTuple" else [cls]

    def _space(self, cls: str, kind: str) -> tuple[int, int]:
        out = self._outputs(cls)[0]
        n_out = max(numel(self.view, out), 1)
        if kind != "reduction":
            return (n_out, 1)
        n_in = max(numel(self.view, self.tensor_inputs(cls)[0]), 1)
        if n_in == n_out:  # a norm: the reduced extent is the last dim
            shp = self.view.shape.get(out) or (1,)
            last = shp[-1] if shp else 1
            return (n_out // max(last, 1), max(last, 1))
        return (n_out, max(n_in // n_out, 1))


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


def _lead(view: EGraphView, cls: str) -> int:
    shp = view.shape.get(cls)
    return shp[0] if shp else 1


def _compatible(a: Kernel, b: Kernel, outer_loop: bool) -> bool:
    """Iteration spaces Inductor's scheduler can put in one kernel: the C++ backend fuses any loop
    nests with the same outer loop (outer-loop fusion); Triton needs matching (numel, rnumel)."""
    if outer_loop:
        return a.lead == b.lead
    if a.kind == "pointwise" and b.kind == "pointwise":
        return a.space[0] == b.space[0]
    if a.kind == "reduction" and b.kind == "reduction":  # a row sum and a column sum index apart
        return a.space == b.space and a.inner == b.inner
    pw, red = (a, b) if a.kind == "pointwise" else (b, a)
    return pw.space[0] in (red.space[0] * red.space[1], red.space[0])


class _Groups:
    """Union-find over kernels with Inductor-style cycle checks on group ancestors (bitsets).

    A fused group has one iteration space, as Inductor's fused node has one ``(numel, rnumel)``: two
    groups merge only when their spaces agree (``_compatible`` of each group's ``shape``, a reduction
    member when there is one). Checking only the two kernels being merged let a pointwise op of
    ``n·r`` elements bridge a row reduction ``(n, r)`` and a column reduction ``(r, n)`` of one
    tensor into one group (every layer norm backward: the input gradient's row sums and the weight
    and bias gradients' column sums), which Triton runs as separate kernels."""

    def __init__(self, kernels: list[Kernel], ancestors: list[int], descendants: list[int], outer_loop: bool):
        self.parent = list(range(len(kernels)))
        self.members = [1 << k.index for k in kernels]
        self.anc = list(ancestors)
        self.desc = list(descendants)
        self.multi = 0  # members of every group of more than one kernel
        self.kernels = kernels
        self.shape = list(kernels)  # per group root: the kernel whose space stands for the group
        self.outer_loop = outer_loop

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def _spans(self, before: int, after: int) -> bool:
        """Whether a group of several kernels has members in both ``before`` (ancestors of the merged
        group) and ``after`` (its descendants): the merge would put it on a cycle. Walked from the
        side with fewer such members: a wide cat's slice writers are thousands of groups before it,
        none after it yet (walking every group among the ancestors was quadratic)."""
        before, after = before & self.multi, after & self.multi
        if not before or not after:
            return False
        walk, other = (before, after) if before.bit_count() <= after.bit_count() else (after, before)
        while walk:  # one check per group: its members all give the same answer
            g = self.find((walk & -walk).bit_length() - 1)
            if self.members[g] & other:
                return True
            walk &= ~self.members[g]
        return False

    def try_merge(self, i: int, j: int, any_space: bool = False) -> bool:
        """Merge the groups of kernels i and j unless their spaces differ (``any_space``: a foreach
        kernel of copies, one loop per copy) or the merged group would depend on itself."""
        a, b = self.find(i), self.find(j)
        if a == b:
            return True
        sa, sb = self.shape[a], self.shape[b]
        if not any_space and not _compatible(sa, sb, self.outer_loop):
            return False
        mask = self.members[a] | self.members[b]
        # A path a → x → b leaves through a member, so x comes after the first member in topo order.
        first = (mask & -mask).bit_length() - 1
        before = ((self.anc[a] | self.anc[b]) & ~mask) >> first << first
        after = (self.desc[a] | self.desc[b]) & ~mask
        if before & after or self._spans(before, after):
            return False
        self.parent[b] = a
        self.members[a] = mask
        self.anc[a] = (self.anc[a] | self.anc[b]) & ~mask
        self.desc[a] = (self.desc[a] | self.desc[b]) & ~mask
        self.multi |= mask
        self.shape[a] = sa if sa.kind == "reduction" or sb.kind != "reduction" else sb
        return True


def schedule(kernels: list[Kernel], aliases: dict[str, list[str]], outer_loop: bool) -> list[list[Kernel]]:
    """Fuse fusible kernels into groups; extern kernels stay alone.

    ``aliases`` maps a cat buffer to the buffers written into its slices: reading it depends on them.
    """
    producer = {k.writes: k for k in kernels}
    ancestors: list[int] = []
    read_bits: dict[str, int] = {}  # buffer → its writers and their ancestors (a cat: every slice writer)
    writes_into: dict[int, list[str]] = {}  # kernel → the buffers read whose writers include it
    for k in kernels:
        bits = 0
        for buf in k.reads:
            if buf not in read_bits:  # producers come first: a buffer's bits are final when first read
                b = 0
                for w in aliases.get(buf, (buf,)):
                    p = producer.get(w)
                    if p is not None:
                        b |= ancestors[p.index] | (1 << p.index)
                        writes_into.setdefault(p.index, []).append(buf)
                read_bits[buf] = b
            bits |= read_bits[buf]
        ancestors.append(bits)
    descendants = [0] * len(kernels)
    read_by: dict[str, int] = {}  # buffer → its readers and their descendants (final before its writers)
    for k in reversed(kernels):
        for buf in writes_into.get(k.index, ()):
            descendants[k.index] |= read_by[buf]
        for buf in k.reads:
            read_by[buf] = read_by.get(buf, 0) | descendants[k.index] | (1 << k.index)
    groups = _Groups(kernels, ancestors, descendants, outer_loop)
    fusible = [k for k in kernels if k.kind != "extern" and k.fuses]
    writers: dict[str, list[int]] = {}  # buffer → its fusible writers (a cat: every slice writer)
    joined: set[str] = set()  # buffers whose writers are all in one group (union-find: for good)
    scatters = [k for k in kernels if not k.fuses and k.index_reads]
    for k in fusible + scatters:  # vertical: producer → consumer, also through a cat's slice writers
        for buf in (k.reads if k.fuses else k.index_reads):
            if buf not in writers:
                writers[buf] = [p.index for w in aliases.get(buf, (buf,))
                                if (p := producer.get(w)) is not None and p.kind != "extern" and p.fuses]
            ws = writers[buf]
            if buf not in joined and len({groups.find(i) for i in ws}) <= 1:
                joined.add(buf)
            # one group: the first merge decides for all (the rest would repeat it with the same groups)
            if buf in aliases and not outer_loop:
                continue  # Triton: a slice writer writes other indices than the cat's reader reads
            for i in ws[:1] if buf in joined else ws:
                groups.try_merge(i, k.index)
    copies: dict[str, list[Kernel]] = {}
    for k in fusible:  # one cat's slice copies: the C++ backend emits them in one function; Triton
        if k.copy_of is not None and (outer_loop or k.copies_input):  # a foreach kernel for inputs
            copies.setdefault(k.copy_of, []).append(k)
    for ks in copies.values():
        for a, b in zip(ks, ks[1:]):
            groups.try_merge(a.index, b.index, any_space=True)
    readers: dict[str, list[Kernel]] = {}
    for k in fusible:  # horizontal: kernels sharing a read (Triton: the same indices, not just buffer)
        for buf in (k.reads if outer_loop else k.views):
            readers.setdefault(buf, []).append(k)
    for ks in readers.values():
        for a, b in zip(ks, ks[1:]):
            groups.try_merge(a.index, b.index)
    out: dict[int, list[Kernel]] = {}
    for k in kernels:
        out.setdefault(groups.find(k.index), []).append(k)
    return list(out.values())


def group_bytes(group: list[Kernel], consumers: dict[str, set[int]], outputs: set[str],
                part: Callable[[str], tuple[str, float, float]] | None = None) -> float:
    """Bytes a fused kernel moves: distinct outside reads, plus writes read outside it or kept.

    ``part(v)`` is (buffer, bytes of view v, bytes of the buffer): distinct views of one buffer (the
    pieces of a split) read distinct bytes, so they add up, to at most the whole buffer.
    """
    inside = {k.writes for k in group}
    ids = {k.index for k in group}
    reads: dict[str, float] = {}
    for k in group:
        for buf, nb in k.reads.items():
            if buf not in inside:
                reads[buf] = max(reads.get(buf, 0.0), nb)
    if part is not None:
        pieces: dict[str, dict[str, float]] = {}
        whole: dict[str, float] = {}
        for v in {v for k in group for v in k.views}:
            buf, nb, total = part(v)
            if buf in reads:
                pieces.setdefault(buf, {})[v] = min(nb, total)
                whole[buf] = total
        for buf, got in pieces.items():
            reads[buf] = max(reads[buf], min(sum(got.values()), whole[buf]))
    writes = sum(k.out_bytes for k in group if k.writes in outputs or consumers.get(k.writes, set()) - ids)
    return sum(reads.values()) + writes


def plan_groups(view: EGraphView, choice: Choice, roots: Iterable[str], frozen_params: bool = False,
                pointwise_cat_inputs: int = 0, outer_loop_fusion: bool = False, split_sms: int = 0
                ) -> tuple[list[list[Kernel]], list[float]]:
    """(fused kernel groups, bytes each group moves) for the program ``choice`` describes;
    ``split_sms``: the GPU's multiprocessors, for ``splits_reduction`` (0: no split reductions)."""
    roots = list(roots)
    planner = _Planner(view, choice, roots, frozen_params, pointwise_cat_inputs, split_sms, not outer_loop_fusion)
    kernels = planner.plan()
    groups = schedule(kernels, planner.cat_writers, outer_loop_fusion)
    consumers: dict[str, set[int]] = {}
    for k in kernels:
        for buf in k.reads:
            consumers.setdefault(buf, set()).add(k.index)
    kept = {planner.base[r] for r in roots}  # outputs, and every buffer written into a cat slice
    for writers in planner.cat_writers.values():
        kept.update(writers)

    def part(v: str) -> tuple[str, float, float]:
        buf = planner.base.get(v, v)
        return buf, class_bytes(view, v) or 0.0, class_bytes(view, buf) or 0.0

    return groups, [group_bytes(g, consumers, kept, part) for g in groups]
