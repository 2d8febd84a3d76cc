"""A session reuses an e-graph with its rules already loaded (``eqsat.egraph._Pool``): it starts exactly
where a freshly loaded one does, whatever the session before it left behind, and the e-graph of a
session still alive is never handed to another."""
import gc
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "rules"))

from egraph_case import Case, pieces, tl, vec  # noqa: E402
from eqsat.egraph import Budget, Session, _LOADED  # noqa: E402
from eqsat.terms import Term  # noqa: E402

CAT_OF_SPLIT = f"(Cat {tl(*pieces(f'(Split $x {vec(2, 2, 2)} 1)', 3))} 1)"
STALE = f"(Cat {tl('$x', '$x')} 0)"


def _sizes_after_saturating() -> list[int]:
    g = Case().let("t", CAT_OF_SPLIT)
    return g.s.saturate(Budget(iterations=4, nodes=100_000, seconds=60)).sizes


def test_a_reused_egraph_starts_as_a_fresh_one():
    _LOADED.kept.clear()
    fresh = Case()
    first = fresh.s._eg
    rows = fresh.s.size()
    fresh.let("t", CAT_OF_SPLIT).run()
    assert fresh.same("$t", "$x")
    fresh.s._run("(push)")       # snapshots a session took and never popped (an error mid-iteration)
    fresh.s._run("(push)")
    fresh.s._command(f"(let $stale {STALE})")
    assert fresh.same(STALE, STALE)
    del fresh
    gc.collect()

    again = Case()
    assert again.s._eg is first            # reused, not loaded again
    assert again.s.size() == rows == Case().s.size()  # its inputs only, as a freshly loaded one
    assert not again.same(STALE, STALE) and not again.same(CAT_OF_SPLIT, CAT_OF_SPLIT)  # none of its terms
    assert again.let("stale", "$x").same("$stale", "$x")  # the name is free again
    del again
    gc.collect()
    assert _sizes_after_saturating() == _sizes_after_saturating()  # the second run on the reused e-graph


def test_a_live_sessions_egraph_is_not_handed_to_another():
    _LOADED.kept.clear()
    a = Case().let("t", CAT_OF_SPLIT)
    size = a.s.size()
    b = Case()
    assert b.s._eg is not a.s._eg
    b.let("u", STALE).run()
    assert a.s.size() == size and not a.same(STALE, STALE) and a.run().same(CAT_OF_SPLIT, "$x")


def test_a_rewind_that_does_not_restore_the_rules_only_state_loads_afresh():
    _LOADED.kept.clear()
    s = Session([], [])
    eg = s._eg
    s.let("$y", Term("Input", ("y",)))
    s._loaded.depth -= 1          # the count says one snapshot fewer than the session took
    s._run("(push)")
    del s
    gc.collect()
    t = Session([], [])
    assert t._eg is not eg and t.size() == Session([], []).size()



_IN_A_THREAD_THEN_EXIT = """
import sys, threading
sys.path.insert(0, {rules!r})
from egraph_case import Case
done, hold = threading.Event(), threading.Event()
def work():
    Case().let("t", {term!r}).run()
    done.set(); hold.wait()   # the thread outlives the main one, as CUDA's autograd thread does
threading.Thread(target=work, daemon=True).start()
done.wait()
print("ran")
"""


def test_a_session_on_another_thread_leaves_nothing_the_main_thread_drops_at_exit():
    """CUDA runs backward on an autograd thread, where AOT compiles the backward graph: an e-graph
    kept for reuse there was dropped by the main thread at exit, and egglog printed "EGraph is
    unsendable, but is being dropped on another thread" after the training step of issue 30's model."""
    import subprocess

    code = _IN_A_THREAD_THEN_EXIT.format(rules=str(Path(__file__).parents[1] / "rules"), term=CAT_OF_SPLIT)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).parents[2])
    assert done.returncode == 0 and "ran" in done.stdout, done.stderr[-2000:]
    assert "unsendable" not in done.stderr, done.stderr[-2000:]
