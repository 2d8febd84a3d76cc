"""Outputs Inductor would write into a mutated input (eqsat_torch.safety.reinplaced_outputs)."""
import copy

import pytest
import torch

from eqsat_torch import eqsat_backend
from eqsat_torch.lowering.lower import Unsupported
from eqsat_torch.safety.reinplaced_outputs import refuse_reinplaced_outputs


def _snapshot_between_writes(x):
    """Soak seed 4000778's shape: a copy of ``x`` taken between two in-place writes to it."""
    a, b = x.split(3, 1)
    b.copy_(b.sigmoid())
    out = torch.cat([a, b], 1)
    b[2:].mul_(-1)
    return out


def _functional(f):
    from torch._functorch.aot_autograd import aot_function  # the graph Inductor's post-grad passes see

    graphs = []

    def keep(gm, _):
        graphs.append(gm.graph)
        return gm

    with torch.no_grad():
        aot_function(f, keep, keep_inference_input_mutations=True)(torch.randn(8, 4, 1))
    return graphs[0]


def _cat_folded(graph: torch.fx.Graph) -> torch.fx.Graph:
    """``graph`` with ``cat(split(v))`` replaced by ``v``, as the rule ``cat_split_all`` rewrites it."""
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    new = copy.deepcopy(gm).graph
    cat = next(n for n in new.nodes if n.target is torch.ops.aten.cat.default)
    piece = cat.args[0][0]           # getitem(split(v), 0)
    cat.replace_all_uses_with(piece.args[0].args[0])
    new.erase_node(cat)
    return new


def test_a_program_returning_a_version_of_a_mutated_input_is_refused():
    before = _functional(_snapshot_between_writes)
    with pytest.raises(Unsupported, match="output 0 would be input"):
        refuse_reinplaced_outputs(before, _cat_folded(before))


def test_the_input_program_is_no_reason_to_refuse():
    g = _functional(_snapshot_between_writes)
    refuse_reinplaced_outputs(g, g)


def test_soak_seed_4000778_returns_a_fresh_snapshot(uncached_inductor):
    """Through Inductor (CPU): the post-grad pass folds ``cat(split(v))`` to ``v``, a version of the
    mutated input that Inductor's reinplacing writes into it; the program is refused, and the output
    is eager's fresh snapshot, not the input holding its final value."""
    backend = eqsat_backend()
    x, y = torch.randn(8, 4, 1), None
    y = x.clone()
    got = torch.compile(_snapshot_between_writes, backend=backend)(x)
    want = _snapshot_between_writes(y)
    assert got.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(x, y)
    assert any("reinplacing" in (r.skipped or "") for r in backend.post_grad_reports), \
        [r.skipped for r in backend.post_grad_reports]
