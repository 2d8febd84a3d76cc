"""The DSL: it compiles to egglog, reads back like the math, and refuses malformed rules by name."""
import types

import pytest

import eqsat_rules
from eqsat import to_egglog
from eqsat.rulelang import Clause
from eqsat_rules.__main__ import main
from eqsat_rules.compile import RuleError
from eqsat_rules.dsl import (
    birewrite,
    cat,
    eq,
    ints,
    ivec,
    narrow,
    opkey,
    pieces,
    relu,
    rewrite,
    split,
    tensor,
    tlist,
    unary,
)

x, y = tensor("x"), tensor("y")
d, a, n, e = ints("d a n e")
s = ivec("s")


def _text(rule) -> list[str]:
    """The egglog a compiled rule's clauses become (the session adds ruleset and name)."""
    return [to_egglog.clause(c) for c in rule.clauses]


def test_a_rule_compiles_to_one_egglog_rule():
    r = rewrite("cat_all", cat(pieces(split(x, s, d)), d), x).compile()
    (cmd,) = _text(r)
    assert cmd.startswith("(rule (") and "(union _root x)" in cmd and "(Cat _l1 d)" in cmd
    decls = [to_egglog.declaration(d) for d in r.decls if not isinstance(d, Clause)]
    assert any(decl.startswith("(relation Pieces_") for decl in decls)


def test_given_terms_bind_what_the_pattern_cannot_reach():
    """merge_splits_before's shape: the rewritten piece's rule reads another piece's re-split."""
    t, i = ivec("t"), ints("i")
    S = split(x, s, d)
    piece = split(S[i], t, d)
    with pytest.raises(RuleError, match="replacement uses i, t"):
        rewrite("g", S[a], split(x, t, d)[i], when=[a < i]).compile()
    (cmd,) = _text(rewrite("g", S[a], split(x, t, d)[i], when=[a < i], given=[piece]).compile())
    assert "(= _given0 (Split (Get (Split x s d) i) t d))" in cmd and "(< a i)" in cmd
    with pytest.raises(RuleError, match="one direction only"):
        eqsat_rules.dsl.DslRule("g", S[a], S[a], given=[piece], bidirectional=True)


def test_guards_and_shapes_become_query_facts():
    r = rewrite("g", narrow(x, d, a, n), x, when=[x.shape[d] % 8 == 0, x.dtype == y.dtype]).compile
    with pytest.raises(RuleError, match="'g'.*guard uses y"):
        r()
    cmd = _text(rewrite("g", narrow(x, d, a, n), x, when=[x.shape[d] % 8 == 0]).compile())[0]
    assert "(= _s1 (shape x))" in cmd and "(= (% (vec-get _s1 d) 8) 0)" in cmd


def test_doc_reads_like_the_math():
    r = rewrite("narrow_relu", narrow(relu(x), d, a, n), relu(narrow(x, d, a, n)), when=[n > 0])
    assert r.doc == "narrow(relu(x), d, a, n) => relu(narrow(x, d, a, n)) if n > 0"


def test_bidirectional_compiles_both_ways():
    r = birewrite("relu_narrow", narrow(relu(x), d, a, n), relu(narrow(x, d, a, n)))
    assert len(r.compile().clauses) == 2
    assert eqsat_rules.check(r).ok


def test_a_comparison_is_not_a_bool():
    with pytest.raises(TypeError, match="guard"):
        if x.ndim == 2:
            pass


def test_list_pattern_cannot_be_a_replacement():
    with pytest.raises(RuleError, match="only appear in the pattern"):
        rewrite("p", split(x, s, d)[a], cat(pieces(split(x, s, d)), d)).compile()


@pytest.mark.parametrize("rule, message", [
    (rewrite("unbound_var", relu(x), relu(y)), "'unbound_var': replacement uses y, which the pattern does not bind"),
    (rewrite("shape_changer", narrow(x, d, a, n), x), "'shape_changer'.*shape-changing rewrite"),
    (rewrite("dtype_changer", relu(x), eq(x, x)), "'dtype_changer'.*dtype torch.bool"),
    (rewrite("bad_replacement", relu(x), cat([x, relu(x)], e)), "'bad_replacement'"),
])
def test_register_refuses_malformed_rules(rule, message):
    with pytest.raises(RuleError, match=message):
        eqsat_rules.register(rule)
    assert rule.name not in {r.name for r in eqsat_rules.all_rules()}


def test_register_a_module_and_see_it_listed(capsys):
    f = opkey("f")
    mod = types.ModuleType("my_rules")
    mod.RULES = [rewrite("my_narrow_unary", narrow(unary(f, x), d, a, n), unary(f, narrow(x, d, a, n)))]
    eqsat_rules.register(mod)
    try:
        assert "my_narrow_unary" in {r.name for r in eqsat_rules.select()}
        assert "my_narrow_unary" not in {r.name for r in eqsat_rules.select(disabled=["my_narrow_unary"])}
        with pytest.raises(RuleError, match="already taken"):
            eqsat_rules.register(mod)
        assert main(["list"]) == 0
        out = capsys.readouterr().out
        assert "my_narrow_unary" in out and "cat_split_all" in out and "split_cat" in out
    finally:
        eqsat_rules.unregister("my_narrow_unary")


