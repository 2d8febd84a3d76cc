"""Adding an op is one registry row: a new pointwise op lowers, rewrites, raises and prices."""
import math

import pytest
import torch

from analysed import analysed
from eqsat import ops
from eqsat.cost import CostModel
from eqsat.terms import Term
from eqsat_torch import optimize
from eqsat_torch.lowering.lower import lower
from eqsat_torch.lowering.targets import aten_name

SINH = ops.pointwise_rows("Unary", "sinh", ops.Dtype.FLOAT)  # the one row


def split_sinh_cat(x):
    a, b, c = torch.split(x, 2, dim=1)
    return torch.cat([torch.sinh(a), torch.sinh(b), torch.sinh(c)], dim=1)


@pytest.fixture
def sinh():
    assert ops.pointwise_arity("sinh") is None, "sinh became a built-in op: pick another for this test"
    ops.register(*SINH)
    yield
    ops.unregister("sinh")


def _ctors(gm, x):
    return [t.ctor for t in lower(gm, [x]).originals.values()]


def test_without_the_row_sinh_is_opaque():
    x = torch.randn(4, 6)
    assert "Opaque" in _ctors(torch.fx.symbolic_trace(split_sinh_cat), x)
    assert aten_name(torch.ops.aten.sinh.default) is None


def test_lowers_in_torch_and_aten_ir(sinh):
    x = torch.randn(4, 6)
    low = lower(torch.fx.symbolic_trace(split_sinh_cat), [x])
    assert "Opaque" not in [t.ctor for t in low.originals.values()]
    assert [t.args[0] for t in low.originals.values() if t.ctor == "Unary"] == ["sinh"] * 3
    assert aten_name(torch.ops.aten.sinh.default) == "sinh"


def test_rewrites_raises_and_prices_like_a_builtin(sinh):
    x = torch.randn(4, 6, dtype=torch.float64)
    gm = torch.fx.symbolic_trace(split_sinh_cat)
    new, report = optimize(gm, [x], {"horizontal": False})
    torch.testing.assert_close(new(x), split_sinh_cat(x))
    assert report.rules_used.get("cat_unary") and report.changed  # the generic pointwise rule
    assert report.cost_after < report.cost_before and report.kernels_after == 1
    targets = [n.target for n in new.graph.nodes if n.op in ("call_function", "call_method")]
    assert targets == [torch.sinh]  # raised as the torch function, once, on the whole input


def test_the_rows_dtype_prices_a_term_rules_create(sinh):
    """A sinh the rules create gets its dtype from the row (``Dtype.FLOAT``): float64 bytes, not the
    float32 the cost model assumes for a tensor of unknown dtype."""
    view, classes = analysed(y=lambda x: Term("Unary", ("sinh", x)))  # no facts: the analysis derives them
    y = classes["y"]
    assert view.shape[y] == (8, 16) and view.dtype[y] == "float64"
    node = next(view.nodes[n] for n in view.classes[y])
    model = CostModel()
    assert node.ctor == "Unary" and ops.CTOR_CATEGORY[node.ctor] is ops.Category.POINTWISE
    assert model.node_cost(node, view) == pytest.approx(0.25 * model.alpha + 0.5 * model.beta * 8 * 16 * 8)
    assert not math.isclose(model.node_cost(node, view), 0.25 * model.alpha + 0.5 * model.beta * 8 * 16 * 4)


# -- a reduction and an op with its own constructor, registered at runtime: one row each ----------------
NANSUM = ops.reduction("nansum", "nansum.default", ("nansum.default",))
OUTER = ops.Op("outer", "Outer", ops.Category.POINTWISE, (ops.TENSOR, ops.TENSOR), dsl="outer", dtype=ops.Dtype.SAME,
               torch="torch.outer", aten="outer.default", aten_spellings=("outer.default",),
               call=(ops.Arg("input"), ops.Arg("vec2")), shape=lambda k, a, b: k.vec(a.shape[0], b.shape[0]),
               slices=lambda k, a, b, d: [("", [d == 0], d)], concat=True)


@pytest.fixture
def nansum_and_outer():
    assert "nansum" not in ops.BY_NAME and "outer" not in ops.BY_NAME, "now built in: pick others for this test"
    ops.register(NANSUM, OUTER)
    yield
    ops.unregister("nansum", "outer")


def nansum_rows(x):
    return torch.nansum(x, dim=1, keepdim=True)[:2]


def outer_cat(a, b, v):
    return torch.cat([torch.outer(a, v), torch.outer(b, v)], 0).sum(1)


def _opaque(fn, *xs):
    return "Opaque" in [t.ctor for t in lower(torch.fx.symbolic_trace(fn), list(xs)).originals.values()]


def test_without_their_rows_nansum_and_outer_are_opaque():
    x, v = torch.randn(4, 6), torch.randn(3)
    assert _opaque(nansum_rows, x) and _opaque(outer_cat, v, v, v)


def test_registered_rows_lower_rewrite_raise_check_and_price(nansum_and_outer):
    import eqsat_rules
    from eqsat_rules.dsl import builder, cat, each, ints, tensor, tlist

    x = torch.randn(4, 6).masked_fill(torch.rand(4, 6) < 0.3, float("nan"))
    new, report = optimize(torch.fx.symbolic_trace(nansum_rows), [x], {"horizontal": False})
    torch.testing.assert_close(new(x), nansum_rows(x))
    assert report.rules_used.get("narrow_reduce_keepdim") and report.cost_after < report.cost_before
    assert torch.nansum in [n.target for n in new.graph.nodes]

    a, b, v = torch.randn(2), torch.randn(3), torch.randn(5)
    assert not _opaque(outer_cat, a, b, v)
    new, report = optimize(torch.fx.symbolic_trace(outer_cat), [a, b, v], {"horizontal": False})
    torch.testing.assert_close(new(a, b, v), outer_cat(a, b, v))
    assert report.rules_used.get("cat_outer") and report.kernels_after < report.kernels_before, report.summary()
    assert [n.target for n in new.graph.nodes if n.op == "call_function"][:2] == [torch.cat, torch.outer]

    outer, (p, w), d, xs = builder("outer"), tensor("p w"), ints("d"), tlist("xs")
    assert eqsat_rules.check(eqsat_rules.dsl.rewrite("cat_outer_1", cat(each(lambda q: outer(q, w), xs), d),
                                         outer(cat(xs, d), w), [d == 0])).ok
    assert not eqsat_rules.check(eqsat_rules.dsl.rewrite("cat_outer_any_dim", cat(each(lambda q: outer(q, w), xs), d),
                                             outer(cat(xs, d), w))).ok
