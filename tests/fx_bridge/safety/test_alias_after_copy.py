"""Issue 30: an output that gets a copy no longer aliases the outputs read before the copy.

On the random 15k-node graph every window's program was refused: eager computes output 49 afresh
(``cat(relu(split(m)))``), the e-graph finds it equal to output 15 (``relu(m)``), and output 60, a view
of output 15, was then read as aliasing output 49 too, though output 49 gets a copy. The signature of
a later output is now taken after the earlier ones' repairs; a real new alias is still refused.
"""
import pytest
import torch

from eqsat_torch import optimize
from eqsat_torch.inductor import compat
from eqsat_torch.safety.aliasing import alias_signature, match_aliasing, real_signature
from eqsat_torch.lowering.lowered import Unsupported


def _eager(x):
    r = torch.relu(x)
    return r, torch.cat(r.split(2, 0), 0), r.chunk(2, 1)[0]  # fresh, equal to r; a view of r


def _found_equal(x):
    r = torch.relu(x)
    return r, r, r.chunk(2, 1)[0]  # what extraction makes of it: output 1 *is* output 0


def _traced(f, x):
    gm = torch.fx.symbolic_trace(f)
    compat.propagate_fake(gm, [x])
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
    output 1 does not make it a view of the copy. Output 0 is not alone in eager (output 3 is a
    view of it), so it cannot be the one copied: refused, never weakened."""
    def eager(x):
        r = torch.relu(x)
        a = r * 1
        return r, a, a[0], r[1]

    def ours(x):
        r = torch.relu(x)
        return r, r, r[0], r[1]

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


def _eager_piece(x):
    p = torch.sigmoid(x)[1:3]
    return torch.cat([p]), p, p[0]  # fresh, alone; a view of sigmoid's buffer; a view of output 1


def _piece_found_equal(x):
    p = torch.sigmoid(x)[1:3]
    return p, p, p[0]  # cat([p]) → p: all three share one storage


def test_the_output_alone_in_eager_gets_the_copy_not_the_first_of_a_view_chain():
    """Window 0 of the 15k graph, next refusal: ``output 174 would alias output 32 where eager's
    aliases output 61``. Output 0 here is fresh in eager and alone; copying output 1 instead (the
    first that seemed to alias) left output 2 a view of output 0 rather than of output 1."""
    x = torch.randn(4, 6)
    repair = match_aliasing(alias_signature(_traced(_eager_piece, x), "val"), new := _traced(_piece_found_equal, x),
                            "torch")  # raised "output 2 would alias output 0 where eager's aliases output 1" before
    assert (repair.copies, repair.views) == (1, 0)
    outs, want = new(x), _eager_piece(x)
    torch.testing.assert_close(outs, want)
    assert real_signature([x], list(outs)) == real_signature([x], list(want))


def test_the_window_case_through_optimize():
    x = torch.randn(4, 6)
    new, report = optimize(_traced(_eager_piece, x), [x], {"always_raise": True})
    assert not any("would alias" in n for n in report.notes), report.notes
    outs, want = new(x), _eager_piece(x)
    torch.testing.assert_close(outs, want)
    assert real_signature([x], list(outs)) == real_signature([x], list(want))
