"""What else an op's row says, read where it is needed: the defaults lowering leaves out of a key,
the Torch-IR aliases of its name, its batch rule, whether it tests floats for exact equality
(Inductor's workaround) and where the mender may speculate it. Each test adds or reads one row."""
import dataclasses

import pytest
import torch
import torch.nn.functional as F

from eqsat import ops
from eqsat.terms import Ref, Term
from eqsat_torch.inductor import workarounds
from eqsat_torch.lowering.lower import lower
from eqsat_torch.mend.facts import FLOAT, INT, Typing
from eqsat_torch.lowering.targets import function_name
from eqsat_rules.batch import BATCH_TABLE
from eqsat_rules.batch_groups import rows_of


def _keys(fn, x) -> list[str]:
    return [t.args[0] for t in lower(torch.fx.symbolic_trace(fn), [x]).originals.values() if t.ctor == "Unary"]


def test_an_attribute_at_its_rows_default_is_no_part_of_the_key():
    """``nn.LeakyReLU()`` and ``nn.Softplus()`` pass their defaults: one term with the plain call."""
    x = torch.randn(4, 6)
    assert _keys(lambda x: F.leaky_relu(x, 0.01), x) == ["leaky_relu"]
    assert _keys(lambda x: F.softplus(x, 1.0, 20.0), x) == ["softplus"]
    assert _keys(lambda x: F.leaky_relu(x, 0.2), x) != ["leaky_relu"]  # another value stays in the key
    low = lower(torch.fx.symbolic_trace(lambda x: torch.add(x, x, alpha=1.0)), [x])
    assert [t.args[0] for t in low.originals.values() if t.ctor == "Binary"] != ["add"]  # 1.0 is not alpha=1


@pytest.fixture
def acos():
    assert ops.pointwise_arity("acos") is None, "acos became a built-in op: pick another for this test"
    (row,) = ops.pointwise_rows("Unary", "acos", ops.Dtype.FLOAT)
    ops.register(dataclasses.replace(row, aliases=("arccos",), exact_tie=True))
    yield
    ops.unregister("acos")


def test_an_alias_on_the_row_names_the_op(acos):
    assert function_name(torch.arccos) == "acos"
    assert _keys(lambda x: x.arccos(), torch.rand(4, 6)) == ["acos"]


def test_built_in_aliases_read_as_before():
    assert ops.ALIASES["clip"] == "clamp" and ops.ALIASES["swapaxes"] == "transpose"
    assert function_name(torch.clip) == "clamp" and function_name(torch.concat) == "cat"


def test_an_exact_tie_on_the_row_turns_on_the_workaround(acos):
    def f(x):
        return torch.acos(x)

    gm = torch.fx.symbolic_trace(f)
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            n.meta["val"] = torch.empty(3, 4, dtype=torch.float16)
    assert workarounds.config_for(gm, {}) == {"emulate_precision_casts": True}
    ops.unregister("acos")
    ops.register(*ops.pointwise_rows("Unary", "acos", ops.Dtype.FLOAT))  # the same row without the tie
    assert workarounds.config_for(gm, {}) == {}


def test_a_pointwise_op_is_batched_by_its_rows_rule():
    x = Ref("x")
    named = {op.name: op.batch for op in ops.pointwise() if op.batch}
    assert named["tanh"] == "batch_tanh" and named["add"] == "batch_add"
    for name, rule in named.items():
        ctor = ops.BY_NAME[name].ctor
        term = Term(ctor, (name, x) if ctor == "Unary" else (name, x, x))
        assert [r.name for r in rows_of(term)] == [rule]
    assert [r.name for r in rows_of(Term("Unary", ("exp", x)))] == ["batch_unary"]
    assert [r.name for r in rows_of(Term("Unary", ("tanh(x=1)", x)))] == ["batch_tanh"]  # a key with attributes
    assert {r.name for r in BATCH_TABLE} >= set(named.values())


def test_the_mender_speculates_what_the_row_says_is_total():
    import ast

    typing = Typing({"f": FLOAT, "i": INT}, is_torch=lambda name: name == "torch")
    cls = lambda src: typing.tensor_class(ast.parse(src, mode="eval").body)  # noqa: E731
    assert cls("f.exp()") == FLOAT and cls("i.relu()") == INT
    assert cls("i.exp()") is None  # exp is total on floats only: an int input changes the class
    assert "exp" in ops.total_on("float") and "exp" not in ops.total_on("int")


def test_a_registered_row_with_a_batch_rule_is_batched_under_it():
    from eqsat_rules.batch_groups import batch_unions

    def three_sinh(x, y, z):
        return torch.sinh(x), torch.sinh(y), torch.sinh(z)

    assert ops.pointwise_arity("sinh") is None, "sinh became a built-in op: pick another for this test"
    (row,) = ops.pointwise_rows("Unary", "sinh", ops.Dtype.FLOAT)
    xs = [torch.randn(4, 6) for _ in range(3)]
    ops.register(dataclasses.replace(row, batch="batch_sinh"))
    try:
        assert batch_unions(lower(torch.fx.symbolic_trace(three_sinh), xs)).counts == {"batch_sinh": 1}
    finally:
        ops.unregister("sinh")
    ops.register(row)
    try:
        assert batch_unions(lower(torch.fx.symbolic_trace(three_sinh), xs)).counts == {"batch_unary": 1}
    finally:
        ops.unregister("sinh")
