"""Predict the kernels Inductor generates for one chosen program, and the bytes they move.

Here is the planner (lowering: which nodes are kernels, and what each reads and writes); the kernel
vocabulary is ``eqsat.kernel``, layout questions ``eqsat.layout``, the calls Triton lowers as several
kernels ``eqsat.triton_kernels``, scheduling (step 2 below) ``eqsat.fusion_groups``.

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
rules: a fused group keeps one iteration space (``eqsat.fusion_groups``: a layer norm backward's row and column
sums are two kernels); Triton splits reductions with too few outputs; an ``add`` of a single-use
``mm`` is the ``addmm`` Inductor's post-grad pattern makes of it (``absorb_bias_adds``); and opaque
Aten ops with an Inductor lowering fuse as the code it generates (``eqsat.opaque_kinds``).

The zoo of current-library models on the fake-H200 probe (issue 29) added, for Triton: an
``embedding_bag``'s offsets and flattened ids; a matmul contracting one element is pointwise
(``outer_product``); a small ``sort`` is a kernel and ``t[idx] = v`` a scatter; a biased linear of
a non-contiguous 3-D input is a matmul and an add (``_unfolded_bias``); a cat with an input read
elsewhere stays a ConcatKernel (``_input_read_elsewhere``, ``torch.diff`` with ``prepend`` too) and
its slice writers never fuse with its reader; a clone of a contiguous layout (fused attention's
merged heads included) is no kernel.
"""
from __future__ import annotations

from typing import Iterable

from .fusion_groups import group_bytes, schedule
from .kernel import (Kernel, class_bytes, list_elements, matmul_writes_cat_slice, numel, outer_product,
                     splits_reduction, topo_order, lead_extent)
from .layout import Layout
from .opaque_kinds import opaque_kind
from .ops import CTOR_CATEGORY, Category, Ctor, Role, is_free_unary, op_name_of_key
from .serialized import Choice, EGraphView, ENode
from .triton_kernels import batched_linear, decomposed_attention, embedding_bag

