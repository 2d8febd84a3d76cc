"""The checker: every built-in DSL rule is sound on random instances; unsound rules are caught."""
import pytest

from eqsat_rules.checker import UnsoundRule, assert_sound, check
from eqsat_rules.dsl import (
    binary,
    cat,
    ints,
    ivec,
    narrow,
    opkey,
    pieces,
    relu,
    rewrite,
    split,
    stack,
    tensor,
)
from eqsat_rules.library import builtin_dsl_rules

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


BIG_ID = rewrite("u2", relu(x), x, when=[x.shape[0] > 10])  # unsound, but only on dims no 1-4 sample meets
BIG_IDEM = rewrite("relu_idem_big", relu(relu(x)), relu(x), when=[x.shape[0] + x.shape[1] >= 24])
NEVER = rewrite("relu_id_never", relu(x), x, when=[x.shape[0] > 10, x.shape[0] < 5])


def test_a_guard_no_small_instance_meets_is_solved_for():
    """The checker samples the sizes the guard's constants call for, instead of reporting nothing found."""
    (problem,) = check(BIG_ID).problems
    assert "values differ" in problem and "x=tensor(" in problem
    res = check(BIG_IDEM)
    assert res.ok and res.admitted >= 10, res
    (problem,) = check(NEVER).problems
    assert problem.startswith("rule 'relu_id_never': the pattern and guard admitted no instance"), problem


def test_a_rule_the_checker_cannot_test_is_refused_at_the_backend():
    from eqsat_torch.backend import eqsat_backend
    from eqsat_rules.compile import RuleError

    for rule, words in ((BIG_ID, "values differ"), (NEVER, "no instance")):
        with pytest.raises(RuleError) as info:
            eqsat_backend(extra_rules=[rule])
        assert f"rule {rule.name!r}" in str(info.value) and words in str(info.value), str(info.value)
        assert "check=False" in str(info.value)
    assert [r.name for r in eqsat_backend(extra_rules=[BIG_IDEM]).options.extra_rules] == ["relu_idem_big"]
    assert [r.name for r in eqsat_backend(extra_rules=[NEVER], check=False).options.extra_rules] == ["relu_id_never"]


def test_a_guard_that_admits_one_size_is_not_taken_as_checked():
    """``x.shape[0] == x.shape[1] + 3`` meets only (4, 1) among dims 1-4, where this rule happens to
    hold; it is wrong at (5, 2). The checker searches wider for distinct admitted sizes, and finds it."""
    from eqsat_rules.dsl import permute, reshape

    lucky = rewrite("permute_as_reshape", permute(x, [1, 0]), reshape(x, [x.shape[1], x.shape[0]]),
                    when=[x.shape[0] == x.shape[1] + 3])
    res = check(lucky)
    assert not res.ok and res.problems[0].startswith("rule 'permute_as_reshape'"), res.problems
    square = rewrite("permute_square_twice", permute(permute(x, [1, 0]), [1, 0]), x,
                     when=[x.shape[0] == x.shape[1] + 3])
    res = check(square)
    assert res.ok and res.admitted >= 10, res


def test_a_guard_no_search_widens_enough_is_refused():
    """One size only, whatever the dims tried: refused with the reason (sound or not), not accepted
    as checked."""
    one = rewrite("relu_idem_at_one_size", relu(relu(x)), relu(x), when=[x.shape[0] == 4, x.shape.len() == 1])
    (problem,) = check(one).problems
    assert "fewer than 3 distinct sizes" in problem and "cannot check" in problem, problem
