"""When GPU Inductor keeps a cat a ConcatKernel (its inputs written into their slices, one kernel each)
rather than one pointwise kernel, and what can fuse with it. transformers 5's packed-sequence mask
(``torch.diff(p, prepend=p[:, :1] - 1)`` then ``cumsum``, in every Llama-style model) is 3 kernels on
the fake H200; the model planned 1 (zoo Llama, Qwen2, Mixtral: 2 launches short each). The probe's
count is the truth here; the expected counts are what it gave."""
import pytest
import torch

from captured import assert_gpu_launches

F = torch.nn.functional


def _packed_sequence_mask(offset):
    position_ids = torch.arange(16)[None].expand(2, -1) + offset
    first = position_ids[:, :1] - 1
    return (torch.diff(position_ids, prepend=first, dim=-1) != 1).cumsum(-1)


def _packed_sequence_mask_of_a_view(offset):
    """GPT-2's spelling: the positions an unsqueezed view of a computed buffer."""
    position_ids = (torch.arange(16) + offset).unsqueeze(0)
    first = position_ids[:, :1] - 1
    return (torch.diff(position_ids, prepend=first, dim=-1) != 1).cumsum(-1)


def _row_scaled_sum(a, x):
    s = a.exp()
    return s, (x * s).sum(-1)


RELU10 = [torch.randn(4, 8) for _ in range(10)]
WS = [torch.nn.Parameter(torch.randn(10 - i % 5, 10)) for i in range(10)]
BS = [torch.nn.Parameter(torch.randn(10 - i % 5)) for i in range(10)]
V = torch.nn.Parameter(torch.randn(10, 10))


def _tall_of_wide(x):
    """Optimus' unequal linears: the pieces of a ConcatKernel stacked along the batch by a cat."""
    wide = torch.cat([F.linear(x, w, b) for w, b in zip(WS, BS)], 1)
    return torch.cat(torch.split(wide, 10, 1)) @ V
CASES = {
    # an input also read by a pointwise op elsewhere: ConcatKernel, and its slice writers do not fuse
    # with the cat's reader (they write other indices than it reads)
    "packed_sequence_mask": (_packed_sequence_mask, (torch.tensor(0),), (3, 0)),
    "packed_sequence_mask_of_a_view": (_packed_sequence_mask_of_a_view, (torch.tensor(0),), (3, 0)),
    "diff_prepend_pointwise_user": (lambda p: torch.diff(p, prepend=p[:, :1] - 1, dim=-1) * 2,
                                    (torch.randn(2, 16),), (3, 0)),
    "cat_read_elsewhere_into_sum": (lambda p: torch.cat([p[:, :1] - 1, p], 1).sum(-1), (torch.randn(2, 16),), (3, 0)),
    "cat_read_elsewhere_into_mul": (lambda p: torch.cat([p[:, :1] - 1, p], 1) * 2, (torch.randn(2, 16),), (3, 0)),
    "cat_of_ten_into_sum": (lambda *xs: torch.cat([x.relu() for x in xs], 1).sum(-1), RELU10, (11, 0)),
    # 8 views of a ConcatKernel's buffer, all needing a copy: one pointwise cat (the model: 8 copies)
    "cat_of_a_cats_pieces": (_tall_of_wide, (torch.randn(4, 10),), (1, 11)),
    # what must not change: a per-row producer still fuses into the row sum reading it
    "row_producer_into_sum": (_row_scaled_sum, (torch.randn(64, 1), torch.randn(64, 128)), (1, 0)),
    "pointwise_cat": (lambda a, b: torch.cat([a.exp(), b.relu()], 1) * 2, (torch.randn(4, 8), torch.randn(4, 8)), (1, 0)),
}


@pytest.mark.parametrize("name", CASES)
def test_concat_launches_match_inductor_on_a_gpu(name):
    fn, inputs, expected = CASES[name]
    assert_gpu_launches(fn, inputs, expected)