REALIZE_READS_THRESHOLD = 4  # torch._inductor.config.realize_reads_threshold
# opaque kinds Triton lowers as several kernels (planned by ``_Planner``); the C++ model keeps one call
TRITON_PLANNED = frozenset({"attention", "embedding_bag"})
SORT_MAX_RBLOCK = 512  # ir.Sort.create: a larger sort falls back to aten.sort
INDEX_DTYPES = frozenset({"int64", "int32", "bool"})
UNROLL_REDUCTIONS_THRESHOLD = 8  # torch._inductor.config.unroll_reductions_threshold
_FUSIBLE = {Category.POINTWISE: "pointwise", Category.REDUCTION: "reduction", Category.NORM: "reduction"}


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
        self.layout = Layout(view, choice, self.base)
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
            elif self.triton and node.ctor == Ctor.VIEW and self.layout.reshapes_a_broadcast(node):
                kind = "pointwise"  # reshape copies: a dim expanded from 1 merged with another
            elif cat == Category.VIEW or is_free_unary(node.ctor, node.args):
                kind = "view"
            elif node.ctor == Ctor.CONTIGUOUS:  # a clone of a contiguous layout: a no-op post-grad removes
                kind = "view" if self.triton and self.layout.contiguous(node.children[0]) else "pointwise"
            elif node.ctor in Role.CONCAT:
                elems = self.tensor_inputs(cls)
                frozen = self.frozen_params and all(self._folded(e) for e in elems)
                kind = "source" if frozen else "cat"
            elif node.ctor == Ctor.OPAQUE:
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
            if node.ctor == Ctor.GET and self.base[cls] == node.children[0]:
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
            if self.kind[cls] != "pointwise" or node.ctor != Ctor.BINARY or op_name_of_key(node.args[0][1]) != "add":
                continue
            users = self.users.get(cls, ())
            if self.triton and cls not in outputs and all(self.kind[u] in ("pointwise", "reduction") for u in users):
                continue
            a, b = node.children[:2]
            for mm, inp in ((a, b), (b, a)):
                if (self.kind.get(mm) == "extern" and self.node(mm).ctor == Ctor.MM and self.users.get(mm) == [cls]
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
                    out |= {c} if self.layout.selects_part(c) else inlined_views.get(base[c], {c})
            return frozenset(out)

        def input_views(e: str) -> frozenset:
            """The exact tensors a kernel reading all of ``e`` reads: through an inlined producer, its reads."""
            return inlined_views.get(base[e], frozenset({e}))

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
                                      (max(numel(view, e), 1), 1), reads, lead_extent(view, e),
                                      input_views(e),
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
                                          lead_extent(view, first), input_views(first)))
                    reads[clone] = kernels[-1].out_bytes
                kernels.append(Kernel(len(kernels), "pointwise", cls, out_bytes, self._space(cls, k), reads,
                                      fuses=False, index_reads=frozenset(reads_of(cls, rest))))
                continue
            if k == "attention":
                kernels.extend(decomposed_attention(view, cls, self.tensor_inputs(cls), out_bytes, len(kernels),
                                                    reads_of, input_views, self.split_sms))
                continue
            if k == "embedding_bag":
                kernels.extend(embedding_bag(view, cls, self.tensor_inputs(cls), out_bytes, len(kernels), reads_of,
                                             self.layout.contiguous))
                continue
            if k == "extern" and self.triton and self._unfolded_bias(cls):
                kernels.extend(batched_linear(view, cls, self.node(cls).children, out_bytes, len(kernels), reads_of,
                                              views_of(cls)))
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
                                  cls, out_bytes, space, reads, lead_extent(view, self._outputs(cls)[0]),
                                  views_of(cls), split=k == "reduction" and splits_reduction(
                                      *space, inner, self.split_sms), inner=inner))
        return kernels

    def _unfolded_bias(self, cls: str) -> bool:
        """A biased linear of a 3-D (or more) input that is not contiguous (an expanded parameter,
        e.g. learned queries per batch; a slice; a piece of a stack along dim 1): Aten's ``linear``
        takes the ``addmm`` path only for a contiguous input, else it runs ``matmul`` (a ``bmm``
        on the fake H200) and adds the bias as a pointwise op of its own (interformer's pooling
        queries: 3 ``bmm`` and 3 adds; BART's cross-attention k/v projections of the layer norms
        eqsat batches)."""
        node = self.node(cls)
        if node.ctor != Ctor.LINEAR or self.node(node.children[2]).ctor == Ctor.NONE:
            return False
        x = node.children[0]
        shape = self.view.shape.get(x)
        return shape is not None and len(shape) >= 3 and not self.layout.contiguous(x)

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
        return node.ctor == Ctor.OPAQUE and opaque_kind(node.args[0][1]) == "source"

    def _folded(self, cls: str) -> bool:
        """A parameter, or a zero padding of one: freezing folds it into a constant."""
        node = self.node(cls)
        return self.base.get(cls, cls) in self.view.params or (
            node.ctor == Ctor.PAD and self.base.get(node.children[0], node.children[0]) in self.view.params)

    def _unrolled(self, cls: str, node: ENode) -> bool:
        """A reduction of fewer than ``config.unroll_reductions_threshold`` (8) elements per output
        is a pointwise op to Inductor (``ir.Reduction.create`` unrolls it on a GPU): it fuses, it is
        inlined. Mixtral's top-2 router weights normalised by their sum (fake H200: no kernel)."""
        ins = [c for c in node.children if self.view.sort.get(c) == "Tensor"]
        n_in, n_out = (numel(self.view, ins[0]) if ins else -1), numel(self.view, cls)
        return n_in > 0 and n_out > 0 and n_in // n_out < UNROLL_REDUCTIONS_THRESHOLD

    def _concat_diff(self, cls: str) -> bool:
        """``torch.diff(x, prepend=p)`` is ``cat([p, x])`` and two slices of it to Inductor: Triton
        keeps that cat a ConcatKernel on the same condition as any (``_input_read_elsewhere``)."""
        node = self.node(cls)
        return (self.triton and self.kind[cls] == "pointwise" and node.ctor == Ctor.OPAQUE
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
        if node.ctor != Ctor.REDUCE:
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
