"""The hill climbs on a large program (``eqsat.extract._Climb``, more than ``LOCAL_CLASSES`` classes)
price each swap on its neighbourhood and the whole program once a pass (issue 30: pricing a
4,000-class window whole for every swap took 43 s of extraction for 72 swaps). Here the threshold is
lowered so a small model takes that path."""
import sys
from pathlib import Path

import eqsat.extract as extract
from eqsat.extract import reachable

sys.path.insert(0, str(Path(__file__).parent))
from test_fusion_search import _mlp, _saturated, assert_no_cheaper_single_swap  # noqa: E402


def test_a_local_climb_ends_on_a_local_optimum_of_the_whole_price(monkeypatch):
    monkeypatch.setattr(extract, "LOCAL_CLASSES", 0)
    model, x = _mlp()
    ex, cost = _saturated(model, x)
    assert not ex.extraction.search_cut
    view, roots, choice = ex.view, ex.input.roots, ex.extraction.choice
    assert ex.extraction.extractor == "local"
    assert ex.extraction.after.kernels < ex.extraction.before.kernels
    best = cost.program_cost(view, choice, roots).cost
    assert abs(best - ex.extraction.after.cost) <= 1e-9 * best
    assert_no_cheaper_single_swap(view, roots, choice, cost, best)


def test_a_local_climb_gives_the_whole_climbs_program_on_a_small_model(monkeypatch):
    model, x = _mlp()
    whole, _ = _saturated(model, x)
    monkeypatch.setattr(extract, "LOCAL_CLASSES", 0)
    local, _ = _saturated(model, x)
    assert local.extraction.after.cost <= whole.extraction.after.cost * (1 + 1e-9)


def test_a_pass_the_whole_price_does_not_confirm_is_undone(monkeypatch):
    """Neighbourhoods that price every swap as a gain (a model they cannot see) lead the climb astray;
    the whole price at the end of the pass undoes it: the climb never returns a program dearer than
    the one it started from (fails without ``end_pass``'s undo)."""
    monkeypatch.setattr(extract, "LOCAL_CLASSES", 0)
    real_price, real_search = extract._Climb._price_region, extract.fusion_search
    calls, searches = [], []

    def flattering(self, region, node_of, removed):
        calls.append(removed)
        price = real_price(self, region, node_of, removed)
        return price if len(calls) % 2 else price - 1e6  # every trial (the second call) a gain

    def search(view, roots, model, start, start_cost, *args, **kw):
        found, cut = real_search(view, roots, model, start, start_cost, *args, **kw)
        searches.append((start_cost, found and model.program_cost(view, found, roots).cost))
        return found, cut
    monkeypatch.setattr(extract._Climb, "_price_region", flattering)
    monkeypatch.setattr(extract, "fusion_search", search)
    model, x = _mlp()
    _saturated(model, x)
    assert calls and searches
    for start_cost, found_cost in searches:
        assert found_cost is None or found_cost < start_cost, searches


def test_a_kept_swap_updates_the_program_as_a_walk_from_the_roots_would(monkeypatch):
    """``_Climb._apply`` changes only what the swap touches: the result is the reachable program, every
    operand sits before its reader in the positions the cycle check prunes with, readers are exact."""
    monkeypatch.setattr(extract, "LOCAL_CLASSES", 0)
    real = extract._Climb._apply
    applied = []

    def checked(self, cls, nid, added, removed):
        trial = {**{c: n for c, n in self.best.items() if c not in removed}, **added, cls: nid}
        real(self, cls, nid, added, removed)
        assert self.best == reachable(self.view, self.roots, trial)
        for c, n in self.best.items():
            for k in self.view.nodes[n].children:
                assert self.pos[k] < self.pos[c] and c in self.readers[k], (k, c)
        applied.append(cls)
    monkeypatch.setattr(extract._Climb, "_apply", checked)
    model, x = _mlp()
    _saturated(model, x)
    assert applied
