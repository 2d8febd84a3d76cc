"""Aten ops eqsat keeps opaque but Inductor generates code for are priced as that code.

``var_mean`` (a layer norm's statistics), ``full``, ``iota``, ``embedding`` and ``clamp_min`` have
lowerings in Inductor (no fallback): a Welford reduction and pointwise ops that fuse with their
neighbours. H200, interformer's forward: 108 extern calls predicted where Inductor made 53.
"""
import torch

from eqsat.cost import CostModel
from fx_bridge.pipeline import price_input

aten, prims = torch.ops.aten, torch.ops.prims
GPU = CostModel.for_device("cuda")


def price(fn, *inputs):
    gm = torch.fx.symbolic_trace(fn)
    built, _ = price_input(gm, list(inputs), GPU)
    return built.before


def normalize_with_positions(x, table):
    """A layer norm from ``var_mean`` plus a position embedding from ``iota``, scaled by ``full``."""
    var, mean = aten.var_mean.correction(x, [1], correction=0, keepdim=True)
    pos = prims.iota.default(64, start=0, step=1, dtype=torch.int64, device="cpu", requires_grad=False)
    emb = aten.embedding.default(table, pos)
    scale = aten.full.default([64, 1], 2.0, dtype=torch.float32, device="cpu", pin_memory=False)
    y = aten.mul.Tensor(aten.sub.Tensor(x, mean), aten.rsqrt.default(aten.add.Tensor(var, 1e-5)))
    return aten.clamp_min.default(aten.add.Tensor(aten.mul.Tensor(y, scale), emb), 0.0)


def test_inductor_lowered_opaque_ops_are_no_extern_calls():
    cost = price(normalize_with_positions, torch.randn(64, 128), torch.randn(64, 128))
    # one persistent reduction: the statistics, and the normalization, gather and clamp as its epilogue
    assert (cost.generated, cost.extern) == (1, 0)


def test_a_fallback_op_stays_an_extern_call():
    def bag(table, idx, offsets):
        return aten.relu.default(aten._embedding_bag.default(table, idx, offsets)[0])

    cost = price(bag, torch.randn(100, 16), torch.randint(0, 100, (32,)), torch.arange(0, 32, 4))
    assert (cost.generated, cost.extern) == (1, 1)


def test_index_put_is_a_scatter_kernel_after_its_zeros():
    # an embedding's weight gradient: zeros, then an accumulating scatter whose values it computes itself
    def embedding_backward(grad, idx):
        zeros = aten.full.default([100, 16], 0.0, dtype=torch.float32, device="cpu", pin_memory=False)
        return aten.index_put.default(zeros, [idx], aten.mul.Tensor(grad, 2.0), True)

    cost = price(embedding_backward, torch.randn(32, 16), torch.randint(0, 100, (32,)))
    assert (cost.generated, cost.extern) == (2, 0)
