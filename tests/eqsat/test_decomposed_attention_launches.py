"""Two places where the GPU model under-planned transformers 5.17's BERT, T5 and BART (H200: 33, 79, 79
launches; the model 24, 66, 62): attention CUDA cannot fuse, and T5's elementwise ``torch.min``. The
fake-H200 probe reproduces the H200's counts for the three models, so its count is the truth here."""
import pytest
import torch

from captured import dynamo_graph
from eqsat.cost import CostModel
from eqsat_torch.inductor.probe import available, count_launches
from eqsat_torch.pipeline import optimize, price_input

F = torch.nn.functional
GPU, CPU = CostModel.for_device("cuda"), CostModel.for_device("cpu")


def _predicted(fn, *inputs, model=GPU):
    gm, ex = dynamo_graph(fn, *inputs)
    built, _ = price_input(gm, ex, model)
    return (built.before.generated, built.before.extern), (gm, ex)


def _counted(gm, ex):
    if not available("cuda"):
        return None
    got = count_launches(gm, ex, "cuda", "torch")
    return got.generated, got.extern


def _heads(t):
    return t.view(2, 128, 4, 64).transpose(1, 2)


def _padding_mask_attention(q, k, v, keep):
    """BERT's attention in transformers 5: heads transposed out of a projection, a padding mask
    expanded along its last dim (stride 0 there)."""
    mask = keep[:, None, :, None].expand(2, 1, 128, 128)
    return F.scaled_dot_product_attention(_heads(q), _heads(k), _heads(v), attn_mask=mask)


QKV = [torch.randn(2, 128, 256) for _ in range(3)]
KEEP = torch.ones(2, 128, dtype=torch.bool)


def test_attention_with_a_stride_0_mask_is_three_copies_a_softmax_and_two_bmm_on_a_gpu():
    predicted, graph = _predicted(_padding_mask_attention, *QKV, KEEP)
    assert predicted == (4, 2)  # q, k, v copied (q and k scaled), the softmax; q·kᵀ and p·v
    assert _counted(*graph) in (None, (4, 2))


def test_the_cpu_model_keeps_such_attention_one_call():
    """The C++ backend's fused attention takes any mask layout: one extern call there."""
    predicted, _ = _predicted(_padding_mask_attention, *QKV, KEEP, model=CPU)
    assert predicted == (0, 1)


def test_an_elementwise_min_of_two_tensors_fuses_like_minimum():
    """``torch.min(a, b)`` is ``torch.minimum``: it fuses into the sum reading it (T5's position
    buckets). Opaque, the model planned an extern call and a kernel for the sum."""
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    fn = lambda a, b: (torch.min(a, b) + 1).sum(-1)  # noqa: E731
    predicted, graph = _predicted(fn, a, b)
    assert predicted == (1, 0)
    assert _counted(*graph) in (None, (1, 0))
    raised, _ = optimize(*graph, {"always_raise": True})  # rebuilt from the e-graph: torch.minimum
    torch.testing.assert_close(raised(*graph[1]), graph[0](*graph[1]))


@pytest.mark.parametrize("fn", [lambda x: torch.min(x, 1).values, lambda x: x.max(), lambda x: x.max(-1)[0]],
                         ids=["min_dim", "max_all", "max_dim"])
def test_min_and_max_over_dims_stay_reductions(fn):
    x = torch.randn(64, 64)
    predicted, _ = _predicted(fn, x)
    assert sum(predicted) == 1


def _fused_attention_heads_merged(q, k, v):
    out = F.scaled_dot_product_attention(_heads(q), _heads(k), _heads(v), is_causal=True)
    return out.transpose(1, 2).contiguous().view(2, 128, 256) @ W


W = torch.nn.Parameter(torch.randn(256, 256))


def test_merging_the_heads_of_fused_attention_copies_nothing_on_a_gpu():
    """Flash and memory-efficient attention write (batch, seq, heads, dim) and return it transposed:
    ``.transpose(1, 2).contiguous()`` is free (GPT-2, Llama, Mixtral: one kernel a layer too many)."""
    predicted, graph = _predicted(_fused_attention_heads_merged, *QKV)
    assert predicted == (0, 2)  # the attention call, the projection
    assert _counted(*graph) in (None, (0, 2))


def test_merging_the_heads_of_decomposed_attention_is_still_a_copy():
    fn = lambda q, k, v, keep: _padding_mask_attention(q, k, v, keep).transpose(1, 2).contiguous()  # noqa: E731
    predicted, graph = _predicted(fn, *QKV, KEEP)
    assert predicted == (5, 2)
    assert _counted(*graph) in (None, (5, 2))


def test_a_contiguous_of_a_contiguous_layout_is_no_kernel_on_a_gpu():
    """GPT-2 in transformers 5 calls ``.contiguous()`` again after merging the heads; Inductor's
    post-grad pass drops a clone whose layout is its input's (here: the view of a merged head)."""
    fn = lambda q, k, v: _fused_attention_heads_merged(q, k, v).contiguous() @ W  # noqa: E731
    predicted, graph = _predicted(fn, *QKV)
    assert predicted == (0, 3)
    assert _counted(*graph) in (None, (0, 3))


def test_contiguous_of_a_transpose_moving_only_a_unit_dim_is_no_kernel():
    """``is_contiguous`` ignores the strides of unit dims: tracing drops the call, nothing to copy."""
    fn = lambda x: x.view(2, 128, 1, 256).transpose(1, 2).contiguous().view(2, 128, 256) @ W  # noqa: E731
    predicted, graph = _predicted(fn, torch.randn(2, 128, 256))
    assert predicted == (0, 1)
    assert _counted(*graph) in (None, (0, 1))


def _repeat_kv(x, n):
    """transformers' ``repeat_kv`` for grouped-query attention: expand a new head dim, merge it."""
    b, h, s, d = x.shape
    return x[:, :, None, :, :].expand(b, h, n, s, d).reshape(b, h * n, s, d)


def test_repeating_grouped_key_value_heads_is_a_copy_each_on_a_gpu():
    """Merging a dim an expand grew from 1 cannot be a view: k and v are copied before the call
    (Qwen2, Mixtral: one kernel a layer the model had free)."""
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, _repeat_kv(k, 2), _repeat_kv(v, 2), is_causal=True)  # noqa: E731
    predicted, graph = _predicted(fn, torch.randn(2, 4, 16, 64), torch.randn(2, 2, 16, 64), torch.randn(2, 2, 16, 64))
    assert predicted == (2, 1)
    assert _counted(*graph) in (None, (2, 1))


def test_splitting_a_dim_beside_a_broadcast_is_still_a_view():
    fn = lambda x: x.expand(4, 8).reshape(4, 2, 4).relu()  # noqa: E731
    predicted, graph = _predicted(fn, torch.randn(1, 8))
    assert predicted == (1, 0)
    assert _counted(*graph) in (None, (1, 0))
