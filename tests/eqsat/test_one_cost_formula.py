"""``node_cost`` and ``program_cost`` are one formula (``CostModel.kernel_price``) seen two ways: on a
program where nothing fuses (every kernel an extern matmul), the sum of the chosen nodes' costs is the
whole program's cost, under every configuration of the model."""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eqsat.cost as cost
from eqsat.cost import CostModel
from eqsat.ops import Category, Ctor
from eqsat.terms import Ref, Term
from eqsat_graphs import Program, input_choice, roots_of, view_of

MODELS = [CostModel(), CostModel.for_device("cpu"), CostModel.for_device("cuda"),
          CostModel.for_device("cuda", combo_kernels=True), CostModel.for_device("cpu", train_step=True),
          CostModel.for_device("cuda", train_step=True, frozen_params=True)]
SIZES = st.sampled_from([2, 3, 8, 16, 48])  # K ≥ 2: no matmul is an outer product (a pointwise op)


@st.composite
def matmul_programs(draw):
    """Chains and trees of mm / addmm / linear over inputs and fresh parameters (no operand twice in one
    call, so a call reads each buffer once); the roots are the products nobody reads."""
    p = Program()
    pool = [p.input((draw(SIZES), draw(SIZES))) for _ in range(draw(st.integers(1, 3)))]
    read: set[str] = set()
    for _ in range(draw(st.integers(1, 6))):
        a = draw(st.sampled_from(pool))
        m, k = p.shapes[a]
        n = draw(SIZES)
        kind = draw(st.sampled_from([Ctor.MM, Ctor.ADDMM, Ctor.LINEAR]))
        if kind == Ctor.MM:
            y = p.let(Term(Ctor.MM, (Ref(a), Ref(p.param((k, n))))), (m, n))
        elif kind == Ctor.ADDMM:
            y = p.let(Term(Ctor.ADDMM, (Ref(p.param((n,))), Ref(a), Ref(p.param((k, n))))), (m, n))
        else:
            y = p.linear(a, p.param((n, k)), p.param((n,)))
        read.add(a)
        pool.append(y)
    products = [v for v in pool if v not in read and p.originals[v].ctor != Ctor.INPUT]
    return p, products


def _both_sides(p: Program, outs: list[str], model: CostModel) -> tuple[float, float]:
    view = view_of(p)
    roots = roots_of(view, outs)
    choice = input_choice(view, roots)
    total = model.program_cost(view, choice, roots)
    nodes = sum(model.node_cost(view.nodes[choice[c]], view) for c in choice)
    return nodes, total.cost


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(matmul_programs(), st.sampled_from(MODELS))
def test_node_costs_sum_to_the_program_cost_where_nothing_fuses(program, model):
    p, outs = program
    nodes, total = _both_sides(p, outs, model)
    assert nodes == pytest.approx(total, rel=1e-12)


def _two_matmuls() -> tuple[Program, list[str]]:
    p = Program()
    x = p.input((8, 16))
    h = p.let(Term(Ctor.MM, (Ref(x), Ref(p.param((16, 48))))), (8, 48))
    return p, [p.linear(h, p.param((3, 48)), p.param((3,)))]


def test_the_relation_fails_when_the_node_side_is_changed(monkeypatch):
    p, outs = _two_matmuls()
    nodes, total = _both_sides(p, outs, CostModel())
    assert nodes == pytest.approx(total, rel=1e-12)
    monkeypatch.setitem(cost.WRITE_SHARE, Category.MATMUL, 0.5)  # a matmul's output half-priced per node
    nodes, total = _both_sides(p, outs, CostModel())
    assert nodes != pytest.approx(total, rel=1e-12)


def test_the_relation_fails_when_the_program_side_is_changed(monkeypatch):
    p, outs = _two_matmuls()
    monkeypatch.setattr(cost, "launches", lambda group: 2)  # every group priced as a split reduction
    nodes, total = _both_sides(p, outs, CostModel())
    assert nodes != pytest.approx(total, rel=1e-12)
