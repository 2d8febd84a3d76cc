"""DAG-aware extraction: shared classes paid once, cycles broken, deep graphs without recursion."""
import sys

from eqsat.budget import Budget
from eqsat.cost import CostModel
from eqsat.extract import bottom_up, extract, is_acyclic, is_complete
from eqsat_graphs import Program, input_choice, input_in, roots_of, union, view_of

FROZEN = CostModel(frozen_params=True)


def two_linears_with_fused_form():
    """relu(x@w1+b1), relu(x@w2+b2), each linear unioned with a piece of one fused linear."""
    p = Program()
    x = p.input((512, 256))
    w1, w2, b1, b2 = p.param((256, 256)), p.param((256, 256)), p.param((256,)), p.param((256,))
    l1, l2 = p.linear(x, w1, b1), p.linear(x, w2, b2)
    outs = [p.unary("relu", l1), p.unary("relu", l2)]
    fused = p.linear(x, p.cat([w1, w2], 0), p.cat([b1, b2], 0))
    g1, g2 = p.split(fused, [256, 256], 1)
    return p, outs, [union(l1, g1), union(l2, g2)]


def test_fused_linear_wins_under_dag_cost_but_not_tree_cost():
    p, outs, unions = two_linears_with_fused_form()
    view = view_of(p, extra=unions)
    roots = roots_of(view, outs)
    tree = bottom_up(view, roots, FROZEN.node_cost)
    assert sum(view.nodes[n].ctor == "Linear" for n in tree.values()) == 2
    res = extract(view, roots, FROZEN)
    linears = [view.nodes[n] for n in res.choice.values() if view.nodes[n].ctor == "Linear"]
    assert res.extractor == "ilp" and res.ilp_status == "optimal"
    assert len(linears) == 1 and res.after.extern == 1
    assert res.cost < FROZEN.program_cost(view, tree, roots).cost
    assert is_acyclic(view, roots, res.choice) and is_complete(view, roots, res.choice)


def test_input_program_is_kept_when_nothing_is_cheaper():
    p, outs, unions = two_linears_with_fused_form()
    before = view_of(p)
    original = input_choice(before, roots_of(before, outs))
    view = view_of(p, extra=unions)
    roots = roots_of(view, outs)
    training = CostModel(alpha=1.0, beta=1e-3)  # weight cats are runtime copies: fusing does not pay
    res = extract(view, roots, training, original=input_in(view, p, outs))
    assert res.extractor == "input" and not res.improved
    assert res.cost == training.program_cost(before, original, roots_of(before, outs)).cost


def test_cycles_in_the_egraph_are_broken():
    p = Program()
    x = p.input((64, 64))
    a = p.unary("relu", x)
    b = p.unary("neg", a)
    c = p.unary("neg", b)
    out = p.unary("exp", a)
    view = view_of(p, extra=[union(c, a)])  # a = neg(neg(a)): a two-class cycle
    roots = roots_of(view, [out])
    res = extract(view, roots, CostModel())
    assert is_acyclic(view, roots, res.choice) and is_complete(view, roots, res.choice)
    assert sorted(view.nodes[n].ctor for n in res.choice.values()) == ["Input", "Unary", "Unary"]


def test_deep_residual_graph_has_no_recursion_or_overflow():
    p = Program()
    x = p.input((8, 16))
    for _ in range(2000):
        x = p.binary("add", x, p.unary("relu", x))
    view = view_of(p)
    roots = roots_of(view, [x])
    limit = sys.getrecursionlimit()
    res = extract(view, roots, CostModel(), time_limit=5.0)
    assert sys.getrecursionlimit() == limit
    assert len(res.choice) == 4001 and is_acyclic(view, roots, res.choice)
    assert res.cost < float("inf") and res.after.kernels == 1


def three_projections(rows: int = 64, width: int = 64):
    """q/k/v: three linears of one input, each unioned with its piece of one fused linear."""
    p = Program()
    x = p.input((rows, width))
    ws, bs = [p.param((width, width)) for _ in range(3)], [p.param((width,)) for _ in range(3)]
    lins = [p.linear(x, w, b) for w, b in zip(ws, bs)]
    outs = [p.unary("relu", y) for y in lins]
    fused = p.linear(x, p.cat(ws, 0), p.cat(bs, 0))
    pieces = p.split(fused, [width] * 3, 1)
    return p, outs, [union(y, g) for y, g in zip(lins, pieces)]


def test_training_step_price_counts_the_gradient_matmuls():
    """GPU model, forward only: two saved matmul launches pay for no more than the weight and bias
    cats; in a training step each linear also has two gradient matmuls, so the fused form pays (and
    its price is what program_cost says for the chosen program)."""
    p, outs, unions = three_projections()
    view = view_of(p, extra=unions)
    roots = roots_of(view, outs)
    forward = CostModel.for_device("cuda")
    assert extract(view, roots, forward, original=input_in(view, p, outs)).extractor == "input"
    step = CostModel.for_device("cuda", train_step=True)
    res = extract(view, roots, step, original=input_in(view, p, outs))
    assert res.improved and res.after.extern == 1, res
    assert res.cost == step.program_cost(view, res.choice, roots).cost


def test_an_ilp_wider_than_its_work_limit_is_not_started():
    """HiGHS overruns a time limit it cannot meet and returns nothing, so an ILP is started only up to
    ``Budget.ilp_columns`` columns: past it extraction keeps the bottom-up program and says so (with
    room the same ILP runs and wins)."""
    p, outs, unions = two_linears_with_fused_form()
    view = view_of(p, extra=unions)
    roots = roots_of(view, outs)
    res = extract(view, roots, FROZEN, budget=Budget(ilp_columns=1))
    assert res.ilp_status.startswith("skipped:") and "ilp" not in res.candidates
    assert res.cost <= FROZEN.program_cost(view, bottom_up(view, roots, FROZEN.node_cost), roots).cost
    assert extract(view, roots, FROZEN, budget=Budget(ilp_columns=10**6)).ilp_status == "optimal"
