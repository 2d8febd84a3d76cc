"""Aten ops eqsat keeps opaque but Inductor generates code for are priced as that code.

``var_mean`` (a layer norm's statistics), ``full``, ``iota``, ``embedding`` and ``clamp_min`` have
lowerings in Inductor (no fallback): a Welford reduction and pointwise ops that fuse with their
neighbours. H200, interformer's forward: 108 extern calls predicted where Inductor made 53.
"""
import torch

from captured import dynamo_graph
from eqsat.cost import CostModel
from eqsat_torch.inductor.probe import available, count_launches
from eqsat_torch.pipeline import price_input

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


def token_embedding_with_positions(ids, table, pos_table):
    """What a decoder's Dynamo graph starts with (transformers 5.x): token and position embeddings,
    position ids from ``arange``, a padding mask from ``new_ones`` and a masked fill: Torch-IR spellings
    of the ops above."""
    positions = torch.arange(ids.shape[1]).expand(ids.shape)
    padded = ids.new_ones(ids.shape) == 0
    hidden = torch.nn.functional.embedding(ids, table) + torch.nn.functional.embedding(positions, pos_table)
    return hidden.masked_fill(~padded.unsqueeze(-1), 0.0)


def test_torch_ir_factories_and_gathers_fuse_as_inductor_fuses_them():
    """Whole transformers models price their embeddings, position ids and masks by the Torch-IR names
    Dynamo gives them: before, each was an extern call (GPT-2's Dynamo graph: 32 launches predicted,
    21 made). Inductor makes one kernel that gathers, adds and masks, as its probe says."""
    ids = torch.randint(1, 100, (2, 16))
    gm, inputs = dynamo_graph(token_embedding_with_positions, ids, torch.randn(100, 32), torch.randn(16, 32))
    built, _ = price_input(gm, inputs, GPU)
    assert (built.before.generated, built.before.extern) == (1, 0)
    if available("cuda"):
        assert count_launches(gm, inputs, "cuda", "torch").total == 1


def test_torch_ir_spellings_of_one_op_get_one_kind():
    """Dynamo records a call by whatever it traced into: ``torch.embedding`` in one torch version, the
    functional in another; a method by its name. Each prices as the op it is."""
    from eqsat.opaque_kinds import opaque_kind

    for label in ("torch.nn.functional.embedding", "torch.embedding", "new_ones", "torch._C.TensorBase.new_ones"):
        assert opaque_kind(f"op:{label}(sig=x)") == "pointwise", label
    assert opaque_kind("op:torch._C._log_api_usage_once") == "view"  # no kernel at all
    assert opaque_kind("op:torch.conv2d") == opaque_kind("op:aten.convolution.default") == "extern"
    assert opaque_kind("op:aten.embedding.default") == "pointwise"