def test_select_compiles_dsl_rules_passed_as_extra():
    r = rewrite("extra_rule", relu(relu(x)), relu(x))
    chosen = eqsat_rules.select(families=["split_cat"], extra=[r])
    assert {c.family for c in chosen} == {"split_cat", "user"}
    assert "extra_rule" in {c.name for c in chosen}


def test_list_variable_must_be_last():
    rest = tlist("rest")
    with pytest.raises(TypeError, match="last"):
        cat([*rest, x], d)


INJECTED = 'user)\n(panic "INJECTED")\n(ruleset user2'


@pytest.mark.parametrize("name, family", [("fam_injected", INJECTED), ("fam_empty", ""), ("fam_dash", "my-family"),
                                          ("fam_unicode", "é"), (INJECTED, "user"), ("", "user"), ("é", "user")])
def test_names_that_reach_egglog_must_be_identifiers(name, family):
    """Names are pasted into egglog text: anything but an identifier is refused where the rule is made."""
    from eqsat.rule import Rule
    with pytest.raises(RuleError, match=r"identifier") as info:
        rewrite(name, relu(relu(x)), relu(x), family=family)
    assert repr(name if family == "user" else family) in str(info.value)
    with pytest.raises(ValueError, match=r"identifier"):
        Rule(name, family, "a hand-written rule", ())


def test_the_compiler_prints_names_as_data():
    """Whatever builds a rule value, the compiler checks each name it prints and quotes strings: a
    ruleset, a variable or a table that is not a name is refused, and an op key carrying egglog text
    stays one string in the e-graph."""
    from eqsat.egraph import Budget, Session
    from eqsat.rulelang import TENSOR, Relation, Var, rule as clause
    from eqsat.terms import Term
    from eqsat_rules.library import shape_rules

    c = clause(Relation("R", (TENSOR,))(x)).then()
    for bad in (lambda: to_egglog.clause(c, INJECTED), lambda: to_egglog.ruleset(INJECTED),
                lambda: Var(INJECTED, TENSOR), lambda: Relation(INJECTED, (TENSOR,))):
        with pytest.raises(ValueError):
            bad()
    key = 'relu" x)) (panic "INJECTED") ("'
    r = rewrite("quoted_key", unary(key, unary(key, x)), unary(key, x)).compile()
    assert '(panic' in to_egglog.clause(r.clauses[0]) and '\\"' in to_egglog.clause(r.clauses[0])
    s = Session([r], shape_rules())
    x_ = s.let("$x", Term("Input", ("x",)))
    s.let("$y", Term("Unary", (key, Term("Unary", (key, x_)))))
    assert s.saturate(Budget(iterations=2)).fired["quoted_key"] >= 1  # the key stayed one string


def test_variable_names_must_be_identifiers():
    for bad in ('x)(panic"INJECTED")(', "_root", "é"):
        with pytest.raises(RuleError, match=r"identifier"):
            tensor(bad)


@pytest.mark.parametrize("family", ["analysis", "seed", "shape", "Narrow", "repeat"])
def test_a_user_family_cannot_take_a_name_the_engine_declares(family):
    """A ruleset shadowing a constructor, function or the engine's own rulesets would break every compile."""
    from eqsat_rules.library import register, unregister
    try:
        with pytest.raises(RuleError, match=f"family {family!r}"):
            register(rewrite("fam_taken", relu(relu(x)), relu(x), family=family), check=False)
    finally:
        unregister("fam_taken")


def test_every_pointwise_row_has_a_builder_a_reader_can_see():
    """The pointwise builders are ``def``s of ``eqsat_rules.dsl`` with one parameter per operand (not made by
    ``globals().update``): an editor finds them and a call with the wrong arity fails where it is
    written. A built-in row without one is named with the line to add."""
    import inspect

    from eqsat import ops
    from eqsat_rules import dsl

    source = inspect.getsource(dsl)
    names = {1: "x", 2: "x, y", 3: "a, b, c"}
    for op in ops.pointwise():
        ctor = {1: "unary", 2: "binary", 3: "ternary"}[op.arity]
        line = (f'def {op.name}({", ".join(f"{p}: Expr" for p in names[op.arity].split(", "))}) -> Expr: '
                f'return {ctor}("{op.name}", {names[op.arity]})')
        fn = vars(dsl).get(op.name)
        assert fn is not None and f"def {op.name}(" in source, f"rules/dsl.py needs: {line}"
        params = inspect.signature(fn).parameters.values()
        assert [p.kind for p in params] == [inspect.Parameter.POSITIONAL_OR_KEYWORD] * op.arity, op.name
        operands = [dsl.tensor(f"t{i}") for i in range(op.arity)]
        assert repr(fn(*operands)) == repr(dsl.pointwise_op(op.name)(*operands))  # == builds a guard
