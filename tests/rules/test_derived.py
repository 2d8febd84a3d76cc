"""The derived int-list functions computed by egglog agree with their Python twins (``eqsat_rules.derived``),
including the doubling ``repeat``, the running-sum ``offset`` and ``lead-perm``."""
import pytest

from eqsat.egraph import Budget, Session
from eqsat.rule import Rule
from eqsat.schema import ANALYSIS
from eqsat_rules.derived import DERIVED

from egraph_case import vec

CASES = [("repeat", (n, 3)) for n in (0, 1, 2, 5, 8, 13)] + [
    ("offset", ((2, 3, 5, 7), i)) for i in (0, 1, 3, 4)] + [
    ("splice", ((4, 6, 8), 1, (2, 3))), ("movedim-perm", (4, 1, 3)), ("iota", (3,))] + [
    ("lead-perm", ((0, 2, 1, 3), d)) for d in (0, 2, 3)] + [("lead-perm", ((0, 2, 3, 1), 2))]


def _egg(v) -> str:
    return vec(*v) if isinstance(v, tuple) else str(v)


def _value(out) -> tuple | int:
    text = out.termdag.to_string(out.term)
    if "vec" in text:
        return tuple(int(v) for v in text.removeprefix("(vec-of").rstrip(")").split()) if "vec-of" in text else ()
    return int(text)


@pytest.mark.parametrize("name, args", CASES)
def test_derived_function_matches_python(name, args):
    d = DERIVED[name]
    s = Session([], [Rule("derived", ANALYSIS, "the derived function's tables and clauses", (), d.decls)])
    call = " ".join(_egg(a) for a in args)
    s._command(f"({name}-demand {call})")
    s.saturate(Budget(iterations=1, seconds=20))  # no rules: the analysis to a fixpoint
    (out,) = s._command(f"(extract ({name} {call}))")
    assert _value(out) == d.py(*args)
