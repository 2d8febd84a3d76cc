"""Whether CUDA runs a ``scaled_dot_product_attention`` call as one fused kernel, or as its math
decomposition (two batched matmuls and a softmax), decided the way ``sdp_utils`` decides it for an
H200 in float32: the probe builds the call Inductor would see from it, and lowering marks the calls
the GPU cost model must price as the decomposition (``eqsat.ops.STRIDED_ATTENTION``)."""
from __future__ import annotations

from typing import Any


def cuda_fuses(query: Any, key: Any, value: Any, attn_mask: Any = None, enable_gqa: bool = False) -> bool:
    """Flash or memory-efficient attention takes the call: equal head counts (grouped-query attention
    keeps the decomposition), a head size that is a multiple of 8 and at most 256, and a last dim
    of stride 1 in q, k, v and the mask (``check_last_dim_stride_equals_1``: transformers 5's BERT and
    BART expand their masks with stride 0 there, T5 permutes its position bias to stride 4)."""
    head = query.shape[-1]
    if enable_gqa and key.shape[-3] != query.shape[-3] or head % 8 or head > 256:
        return False
    if head != 1 and any(t.stride(-1) != 1 for t in (query, key, value)):
        return False
    return attn_mask is None or attn_mask.stride(-1) == 1
