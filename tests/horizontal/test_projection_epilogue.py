"""Biased projections of one input whose pieces are copied into head layout (the Aten spelling of
``q @ k.transpose(-1, -2)`` on heads: ``addmm → view → permute → clone → bmm``).

Inductor turns an ``addmm`` whose users are pointwise into ``mm`` + a bias epilogue, so each piece's
bias add fuses into the copy the head layout needs anyway. One ``mm`` on the concatenated weight,
each piece adding its own bias, then saves two matmuls for one weight copy (H200, BERT and ViT
without freezing: ``3 mm + 3 copies`` a layer); a concatenated bias would be one more copy, which is
why the biased-matmul form alone never paid there.
"""
import torch

from eqsat.cost import CostModel
from fx_bridge.pipeline import optimize

aten = torch.ops.aten
B, T, H, D = 2, 64, 4, 32  # bert_layer at size small
C = H * D


def heads(y):
    """(B·T, C) → (B·H, T, D), contiguous: the copy ``matmul`` makes of a permuted 4-D view."""
    v = aten.permute.default(aten.view.default(y, [B, T, H, D]), [0, 2, 1, 3])
    return aten.view.default(aten.clone.default(v, memory_format=torch.contiguous_format), [B * H, T, D])


def attention(x, wq, bq, wk, bk, wv, bv):
    q, k, v = (heads(aten.addmm.default(b, x, aten.t.default(w))) for w, b in ((wq, bq), (wk, bk), (wv, bv)))
    scores = aten._softmax.default(aten.bmm.default(q, aten.transpose.int(k, 1, 2)), -1, False)
    return aten.bmm.default(scores, v)


def _inputs():
    torch.manual_seed(0)
    params = [t for _ in range(3) for t in (torch.randn(C, C) / C ** 0.5, torch.randn(C))]
    return [torch.randn(B * T, C), *params]


def test_the_gpu_model_fuses_biased_projections_with_per_piece_bias_adds():
    inputs = _inputs()
    gm = torch.fx.symbolic_trace(attention)
    new_gm, report = optimize(gm, inputs, {"cost": CostModel.for_device("cuda")})
    assert "batch_linear_lhs" in report.rules_used, report.summary()
    # 3 addmm + 3 head copies + 2 bmm + softmax  →  weight cat + mm + 3 copies (bias fused) + 2 bmm + softmax
    assert (report.kernels_before, report.kernels_after) == (9, 8), report.summary()
    targets = [n.target for n in new_gm.graph.nodes if n.op == "call_function"]
    assert aten.mm.default in targets and aten.addmm.default not in targets
    torch.testing.assert_close(new_gm(*inputs), attention(*inputs))


def test_without_the_head_copies_nothing_pays():
    """The same projections read by one output each: a bias add per piece is a kernel of its own,
    and the weight copy saves nothing."""
    def three(x, wq, bq, wk, bk, wv, bv):
        return [aten.addmm.default(b, x, aten.t.default(w)) for w, b in ((wq, bq), (wk, bk), (wv, bv))]

    inputs = _inputs()
    _, report = optimize(torch.fx.symbolic_trace(three), inputs, {"cost": CostModel.for_device("cuda")})
    assert "batch_linear_lhs" not in report.rules_used, report.summary()
    assert report.kernels_after == report.kernels_before == 3
