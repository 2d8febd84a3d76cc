"""``eqsat.driver.optimize``: the engine in one torch-free call, its decisions taken on counted work."""

from eqsat.budget import Budget
from eqsat.cost import CostModel
from eqsat.deadline import Deadline
from eqsat.driver import Problem, optimize
from eqsat_graphs import Program
from rules.library import select, shape_rules

GPU = CostModel.for_device("cuda")  # Triton: a kernel per piece as written



def _split_sigmoid_cat(pieces: int = 8):
    """sigmoid(cat(split(x))) + cat(sigmoid(pieces of x)): both are sigmoid(x) (cat_split_all)."""
    p = Program()
    x = p.input((4, pieces))
    glued = p.cat(p.split(x, [1] * pieces, 1), 1)
    out = p.binary("add", p.unary("sigmoid", glued), p.cat([p.unary("sigmoid", q) for q in p.split(x, [2] * (pieces // 2), 1)], 1))
    return Problem(p.program, p.originals, [out])


def test_the_driver_builds_saturates_and_extracts_in_one_call():
    problem = _split_sigmoid_cat()
    res = optimize(problem, select(), GPU, Budget(), shape_rules())
    x = res.extracted.extraction
    assert res.saturation.fired["cat_split_all"] >= 1, res.saturation.fired
    assert len(x.choice) == 3 and x.cost <= x.before.cost, x  # sigmoid(x) + sigmoid(x), one class each
    assert res.saturation.stop_reason == "saturated"
    assert set(res.seconds) == {"build", "saturate", "extract"}


def test_work_limits_decide_not_the_clock():
    """One iteration and no search: the program is what that much work finds, whatever the clock."""
    small = Budget(iterations=1, search_steps=0, ilp_columns=0)
    first = optimize(_split_sigmoid_cat(), select(), GPU, small, shape_rules())
    assert first.saturation.stop_reason == "iteration budget"
    assert first.extracted.extraction.ilp_status == "not run"
    again = optimize(_split_sigmoid_cat(), select(), GPU, small, shape_rules(), Deadline(1e6))
    assert again.extracted.extraction.cost == first.extracted.extraction.cost
    assert len(again.saturation.sizes) == len(first.saturation.sizes) == 2
