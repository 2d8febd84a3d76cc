"""Test e-graphs: a tiny builder that binds one ``let`` per term plus facts (``eqsat.terms.Program``)."""
from __future__ import annotations

from dataclasses import dataclass, field

import eqsat_rules.library as library
from eqsat import terms
from eqsat.egraph import Budget, Session
from eqsat.extract import bottom_up
from eqsat.original import input_program
from eqsat.serialized import Choice, EGraphView, parse
from eqsat.terms import IVec, Ref, Term, TList


def union(a: str, b: str) -> str:
    """A raw egglog ``union`` of two bound tensors (names are ``Name`` e-nodes, not globals)."""
    return f"(union {terms.render(Ref(a))} {terms.render(Ref(b))})"


@dataclass
class Program:
    """Terms bound one ``let`` each (names ``$v1``, ``$v2``, …) with float32 shape facts."""

    program: terms.Program = field(default_factory=terms.Program)
    originals: dict[str, Term] = field(default_factory=dict)
    shapes: dict[str, tuple] = field(default_factory=dict)
    count: int = 0

    def let(self, term: Term, shape: tuple | None) -> str:
        self.count += 1
        name = f"$v{self.count}"
        self.program.let(name, term)
        self.originals[name] = term
        if shape is not None:
            self.shapes[name] = tuple(shape)
            self.program.set_shape(Ref(name), shape)
            self.program.set_dtype(Ref(name), "float32")
        return name

    def input(self, shape) -> str:
        return self.let(Term("Input", (f"in{self.count}",)), shape)

    def param(self, shape) -> str:
        name = self.let(Term("Param", (f"p{self.count}",)), shape)
        self.program.mark_param(Ref(name))
        return name

    def unary(self, op: str, x: str) -> str:
        return self.let(Term("Unary", (op, Ref(x))), self.shapes[x])

    def binary(self, op: str, x: str, y: str) -> str:
        return self.let(Term("Binary", (op, Ref(x), Ref(y))), self.shapes[x])

    def linear(self, x: str, w: str, b: str) -> str:
        return self.let(Term("Linear", (Ref(x), Ref(w), Ref(b))), self.shapes[x][:-1] + (self.shapes[w][0],))

    def sum(self, x: str, dim: int) -> str:
        shp = list(self.shapes[x])
        shp[dim] = 1
        return self.let(Term("Reduce", ("sum", Ref(x), IVec((dim,)), 1)), shp)

    def layer_norm(self, x: str, w: str, b: str) -> str:
        return self.let(Term("LayerNorm", (Ref(x), IVec(self.shapes[x][-1:]), Ref(w), Ref(b), "1e-05")), self.shapes[x])

    def cat(self, xs: list[str], dim: int) -> str:
        shp = list(self.shapes[xs[0]])
        shp[dim] = sum(self.shapes[x][dim] for x in xs)
        return self.let(Term("Cat", (TList(tuple(Ref(x) for x in xs)), dim)), shp)

    def split(self, x: str, sizes: list[int], dim: int) -> list[str]:
        sp = self.let(Term("Split", (Ref(x), IVec(tuple(sizes)), dim)), None)
        out = []
        for i, n in enumerate(sizes):
            shp = list(self.shapes[x])
            shp[dim] = n
            out.append(self.let(Term("Get", (Ref(sp), i)), shp))
        return out

    def union(self, a: str, b: str) -> None:
        self.program.same(Ref(a), Ref(b))


def build(prog: Program, rules=(), extra: list[str] = (), iterations: int = 4) -> Session:
    session = Session(list(rules), library.shape_rules())
    session.load(prog.program)
    session.commands(extra)
    session.saturate(Budget(iterations=iterations))
    return session


def view_of(prog: Program, rules=(), extra: list[str] = ()) -> EGraphView:
    return parse(build(prog, rules, extra).serialize())


def roots_of(view: EGraphView, lets: list[str]) -> list[str]:
    return [view.lets[r] for r in lets]


def input_choice(view: EGraphView, roots: list[str]):
    """The input program: before any rule ran, each class holds one node, so any extraction is it."""
    return bottom_up(view, roots, lambda node, v: 0.0)


def input_in(view: EGraphView, prog: Program, outs: list[str]) -> Choice:
    """The input program ``prog`` found in ``view`` (a saturated e-graph)."""
    return input_program(view, prog.originals, outs).choice
