"""Inductor decides (eqsat_torch.inductor.verify.choose), with a stand-in for the probe."""
from types import SimpleNamespace

import pytest

from eqsat_torch.inductor.launches import Launches, ProbeError
from eqsat_torch.inductor.verify import choose


def prog(code: str) -> SimpleNamespace:
    return SimpleNamespace(code=code)


def measure_with(table: dict[str, Launches], calls: list | None = None):
    """A probe answering from ``table`` by program code; a code not in it fails to measure."""
    def measure(gm):
        if calls is not None:
            calls.append(gm.code)
        if gm.code not in table:
            raise ProbeError(f"cannot lower {gm.code}")
        return table[gm.code]
    return measure


def test_fewer_launches_win_even_with_more_bytes():
    table = {"in": Launches(3, 1, 100), "opt": Launches(1, 1, 900)}
    c = choose([("input", prog("in")), ("optimized", prog("opt"))], measure_with(table))
    assert (c.name, c.gm.code) == ("optimized", "opt")
    assert c.measured == {"input": table["in"], "optimized": table["opt"]}


def test_a_tie_on_launches_goes_to_fewer_bytes():
    table = {"in": Launches(2, 1, 500), "opt": Launches(1, 2, 400)}
    assert choose([("input", prog("in")), ("optimized", prog("opt"))], measure_with(table)).name == "optimized"


def test_a_full_tie_keeps_the_input():
    table = {"in": Launches(2, 1, 500), "a": Launches(1, 2, 500), "b": Launches(3, 0, 500)}
    c = choose([("input", prog("in")), ("a", prog("a")), ("b", prog("b"))], measure_with(table))
    assert c.name == "input" and "kept the input" in c.note


def test_more_launches_than_the_input_never_win():
    table = {"in": Launches(2, 0, 100), "opt": Launches(2, 1, 10)}
    assert choose([("input", prog("in")), ("optimized", prog("opt"))], measure_with(table)).name == "input"


def test_the_best_of_several_candidates_wins():
    table = {"in": Launches(5, 0, 100), "a": Launches(4, 0, 100), "b": Launches(2, 1, 100), "c": Launches(3, 0, 150)}
    cands = [("input", prog("in")), ("a", prog("a")), ("b", prog("b")), ("c", prog("c"))]
    assert choose(cands, measure_with(table)).name == "b"


def test_a_candidate_that_fails_to_measure_never_wins():
    table = {"in": Launches(4, 0, 100), "ok": Launches(3, 0, 100)}  # "broken" is not in the table
    c = choose([("input", prog("in")), ("broken", prog("broken")), ("ok", prog("ok"))], measure_with(table))
    assert c.name == "ok"
    assert "cannot lower broken" in c.measured["broken"]
    only_broken = choose([("input", prog("in")), ("broken", prog("broken"))], measure_with(table))
    assert only_broken.name == "input"


def test_an_unmeasurable_input_keeps_the_optimizers_choice():
    table = {"opt": Launches(1, 0, 1), "alt": Launches(0, 0, 0)}
    c = choose([("input", prog("in")), ("optimized", prog("opt")), ("alt", prog("alt"))], measure_with(table))
    assert (c.name, c.gm.code) == ("optimized", "opt")
    assert "could not be measured" in c.note and "cannot lower in" in c.measured["input"]


def test_candidates_identical_to_the_input_cost_no_measurement():
    calls: list[str] = []
    c = choose([("input", prog("same")), ("optimized", prog("same")), ("alt", prog("same"))],
               measure_with({}, calls))
    assert c.name == "input" and calls == [] and c.same_as_input == ("optimized", "alt")


def test_only_the_candidates_that_differ_are_measured():
    calls: list[str] = []
    table = {"in": Launches(2, 0, 10), "opt": Launches(1, 0, 10)}
    c = choose([("input", prog("in")), ("same", prog("in")), ("optimized", prog("opt"))], measure_with(table, calls))
    assert c.name == "optimized" and calls == ["in", "opt"] and c.same_as_input == ("same",)


def test_the_input_must_come_first_and_names_be_distinct():
    with pytest.raises(ValueError, match="first candidate"):
        choose([("optimized", prog("a")), ("input", prog("b"))], measure_with({}))
    with pytest.raises(ValueError, match="distinct"):
        choose([("input", prog("a")), ("x", prog("b")), ("x", prog("c"))], measure_with({}))


def test_candidates_to_make_are_made_and_measured_once_per_code():
    calls: list[str] = []
    made: list[str] = []

    def maker(code):
        def make():
            made.append(code)
            return prog(code)
        return make

    table = {"in": Launches(5, 0, 10), "opt": Launches(6, 0, 10), "part": Launches(3, 0, 10)}
    c = choose([("input", prog("in")), ("optimized", prog("opt")), ("a", maker("part")), ("b", maker("part")),
                ("c", maker("opt"))], measure_with(table, calls))
    assert (c.name, c.gm.code) == ("a", "part")
    assert calls == ["in", "opt", "part"] and made == ["part", "part", "opt"]
    assert c.same_as == {"b": "a", "c": "optimized"}


def test_keep_going_false_leaves_the_rest_unmade():
    made: list[str] = []
    table = {"in": Launches(5, 0, 10), "opt": Launches(4, 0, 10), "part": Launches(1, 0, 10)}
    seen: list[dict] = []

    def keep_going(measured):
        seen.append(dict(measured))
        return False

    c = choose([("input", prog("in")), ("optimized", prog("opt")), ("a", lambda: made.append(1) or prog("part"))],
               measure_with(table), keep_going)
    assert c.name == "optimized" and c.not_measured == ("a",) and made == []
    assert seen == [{"input": table["in"], "optimized": table["opt"]}]  # it decides on what was measured


def test_when_ours_is_the_input_nothing_is_made():
    c = choose([("input", prog("in")), ("optimized", prog("in")), ("a", lambda: pytest.fail("made"))],
               measure_with({}))
    assert c.name == "input" and c.same_as_input == ("optimized",)


def test_a_candidate_that_cannot_be_made_never_wins():
    def broken():
        raise RuntimeError("cycle")

    table = {"in": Launches(5, 0, 10), "opt": Launches(6, 0, 10)}
    c = choose([("input", prog("in")), ("optimized", prog("opt")), ("a", broken)], measure_with(table))
    assert c.name == "input" and c.measured["a"] == "not made: RuntimeError: cycle"
