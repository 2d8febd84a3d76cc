"""Opaque calls Triton lowers as several kernels (``eqsat.fusion.TRITON_PLANNED``) and a linear it runs
as a matmul and an add: the kernels each one is, planned from the reads the planner resolves
(``reads_of(cls, inputs)``: buffers read, through inlined pointwise producers)."""
from __future__ import annotations

from typing import Callable

from .kernel import DTYPE_BYTES, Kernel, class_bytes, lead_extent, numel, splits_reduction
from .serialized import EGraphView

ReadsOf = Callable[..., dict[str, float]]


def decomposed_attention(view: EGraphView, cls: str, inputs: list[str], out_bytes: float, first: int, reads_of: ReadsOf,
                         input_views: Callable[[str], frozenset], split_sms: int) -> list[Kernel]:
    """Attention as CUDA runs it when no fused kernel takes it (``eqsat.ops.DECOMPOSED_ATTENTION``):
    q, k and v each copied to the batched layout (q and k scaled; their producers' pointwise ops
    fuse in), ``bmm`` of q and k, one softmax kernel (the mask's pointwise ops fuse in), ``bmm``
    of that and v. H200, transformers 5.17's BERT: 3 Triton kernels and 2 calls an attention, 33
    launches for the model where one fused call (what the model planned) made 24."""
    q, k, v, *mask = inputs
    shape_q, shape_k = view.shape.get(q) or (1,), view.shape.get(k) or (1, 1)
    rows, keys = max(numel(view, q), 1) // max(shape_q[-1], 1), shape_k[-2] if len(shape_k) > 1 else 1
    score_bytes = float(rows * keys * DTYPE_BYTES.get(view.dtype.get(q, "float32"), 4))
    kernels: list[Kernel] = []

    def add(kind: str, writes: str, nbytes: float, space: tuple[int, int], reads: dict, **kw) -> str:
        kernels.append(Kernel(first + len(kernels), kind, writes, nbytes, space, reads, **kw))
        return writes

    copies = [add("pointwise", f"{tag}:{cls}", class_bytes(view, t) or 0.0, (max(numel(view, t), 1), 1),
                  reads_of(cls, [t]), lead=lead_extent(view, t), views=input_views(t))
              for tag, t in (("q", q), ("k", k), ("v", v))]
    scores = add("extern", f"scores:{cls}", score_bytes, (0, 0),
                 {c: kernels[i].out_bytes for i, c in enumerate(copies[:2])})
    softmax = add("reduction", f"softmax:{cls}", score_bytes, (rows, keys),
                  {scores: score_bytes, **reads_of(cls, mask)}, views=frozenset({scores}),
                  split=splits_reduction(rows, keys, True, split_sms))
    add("extern", cls, out_bytes, (0, 0), {softmax: score_bytes, copies[2]: kernels[2].out_bytes})
    return kernels


def batched_linear(view: EGraphView, cls: str, inputs: list[str], out_bytes: float, first: int, reads_of: ReadsOf,
                   views: frozenset) -> list[Kernel]:
    """A linear whose bias Aten adds apart (``eqsat.fusion``'s ``_unfolded_bias``): the matmul (an
    extern call), then the bias add (a pointwise kernel that fuses with pointwise consumers like any
    other)."""
    x, w, b = inputs
    product = f"bmm:{cls}"
    space = (max(numel(view, cls), 1), 1)
    return [Kernel(first, "extern", product, out_bytes, (0, 0), reads_of(cls, [x, w]), views=views),
            Kernel(first + 1, "pointwise", cls, out_bytes, space, {product: out_bytes, **reads_of(cls, [b])},
                   lead_extent(view, cls), frozenset({product, b}))]


def embedding_bag(view: EGraphView, cls: str, inputs: list[str], out_bytes: float, first: int, reads_of: ReadsOf,
                  contiguous: Callable[[str], bool]) -> list[Kernel]:
    """``F.embedding_bag`` of 2-D ids as Inductor lowers it: the offsets ``arange`` is a Triton
    kernel of its own (it reads nothing, so nothing fuses with it), the ids are flattened, a copy
    when they are a strided view (a slice of the ids of several tables), then one extern call.
    Fake H200: a bag of contiguous 2-D ids is 1 kernel + 1 call, of ``ids[:, t]`` 2 + 1; DLRM's
    8 bags were planned as 8 launches, Inductor makes 24."""
    ids, *rest = inputs
    shape = view.shape.get(ids) or ()
    kernels: list[Kernel] = []
    if len(shape) == 2:
        offsets = f"offsets:{cls}"
        kernels.append(Kernel(first, "pointwise", offsets, float(shape[0] * DTYPE_BYTES["int64"]),
                              (shape[0], 1), {}, shape[0]))
        reads = {offsets: kernels[0].out_bytes}
        if not contiguous(ids):
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
