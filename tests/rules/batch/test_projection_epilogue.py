"""Biased projections of one input whose pieces are copied into head layout (the Aten spelling of
``q @ k.transpose(-1, -2)`` on heads: ``addmm → view → permute → clone → bmm``).

Inductor turns an ``addmm`` whose users are pointwise into ``mm`` + a bias epilogue, so each piece's
bias add fuses into the copy the head layout needs anyway. One ``mm`` on the concatenated weight,
each piece adding its own bias, then saves two matmuls for one weight copy (H200, BERT and ViT
without freezing: ``3 mm + 3 copies`` a layer). Both spellings are offered: a concatenated bias is one
more copy, but one ``addmm`` lets the three head copies become one (``head_split_copy_split_last``).
"""
import torch

from eqsat.cost import CostModel
from eqsat_torch.pipeline import optimize

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


def test_the_gpu_model_fuses_biased_projections_into_one_matmul_and_one_head_copy():
    inputs = _inputs()
    gm = torch.fx.symbolic_trace(attention)
    new_gm, report = optimize(gm, inputs, {"cost": CostModel.for_device("cuda")})
    assert "batch_linear_lhs" in report.rules_used, report.summary()
    # 3 addmm + 3 head copies + 2 bmm + softmax  →  weight cat + bias cat + addmm + 1 copy + 2 bmm + softmax
    # (per-piece bias adds: weight cat + mm + 3 copies, the bias fused into each, + 2 bmm + softmax: 8)
    assert (report.kernels_before, report.kernels_after) == (9, 7), report.summary()
    targets = [n.target for n in new_gm.graph.nodes if n.op == "call_function"]
    assert targets.count(aten.addmm.default) == 1 and targets.count(aten.clone.default) == 1, new_gm.code
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


def test_biased_linears_of_one_input_into_a_cat_fold_back_into_one_linear():
    """Optimus' own group-linear test module (ten linears of unequal widths, biased, on one input;
    their cat; split pieces stacked; ten more; cat; sigmoid). The cat of the pieces of one linear on
    the concatenated weights is that linear, but only with the concatenated bias: per-piece adds
    (the spelling for pointwise users) keep the cat. Both are offered. H200: Inductor 26 launches,
    Optimus 9, eqsat 22 when only the per-piece spelling was."""
    z = 10
    torch.manual_seed(0)
    widths = [z - i % 5 for i in range(10)]
    params = [t for n in widths * 2 for t in (torch.randn(n, z), torch.randn(n))]

    def module(x, *p):
        def linears(h, q):
            return torch.cat([torch.nn.functional.linear(h, q[2 * i], q[2 * i + 1]) for i in range(10)], 1)
        wide = linears(x + 1.2, p[:20])
        return torch.sigmoid(linears(torch.cat(torch.split(wide, z, 1)), p[20:]))

    inputs = [torch.randn(64, z), *params]
    graphs = []
    torch.compile(module, backend=lambda gm, ex: graphs.append(gm) or gm.forward)(*inputs)
    new_gm, report = optimize(graphs[0], inputs, {"cost": CostModel.for_device("cuda")})
    assert "batch_linear_lhs" in report.rules_used, report.summary()
    assert report.kernels_after <= 9, report.summary()
    linears = [n for n in new_gm.graph.nodes if n.target is torch._C._nn.linear]
    assert len(linears) == 2, new_gm.code
    torch.testing.assert_close(new_gm(*inputs)[0], module(*inputs))
