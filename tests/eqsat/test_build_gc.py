"""``driver.build`` runs with the cyclic garbage collector paused (``eqsat.gcpause``): its steps make
tens of thousands of small acyclic objects, and the collections they started swept the whole heap
(pricing the 4,096-piece graph's input: 0.79–0.94 → 0.38–0.40 CPU s)."""
import gc
import sys
from pathlib import Path

from eqsat.cost import CostModel
from eqsat.driver import Problem, build
from eqsat_rules.library import select, shape_rules

sys.path.insert(0, str(Path(__file__).parents[1] / "eqsat"))
from eqsat_graphs import Program  # noqa: E402


def test_build_runs_no_garbage_collection_and_restores_the_collector():
    p = Program()
    x = p.input((4, 16))
    out = p.cat([p.unary("sigmoid", q) for q in p.split(x, [1] * 16, 1)], 1)
    problem = Problem(p.program, p.originals, [out])
    rules, analysis, cost = select(), shape_rules(), CostModel.for_device("cpu")
    started = []

    def count(phase, info):
        started.append(phase == "start")

    threshold = gc.get_threshold()
    gc.set_threshold(5)  # a collection every few container allocations, unless paused
    try:
        gc.callbacks.append(count)
        paused = build(problem, rules, cost, analysis)
        gc.callbacks.remove(count)
        assert gc.isenabled()  # the caller's setting is restored
    finally:
        gc.set_threshold(*threshold)
        if count in gc.callbacks:
            gc.callbacks.remove(count)
    assert sum(started) <= 8  # entering and leaving the pause allocate a few objects
    assert paused.session.size() > 16 and paused.before.kernels >= 1  # built and priced
