"""A tiny harness for rule tests at the e-graph level: declare inputs, let terms, saturate, ask unions
(through the session's private ``_command`` hook: terms here are egglog text).
"""
from __future__ import annotations

from eqsat.egraph import Budget, EGraphError, Session
from eqsat_rules.library import all_rules, shape_rules

INPUTS = {  # name: (shape, dtype)
    "x": ((4, 6), "float32"), "z": ((4, 6), "float32"), "y": ((4, 2), "float32"), "w": ((4, 3), "float32"),
    "h": ((4, 6), "float16"), "s0": ((), "float32"), "s1": ((), "float32"), "b1": ((4, 1), "float32"),
    "r1": ((1, 6), "float32"), "v6": ((6,), "float32"),
}


def tl(*items: str) -> str:
    """A TList of egglog terms."""
    out = "(TNil)"
    for it in reversed(items):
        out = f"(TCons {it} {out})"
    return out


def vec(*ints: int) -> str:
    return f"(vec-of {' '.join(map(str, ints))})" if ints else "(vec-pop (vec-of 0))"


def pieces(split: str, n: int, wrap: str = "{}") -> list[str]:
    return [wrap.format(f"(Get {split} {i})") for i in range(n)]


class Case:
    """An e-graph with the inputs above, the given rules (names; None = all) and the shape analysis."""

    def __init__(self, rules: list[str] | None = None):
        chosen = [r for r in all_rules() if rules is None or r.name in rules]
        missing = set(rules or ()) - {r.name for r in chosen}
        assert not missing, f"unknown rules {missing}"
        self.s = Session(chosen, shape_rules())
        for name, (shape, dtype) in INPUTS.items():
            self.s.commands([f'(let ${name} (Input "{name}"))', f"(set (shape ${name}) {vec(*shape)})",
                             f'(set (dtype ${name}) "{dtype}")'])
        self.fired: dict[str, int] = {}

    def let(self, name: str, term: str) -> "Case":
        self.s._command(f"(let ${name} {term})")
        return self

    def run(self) -> "Case":
        self.fired = self.s.saturate(Budget(iterations=12, nodes=100_000, seconds=20)).fired
        return self

    def same(self, a: str, b: str) -> bool:
        try:
            self.s._command(f"(check (= {a} {b}))")
            return True
        except EGraphError:
            return False

    def shape(self, term: str) -> tuple | None:
        """The derived shape of ``term`` (None when the analysis gave it none)."""
        try:
            (out,) = self.s._command(f"(extract (shape {term}))")
        except EGraphError:
            return None
        text = out.termdag.to_string(out.term)
        return tuple(int(v) for v in text.removeprefix("(vec-of").rstrip(")").split()) if "vec-of" in text else ()

    def dtype(self, term: str) -> str | None:
        try:
            (out,) = self.s._command(f"(extract (dtype {term}))")
        except EGraphError:
            return None
        return out.termdag.to_string(out.term).strip('"')
