"""Property: over random programs and random rewrites, extraction is never costlier than the input."""
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import eqsat_rules.library as library
from eqsat.cost import CostModel
from eqsat.extract import extract, is_acyclic, is_complete
from eqsat_graphs import Program, input_choice, input_in, roots_of, union, view_of
from eqsat_rules.dsl import cat, ints, ivec, relu, rewrite, split, tensor

_x, _a, _b, _s, _d = tensor("x"), tensor("a"), tensor("b"), ivec("s"), ints("d")
EXTRA_RULES = [r.compile() for r in (
    rewrite("relu_idem", relu(relu(_x)), relu(_x), family="algebra", doc="relu(relu(x)) = relu(x)"),
    rewrite("cat_of_split", cat([split(_x, _s, _d)[0], split(_x, _s, _d)[1]], _d), _x, [_s.len() == 2],
            family="algebra", doc="cat(split(x, [a, b], d), d) = x"),
    rewrite("relu_of_cat", relu(cat([_a, _b], _d)), cat([relu(_a), relu(_b)], _d), family="algebra",
            doc="relu(cat(a, b)) = cat(relu(a), relu(b))"),
)]
RULES = library.select() + EXTRA_RULES

step = st.tuples(st.sampled_from(["relu", "exp", "add", "linear", "split_cat", "sum", "cat"]),
                 st.integers(0, 10), st.integers(0, 10))


def random_program(steps):
    """Tensors of one shape so every op applies; linears that share an input get a fused union."""
    p = Program()
    vals = [p.input((32, 64)), p.input((32, 64))]
    unions, lin_by_input = [], {}
    for op, i, j in steps:
        a, b = vals[i % len(vals)], vals[j % len(vals)]
        if op in ("relu", "exp"):
            vals.append(p.unary(op, a))
        elif op == "add":
            vals.append(p.binary("add", a, b))
        elif op == "linear":
            w, bias = p.param((64, 64)), p.param((64,))
            vals.append(p.linear(a, w, bias))
            lin_by_input.setdefault(a, []).append((vals[-1], w, bias))
        elif op == "split_cat":
            vals.append(p.cat(p.split(a, [16, 48], 1), 1))
        elif op == "sum":
            vals.append(p.binary("add", a, p.sum(a, 1)))
            p.shapes[vals[-1]] = (32, 64)
        else:
            halves = p.split(p.cat([a, b], 1), [64, 64], 1)
            vals.append(p.unary("relu", halves[0]))
    for x, lins in lin_by_input.items():
        if len(lins) >= 2:
            (l1, w1, b1), (l2, w2, b2) = lins[:2]
            fused = p.linear(x, p.cat([w1, w2], 0), p.cat([b1, b2], 0))
            g1, g2 = p.split(fused, [64, 64], 1)
            unions += [union(l1, g1), union(l2, g2)]
    return p, vals[2:] or vals, unions


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(step, min_size=1, max_size=12),
       rule_mask=st.lists(st.booleans(), min_size=len(RULES), max_size=len(RULES)),
       frozen=st.booleans(), beta=st.sampled_from([1e-6, 1e-4, 1e-2]))
# Found in CI: relu_idem unions relu(relu(x)) with relu(x), so the input, read in the saturated e-graph,
# shares classes it did not share and prices 15.08 there against 10.07 as written; a swap then finds
# 10.074, cheaper than the first price and dearer than the second. The pipeline keeps the input.
@example(steps=[("linear", 0, 0), ("cat", 0, 2), ("cat", 3, 3)],
         rule_mask=[r.name in ("split_unary", "cat_unary", "relu_idem") for r in RULES], frozen=False, beta=1e-6)
def test_extraction_never_costlier_than_input(steps, rule_mask, frozen, beta):
    p, outs, unions = random_program(steps)
    outs = outs[-3:]
    model = CostModel(alpha=5.0, beta=beta, frozen_params=frozen)
    before = view_of(p)
    original = input_choice(before, roots_of(before, outs))
    written = model.program_cost(before, original, roots_of(before, outs))
    rules = [r for r, on in zip(RULES, rule_mask) if on]
    view = view_of(p, rules, unions)
    roots = roots_of(view, outs)
    # as the pipeline calls it: the cost to beat is the input's price before any rule ran
    res = extract(view, roots, model, time_limit=2.0, original=input_in(view, p, outs), before=written)
    assert is_acyclic(view, roots, res.choice) and is_complete(view, roots, res.choice)
    assert res.cost == model.program_cost(view, res.choice, roots).cost
    assert not res.improved or res.cost < written.cost  # what the pipeline keeps is never dearer
    if "input" in res.candidates:  # the input is expressible in the saturated e-graph
        assert res.cost <= res.candidates["input"]
        assert res.extractor == "input" or res.cost < res.candidates["input"]  # ties keep the input
