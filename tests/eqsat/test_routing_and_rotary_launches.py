"""Ops of current transformers' Llama-style rotary embedding and MoE routing that GPU Inductor does not
run as extern calls (zoo Mixtral, fake H200: 54 launches planned, 45 counted): a matmul contracting
one element is a broadcast multiply, a sort of at most 512 elements a Triton kernel, and the inverse
permutation ``inv[perm] = arange(n)`` into an ``empty_like`` one scatter kernel that takes its index's
producer. The fake-H200 probe's count is the truth here; the expected counts are what it gave."""
import pytest
import torch

from captured import assert_gpu_launches, dynamo_graph
from eqsat.cost import CostModel
from eqsat_torch.pipeline import optimize, price_input

GPU, CPU = CostModel.for_device("cuda"), CostModel.for_device("cpu")


def _rotary(inv_freq, positions):
    freqs = (inv_freq.expand(2, -1, -1) @ positions.expand(2, -1, -1)).transpose(1, 2)
    emb = torch.cat([freqs, freqs], -1)
    return emb.cos(), emb.sin()


def _sort_and_inverse(expert_ids):
    ids, perm = torch.sort(expert_ids)
    inverse = torch.empty_like(perm)
    inverse[perm] = torch.arange(perm.size(0))
    return ids, inverse


def _scatter_into_computed(t, index, value):
    t = t * 2
    t[index] = value
    return t


def _slice_assign(t, value):
    t = t * 2
    t[2:4] = value
    return t


def _gathered_normalised_weights(weights, perm, hidden):
    """Mixtral's top-2 router weights over their sum, gathered in expert order: a sum of 2 elements
    is unrolled into a pointwise op, so it is computed inside the kernel that reads it."""
    weights = weights / weights.sum(-1, keepdim=True)
    return hidden * weights.reshape(-1)[perm].unsqueeze(-1)


CASES = {
    "rotary_bmm_k1": (_rotary, (torch.randn(1, 32, 1), torch.arange(16.).view(1, 1, 16)), (1, 0)),
    "mm_k1": (lambda a, b: (a @ b).relu(), (torch.randn(32, 1), torch.randn(1, 16)), (1, 0)),
    "mm_k1_one_row": (lambda a, b: (a @ b).relu(), (torch.randn(1, 1), torch.randn(1, 16)), (1, 1)),  # stays mm
    "sort_64": (lambda e: torch.sort(e), (torch.randint(0, 8, (64,)),), (1, 0)),
    "sort_rows": (lambda e: torch.sort(e, dim=-1), (torch.randn(4, 64),), (1, 0)),
    "sort_1024": (lambda e: torch.sort(e), (torch.randint(0, 8, (1024,)),), (0, 1)),  # aten.sort
    "sort_and_inverse": (_sort_and_inverse, (torch.randint(0, 8, (64,)),), (1, 0)),
    "scatter_into_computed": (_scatter_into_computed,
                              (torch.randn(64, 8), torch.randint(0, 64, (16,)), torch.randn(16, 8)), (2, 0)),
    "slice_assign": (_slice_assign, (torch.randn(64, 8), torch.randn(2, 8)), (1, 0)),
    "sum_of_two_gathered": (_gathered_normalised_weights,
                            (torch.rand(64, 2), torch.randperm(128), torch.randn(128, 16)), (1, 0)),
    "sum_of_eight_stays_a_reduction": (lambda x: x.sum(-1).relu(), (torch.randn(64, 8),), (1, 0)),
}


@pytest.mark.parametrize("name", CASES)
def test_launches_match_inductor_on_a_gpu(name):
    fn, inputs, expected = CASES[name]
    assert_gpu_launches(fn, inputs, expected)


def test_the_cpu_model_keeps_sort_and_index_assign_extern():
    gm, ex = dynamo_graph(_sort_and_inverse, torch.randint(0, 8, (64,)))
    built, _ = price_input(gm, ex, CPU)
    assert built.before.extern == 2


def test_an_outer_product_priced_pointwise_still_computes_the_same():
    """The rotary program through eqsat with the GPU model: eager's values."""
    inputs = (torch.randn(1, 32, 1), torch.arange(16.).view(1, 1, 16))
    gm, ex = dynamo_graph(_rotary, *inputs)
    out, _ = optimize(gm, ex, {"cost": GPU, "always_raise": True})
    torch.testing.assert_close(tuple(out(*ex)), tuple(_rotary(*inputs)))  # every output, none dropped
