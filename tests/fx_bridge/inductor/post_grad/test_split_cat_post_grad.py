"""The split-cat rules on Aten-IR graphs: split_with_sizes + cat, unsqueeze(select) + cat, slice + cat.

Lowering spells the Aten forms as the same terms as the Torch-IR ones, so the same rules fire
after autograd; these check it on real AOTAutograd graphs (forward and backward), with gradients.
"""
import pytest
import torch

from aten_harness import compare_training, pass_backend


def split_cat(x):
    return torch.cat(torch.split(x.sigmoid(), [3, 5], dim=1), dim=1) * 2


def unsqueeze_select_cat(x):
    return torch.cat([x[:, i].unsqueeze(1) for i in range(x.shape[1])], dim=1).relu()


def slice_cat(x):
    return torch.cat([x[:, :4], x[:, 4:]], dim=1).exp()


@pytest.mark.parametrize("fn", [split_cat, unsqueeze_select_cat, slice_cat])
def test_rules_remove_the_aten_split_cat(fn):
    backend, p = pass_backend(always_raise=False, post_grad_disabled=())
    module = torch.nn.Module()
    module.forward = fn
    compare_training(module, (torch.randn(4, 8),), backend)
    forward = p.reports[0]
    assert forward.changed, forward.summary()
    assert forward.rules_used, forward.summary()
    assert forward.kernels_after < forward.kernels_before or forward.cost_after < forward.cost_before
