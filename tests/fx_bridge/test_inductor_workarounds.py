"""Issue 28: Inductor reuses a stack's buffer while a value computed in place in one of its slots is
still live (docs/upstream/inductor_stack_slot_reuse.py). The backend turns Inductor's in-place buffer
reuse off for a graph that stacks a value something else reads, the pattern batched linears make."""
import pytest
import torch

from fx_bridge import inductor_workarounds, torch_compat


def stack_of_shared(x, y, w1, w2):
    """BART's decoder after batched linears, reduced: ``b`` is stacked and read again."""
    a = torch.relu(x)
    b = torch.layer_norm(y + 1.0, (128,))
    r = torch.bmm(torch.stack([a, b]).reshape(2, 128, 128), w1)
    c = torch.layer_norm(b + r[1].reshape(2, 64, 128), (128,))
    q = (c.reshape(128, 128) @ w2).reshape(2, 64, 4, 32).transpose(1, 2)
    k = r[0].reshape(2, 64, 4, 32).transpose(1, 2)
    return q @ k.transpose(2, 3), r


def stack_of_private(x, y):
    return torch.stack([x.relu(), y.sin()]).sum(0)


def _args():
    torch.manual_seed(0)
    return [torch.randn(2, 64, 128), torch.randn(2, 64, 128), torch.randn(2, 128, 128) / 11,
            torch.randn(128, 128) / 11]


def test_pattern_is_a_stack_of_a_value_read_elsewhere():
    shared = torch.fx.symbolic_trace(stack_of_shared)
    private = torch.fx.symbolic_trace(stack_of_private)
    assert inductor_workarounds.config_for(shared, {}) == {"inplace_buffers": False}
    assert inductor_workarounds.config_for(private, {}) == {}


def test_user_setting_wins():
    shared = torch.fx.symbolic_trace(stack_of_shared)
    assert inductor_workarounds.config_for(shared, {"inplace_buffers": True}) == {"inplace_buffers": True}


@pytest.mark.slow
def test_stack_slot_reused_in_place_stays_right():
    """Inductor alone: max error 111 (torch 2.13 CPU); through the backend: eager's values."""
    args = _args()
    with torch.no_grad():
        want = stack_of_shared(*args)
        torch_compat.reset_dynamo()
        got = torch.compile(stack_of_shared, backend="eqsat")(*args)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
