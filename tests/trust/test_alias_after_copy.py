"""Issue 30: an output that gets a copy no longer aliases the outputs read before the copy.

On the random 15k-node graph every window's program was refused: eager computes output 49 afresh
(``cat(relu(split(m)))``), the e-graph finds it equal to output 15 (``relu(m)``), and output 60, a view
of output 15, was then read as aliasing output 49 too, though output 49 gets a copy. The signature of
a later output is now taken after the earlier ones' repairs; a real new alias is still refused.
"""
import pytest
import torch

from fx_bridge import optimize, torch_compat
from fx_bridge.aliasing import alias_signature, match_aliasing, real_signature
from fx_bridge.lower import Unsupported


def _eager(x):
    r = torch.relu(x)
    return r, torch.cat(r.split(2, 0), 0), r.chunk(2, 1)[0]  # fresh, equal to r; a view of r


def _found_equal(x):
    r = torch.relu(x)
    return r, r, r.chunk(2, 1)[0]  # what extraction makes of it: output 1 *is* output 0


def _traced(f, x):
    gm = torch.fx.symbolic_trace(f)
    torch_compat.propagate_fake(gm, [x])
    return gm


def test_view_of_an_output_whose_twin_is_copied_is_not_a_new_alias():
    x = torch.randn(4, 6)
    eager, new = _traced(_eager, x), _traced(_found_equal, x)
    repair = match_aliasing(alias_signature(eager, "val"), new, "torch")  # raised "output 2 would alias" before
    assert (repair.copies, repair.views) == (1, 0)
    outs, want = new(x), _eager(x)
    torch.testing.assert_close(outs, want)
    assert real_signature([x], list(outs)) == real_signature([x], list(want))


def test_a_real_new_alias_after_a_copy_is_still_refused():
    """Eager's output 2 is a view of output 1 (fresh); ours is a view of output 0, and the copy of
    output 1 does not make it a view of the copy: refused, never weakened."""
    def eager(x):
        r = torch.relu(x)
        a = r * 1
        return r, a, a[0]

    def ours(x):
        r = torch.relu(x)
        return r, r, r[0]

    x = torch.randn(4, 6)
    with pytest.raises(Unsupported, match="output 2 would alias output 0 where eager's aliases output 1"):
        match_aliasing(alias_signature(_traced(eager, x), "val"), _traced(ours, x), "torch")


def test_the_round_keeps_its_program_and_outputs_alias_like_eager():
    x = torch.randn(4, 6)
    gm = _traced(_eager, x)
    new, report = optimize(gm, [x], {"always_raise": True})
    assert not any("would alias" in n for n in report.notes), report.notes
    assert report.alias_copies == 1, report.summary()
    outs, want = new(x), _eager(x)
    torch.testing.assert_close(outs, want)
    assert real_signature([x], list(outs)) == real_signature([x], list(want))
