"""Options and user rules fail loudly when the user makes the mistake (trust issue, cases 3 and 4).

Each refusal names the offending option or rule and says what would be valid.
"""
import pytest
import torch

import eqsat_rules
from eqsat_torch import eqsat_backend
from eqsat_torch.options import OptionError
from eqsat_rules import RuleError
from eqsat_rules.dsl import narrow, relu, rewrite, tensor, ints

x, y = tensor("x y")
d, a, n = ints("d a n")


@pytest.mark.parametrize("options, error, words", [
    ({"inner": "bogus"}, OptionError, ["inner", "'inductor'", "'eager'"]),
    ({"search": "bogus"}, OptionError, ["search", "'saturate'", "'greedy'"]),
    ({"disabled": ["bach"]}, OptionError, ["'bach'", "did you mean 'batch'"]),
    ({"disabled": "batch"}, TypeError, ["disabled", "list", "['batch']"]),
    ({"post_grad_disabled": ["nope"]}, OptionError, ["'nope'", "valid"]),
    ({"families": ["nope"]}, OptionError, ["families", "'nope'", "split_cat"]),
    ({"families": "batch"}, TypeError, ["families", "list"]),
    ({"iterations": -1}, OptionError, ["iterations", "positive"]),
    ({"iterations": "8"}, TypeError, ["iterations", "int"]),
    ({"iterations": True}, TypeError, ["iterations"]),
    ({"seconds": 0}, OptionError, ["seconds", "> 0"]),
    ({"seconds": -2.5}, OptionError, ["seconds"]),
    ({"max_nodes": 0}, OptionError, ["max_nodes"]),
    ({"ilp_seconds": 0}, OptionError, ["ilp_seconds"]),
    ({"validate": "yes"}, TypeError, ["validate", "True or False"]),
    ({"cost": "gpu"}, TypeError, ["cost", "CostModel"]),
    ({"bogus": 1}, OptionError, ["unknown eqsat option 'bogus'", "valid options"]),
    ({"valdiate": True}, OptionError, ["did you mean 'validate'"]),
])
def test_bad_option_is_refused_where_it_is_set(options, error, words):
    with pytest.raises(error) as info:
        eqsat_backend(**options)
    for w in words:
        assert w in str(info.value), str(info.value)


def test_bad_option_through_torch_compile_fails_the_compile_with_the_same_message():
    f = torch.compile(lambda t: t.relu() + 1, backend="eqsat", options={"bogus": 1})
    with pytest.raises(Exception) as info:
        f(torch.randn(3))
    assert "unknown eqsat option 'bogus'" in str(info.value)


def test_valid_options_are_kept_as_given():
    backend = eqsat_backend(disabled=["batch", "cat_split_all"], families=["split_cat", "algebra"],
                            iterations=3, seconds=1.5, search="greedy", inner="eager")
    o = backend.options
    assert o.disabled == ("batch", "cat_split_all") and o.families == ("split_cat", "algebra")
    assert (o.iterations, o.seconds, o.search, o.inner) == (3, 1.5, "greedy", "eager")


MALFORMED = {
    "unbound replacement variable": (lambda: rewrite("user_unbound", relu(x), relu(y)), "y"),
    "when=[True]": (lambda: rewrite("user_true_guard", relu(x), relu(x), when=[True]), "when=[...]"),
    "replacement is an int": (lambda: rewrite("user_int", relu(x), 3), "replacement must be a tensor"),
    "pattern is a string": (lambda: rewrite("user_str", "relu(x)", x), "pattern must be a tensor"),
    "name shadows a built-in": (lambda: rewrite("cat_single", relu(relu(x)), relu(x)), "'cat_single'"),
    "name shadows a family": (lambda: rewrite("batch", relu(relu(x)), relu(x)), "'batch'"),
    "unsound": (lambda: rewrite("user_relu_id", relu(x), x), "values differ"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_or_unsound_rule_is_refused_at_registration(case):
    make, words = MALFORMED[case]
    for register in (lambda r: eqsat_rules.register(r), lambda r: eqsat_backend(extra_rules=[r])):
        with pytest.raises(RuleError) as info:
            register(make())
        assert words in str(info.value), str(info.value)
    assert not any(r.name.startswith("user_") for r in eqsat_rules.all_rules())


def test_unsound_rule_counterexample_names_the_rule_and_the_instance():
    with pytest.raises(RuleError) as info:
        eqsat_backend(extra_rules=[rewrite("user_relu_id", relu(x), x)])
    msg = str(info.value)
    assert "user_relu_id" in msg and "x=tensor(" in msg and "check=False" in msg


def test_check_false_is_an_explicit_opt_out():
    backend = eqsat_backend(extra_rules=[rewrite("user_relu_id", relu(x), x)], check=False)
    assert [r.name for r in backend.options.extra_rules] == ["user_relu_id"]


def test_two_user_rules_with_one_name_are_refused():
    r1 = rewrite("user_twice", relu(relu(x)), relu(x))
    r2 = rewrite("user_twice", narrow(relu(x), d, a, n), relu(narrow(x, d, a, n)))
    with pytest.raises(RuleError, match="user_twice"):
        eqsat_backend(extra_rules=[r1, r2])


def test_a_sound_user_rule_that_changes_the_graph_is_in_rules_used():
    rule = rewrite("user_narrow_relu", narrow(relu(x), d, a, n), relu(narrow(x, d, a, n)))

    def f(t):
        return t.relu()[:, :2] * 3

    backend = eqsat_backend(extra_rules=[rule], inner="eager", disabled=["algebra"])
    t = torch.randn(4, 64)
    torch.testing.assert_close(torch.compile(f, backend=backend)(t), f(t))
    report = backend.reports[0]
    assert report.changed and report.rules_used.get("user_narrow_relu"), report.summary()
