"""The checker: every built-in DSL rule is sound on random instances; unsound rules are caught."""
import pytest

from rules.checker import UnsoundRule, assert_sound, check
from rules.dsl import binary, cat, ints, ivec, narrow, opkey, pieces, relu, rewrite, split, stack, tensor
from rules.library import builtin_dsl_rules

x, y = tensor("x"), tensor("y")
d, e, a, m, n = ints("d e a m n")
s = ivec("s")
f = opkey("f")


@pytest.mark.parametrize("rule", builtin_dsl_rules(), ids=lambda r: r.name)
def test_builtin_rule_is_sound(rule):
    res = check(rule)
    assert res.ok, res.problems
    assert res.admitted >= 10, f"only {res.admitted} admitted instances in {res.tried} tries"


UNSOUND = [
    rewrite("cat_wrong_dim", cat(pieces(split(x, s, d)), e), x),
    rewrite("cat_swapped", cat([split(x, [n, n], d)[1], split(x, [n, n], d)[0]], d), x),
    rewrite("narrow_binary_no_guard", narrow(binary(f, x, y), d, a, m), binary(f, narrow(x, d, a, m), y)),
    rewrite("stack_as_cat", stack(pieces(split(x, s, d)), d), x),
    rewrite("relu_commutes_with_neg", relu(binary("mul", x, y)), binary("mul", relu(x), y)),
]


@pytest.mark.parametrize("rule", UNSOUND, ids=lambda r: r.name)
def test_unsound_rule_is_caught(rule):
    res = check(rule)
    assert not res.ok and res.problems[0].startswith(f"rule {rule.name!r} at ")
    with pytest.raises(UnsoundRule, match=rule.name):
        assert_sound(rule)


def test_counterexample_names_the_instance():
    (problem,) = check(UNSOUND[1]).problems
    assert "values differ" in problem and "x=tensor(" in problem and "n=" in problem
