"""``eqsat.driver.optimize``: the engine in one torch-free call, its decisions taken on counted work."""

from eqsat.budget import Budget
from eqsat.cost import CostModel
from eqsat.deadline import Deadline
from eqsat.driver import Problem, optimize
from eqsat_graphs import Program
from eqsat_rules.library import select, shape_rules

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


def test_candidate_sources_are_loaded_and_their_provenance_summed():
    """Two sources through ``Problem.candidates``: each program is loaded (its lets are in the e-graph,
    in the class of the let it is the same as), and the counts, fused forms and members are their sum."""
    from dataclasses import dataclass

    from eqsat.candidates import Candidates
    from eqsat.terms import Ref, Term

    p = Program()
    x = p.input((4, 8))
    a, b = p.unary("tanh", x), p.unary("sigmoid", x)
    out = p.binary("add", a, b)

    @dataclass
    class Same:  # offers ``member ≡ term`` under ``rule``
        let: str
        member: str
        term: Term
        rule: str

        def offer(self) -> Candidates:
            c = Candidates()
            c.program.same(Ref(self.member), c.program.let(self.let, self.term))
            c.inserted[self.let], c.counts[self.rule] = self.rule, 1
            c.members.append(self.member)
            return c

    sources = [Same("$c0", out, Term("Binary", ("add", Ref(b), Ref(a))), "one"),
               Same("$c1", a, Term("Unary", ("tanh", Ref(x))), "two")]
    res = optimize(Problem(p.program, p.originals, [out], candidates=sources), select(), GPU, Budget(), shape_rules())
    offered = res.built.offered
    assert offered.counts == {"one": 1, "two": 1} and offered.inserted == {"$c0": "one", "$c1": "two"}
    assert offered.members == [out, a]
    view = res.extracted.view
    assert view.lets["$c0"] == view.lets[out] and view.lets["$c1"] == view.lets[a]  # loaded, unioned
