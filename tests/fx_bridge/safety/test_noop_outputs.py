"""Outputs Inductor's remove_noop_ops would merge (eqsat_torch.safety.noop_outputs)."""
import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from bench.soak.check import run_case
from eqsat_torch.lowering.lower import Unsupported
from eqsat_torch.safety.noop_outputs import refuse_new_merges


def _aten(f):
    return make_fx(f, tracing_mode="fake")(torch.randn(4)).graph


def _two_clones(x):
    y = x * 2
    return y.clone(), y.clone()


def _clone_and_product(x):
    y = x * 2
    return y.clone(), y * 3


def test_inductor_alone_returns_two_clones_of_one_value_as_one_tensor():
    """The behaviour the check guards against, shown on Inductor alone (not a bug of ours)."""
    a, b = torch.compile(_two_clones, backend="inductor")(torch.randn(4))
    if a is not b:
        pytest.skip("this torch's remove_noop_ops keeps the two clones apart")
    assert a.data_ptr() == b.data_ptr()


def test_a_program_whose_outputs_the_removal_merges_is_refused():
    with pytest.raises(Unsupported, match="outputs 0 and 1"):
        refuse_new_merges(_aten(_clone_and_product), _aten(_two_clones))


def test_merges_the_input_program_has_too_are_no_reason_to_refuse():
    refuse_new_merges(_aten(_two_clones), _aten(_two_clones))
    refuse_new_merges(_aten(_clone_and_product), _aten(_clone_and_product))


def test_soak_seed_3010674_keeps_its_outputs_apart():
    """``stack(unbind(t))`` found equal to ``t`` and kept apart by a clone, while ``t``'s full
    ``slice_scatter`` is dropped: the post-grad pass now keeps the graph, and the outputs stay two.
    The seed was drawn before the soak drew contexts (issue 41): ``contexts=False`` draws its program."""
    result = run_case(3010674, train=False, contexts=False)
    assert result["problem"] is None, result
    assert any("remove_noop_ops" in f for f in result["fallbacks"])


def _two_views(x):
    y = x * 2
    return torch.split(y, 4)[0], torch.chunk(y, 1)[0]


def _value_and_its_alias(x):
    y = x * 2
    return y, torch.ops.aten.alias(y)


def test_two_views_rewritten_to_a_value_and_its_alias_are_refused():
    """Soak seed 3001290: two views of one value share a storage in the input program; rewritten to
    ``y`` and ``alias(y)``, the removal drops the alias and returns one tensor twice."""
    with pytest.raises(Unsupported, match="outputs 0 and 1"):
        refuse_new_merges(_aten(_two_views), _aten(_value_and_its_alias))
    refuse_new_merges(_aten(_two_views), _aten(_two_views))


def _cat_of_split_and_a_view(x):
    c = (x * 2).clone()
    return torch.cat(torch.split(c, 2)), c[2:]


def _clone_and_a_view(x):
    c = (x * 2).clone()
    return c.clone(), c[2:]


def test_a_clone_and_a_view_of_one_dropped_clone_are_refused():
    """Soak seed 3003918: ``cat(split(c))`` found equal to ``c`` and kept apart by a clone; both
    clones are dropped (the storages are read once) and the outputs share one storage. The meta
    values still name the clones' storages: the check follows the edges the removal rewired."""
    with pytest.raises(Unsupported, match="outputs 0 and 1"):
        refuse_new_merges(_aten(_cat_of_split_and_a_view), _aten(_clone_and_a_view))
    refuse_new_merges(_aten(_cat_of_split_and_a_view), _aten(_cat_of_split_and_a_view))


def _two_views_of_a_value(x):
    y = x * 2
    return y[0], torch.split(y, 4)[0]


def _view_of_a_value_and_the_value(x):
    y = x * 2
    return y[0], y


def test_an_output_that_becomes_a_view_of_another_output_is_refused():
    """Soak seed 3009133t: output 0, a no_grad clone in eager, came back a view of output 2 itself,
    and autograd reads a view's requires_grad from its base (True where eager's was False)."""
    with pytest.raises(Unsupported, match="outputs 0 and 1"):
        refuse_new_merges(_aten(_two_views_of_a_value), _aten(_view_of_a_value_and_the_value))
    refuse_new_merges(_aten(_view_of_a_value_and_the_value), _aten(_view_of_a_value_and_the_value))


def test_merges_among_saved_activations_are_no_reason_to_refuse():
    """Outputs past the user's (a forward graph's activations saved for the backward) are only read:
    BART's training forward graphs keep their rewrites."""
    refuse_new_merges(_aten(_two_views), _aten(_value_and_its_alias), user=1)
    with pytest.raises(Unsupported, match="outputs 0 and 1"):
        refuse_new_merges(_aten(_two_views), _aten(_value_and_its_alias), user=2)


def test_merged_gradients_of_a_backward_graph_are_no_reason_to_refuse():
    """A backward graph's outputs are gradients (``user`` 0): autograd copies one it cannot steal, and
    Inductor alone returns one tangent for both inputs of an add. BERT's and ViT's training steps keep
    their backward rewrites (tests/fx_bridge/inductor/post_grad/test_post_grad.py)."""
    refuse_new_merges(_aten(_two_views), _aten(_value_and_its_alias), user=0)
    with pytest.raises(Unsupported, match="outputs 0 and 1"):
        refuse_new_merges(_aten(_two_views), _aten(_value_and_its_alias), user=None)
