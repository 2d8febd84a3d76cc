"""Test e-graphs written as egglog text: a tiny builder that emits one ``let`` per term plus facts."""
from __future__ import annotations

from dataclasses import dataclass, field

import rules.library as library
from eqsat.egraph import Budget, Session
from eqsat.extract import bottom_up
from eqsat.serialized import EGraphView, parse


def vec(xs) -> str:
    return "(vec-of " + " ".join(str(int(x)) for x in xs) + ")"


def tlist(xs) -> str:
    out = "(TNil)"
    for x in reversed(list(xs)):
        out = f"(TCons {x} {out})"
    return out


@dataclass
class Program:
    commands: list[str] = field(default_factory=list)
    shapes: dict[str, tuple] = field(default_factory=dict)
    count: int = 0

    def let(self, term: str, shape: tuple | None) -> str:
        self.count += 1
        name = f"$v{self.count}"
        self.commands.append(f"(let {name} {term})")
        if shape is not None:
            self.shapes[name] = tuple(shape)
            self.commands.append(f"(set (shape {name}) {vec(shape)})")
            self.commands.append(f'(set (dtype {name}) "float32")')
        return name

    def input(self, shape) -> str:
        return self.let(f'(Input "in{self.count}")', shape)

    def param(self, shape) -> str:
        name = self.let(f'(Param "p{self.count}")', shape)
        self.commands.append(f"(IsParam {name})")
        return name

    def unary(self, op: str, x: str) -> str:
        return self.let(f'(Unary "{op}" {x})', self.shapes[x])

    def binary(self, op: str, x: str, y: str) -> str:
        return self.let(f'(Binary "{op}" {x} {y})', self.shapes[x])

    def linear(self, x: str, w: str, b: str) -> str:
        return self.let(f"(Linear {x} {w} {b})", self.shapes[x][:-1] + (self.shapes[w][0],))

    def sum(self, x: str, dim: int) -> str:
        shp = list(self.shapes[x])
        shp[dim] = 1
        return self.let(f'(Reduce "sum" {x} {vec([dim])} 1)', shp)

    def layer_norm(self, x: str, w: str, b: str) -> str:
        return self.let(f'(LayerNorm {x} {vec(self.shapes[x][-1:])} {w} {b} "1e-05")', self.shapes[x])

    def cat(self, xs: list[str], dim: int) -> str:
        shp = list(self.shapes[xs[0]])
        shp[dim] = sum(self.shapes[x][dim] for x in xs)
        return self.let(f"(Cat {tlist(xs)} {dim})", shp)

    def split(self, x: str, sizes: list[int], dim: int) -> list[str]:
        sp = self.let(f"(Split {x} {vec(sizes)} {dim})", None)
        out = []
        for i, n in enumerate(sizes):
            shp = list(self.shapes[x])
            shp[dim] = n
            out.append(self.let(f"(Get {sp} {i})", shp))
        return out

    def union(self, a: str, b: str) -> None:
        self.commands.append(f"(union {a} {b})")


def build(prog: Program, rules=(), extra: list[str] = (), iterations: int = 4) -> Session:
    session = Session(list(rules), library.shape_rules())
    session.commands(prog.commands)
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
