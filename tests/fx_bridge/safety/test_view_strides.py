"""Soak seed 3001276: in an Aten graph the check compared no strides (Inductor gives a user's output the
original's strides), but Inductor keeps only the stride ORDER of an output it computes as a view of
another buffer. The post-grad pass moved ``neg`` below a slice (``neg(x)[1:2]`` → ``neg(x[1:2])``), and
a split piece of it, an output, had stride 3 where eager's is 9: the check now refuses that."""
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from bench.soak.check import run_case
from eqsat_torch.safety import equivalence
from eqsat_torch.safety.context import Context


def _x():
    return torch.arange(36).reshape(4, 3, 3).transpose(0, 1)  # (3, 4, 3), strides (3, 9, 1), as the soak's


def _aten(fn):
    return make_fx(fn, tracing_mode="fake")(_x())


def _difference(original, rewritten):
    return equivalence.difference(_aten(original), _aten(rewritten), [_x()], Context.capture().for_aten(),
                                  layouts=False)  # an Aten graph's check


def test_a_view_output_with_other_strides_is_refused():
    problem = _difference(lambda x: (-x)[1:2].split([2, 1], 2)[1], lambda x: (-x[1:2]).split([2, 1], 2)[1])
    assert problem == ("validation: strides of output 0 (a view: Inductor keeps its strides only in order): "
                       "(3, 3, 1) != (3, 9, 1)"), problem


def test_a_fresh_output_with_other_strides_passes():
    """Strides (12, 3, 1) where the original's are (3, 9, 1), but Inductor gives a fresh output the
    original's strides, exactly: no difference a user sees."""
    assert (-_x().contiguous()).stride() != (-_x()).stride()
    assert _difference(lambda x: -x, lambda x: -x.contiguous()) is None


def test_soak_seed_3001276_keeps_eagers_strides():
    """The check refused the program then; the split piece, an output viewing ``neg(x)``, is now
    pinned (``view_outputs_pinned``), so no such program is proposed."""
    result = run_case(3001276, train=False)
    assert result["problems"] == [], result["problems"]
    assert not any("validation mismatch" in f for f in result["fallbacks"]), result
