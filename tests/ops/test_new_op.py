"""Adding an op is one registry row: a new pointwise op lowers, rewrites, raises and prices."""
import math

import pytest
import torch

from eqsat import ops
from eqsat.cost import CostModel
from eqsat.egraph import Budget, Session
from eqsat.serialized import parse
from eqsat.terms import Program, Ref, Term
from fx_bridge import optimize
from fx_bridge.lower import lower
from fx_bridge.targets import aten_name
from rules.library import shape_rules

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
    p = Program()
    x = p.let("$x", Term("Input", ("x",)))
    p.set_shape(x, (8, 16))
    p.set_dtype(x, "float64")
    s = Session([], shape_rules())
    s.load(p)
    s.let("$y", Term("Unary", ("sinh", x)))  # no facts: the analysis derives them
    s.saturate(Budget(iterations=0))
    view = parse(s.serialize())
    y = view.lets["$y"]
    assert view.shape[y] == (8, 16) and view.dtype[y] == "float64"
    node = next(view.nodes[n] for n in view.classes[y])
    model = CostModel()
    assert node.ctor == "Unary" and ops.CTOR_CATEGORY[node.ctor] is ops.Category.POINTWISE
    assert model.node_cost(node, view) == pytest.approx(0.25 * model.alpha + 0.5 * model.beta * 8 * 16 * 8)
    assert not math.isclose(model.node_cost(node, view), 0.25 * model.alpha + 0.5 * model.beta * 8 * 16 * 4)
