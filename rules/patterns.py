"""The DSL's list patterns (``pieces``, ``each``), the error a malformed rule raises, and the walk
that finds a term's variables. Shared by the DSL, its compiler and the checker, below all of them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from eqsat.ops import Ctor
from eqsat.rulelang import TENSOR, TLIST, Call, Expr, Guard, ListExpr, Var


class RuleError(ValueError):
    """A malformed rule, refused before it reaches the e-graph."""


@dataclass(eq=False, repr=False)
class Pieces(Expr):
    """List pattern: every piece of ``split`` in order, each wrapped by ``each`` (a template)."""

    split: Expr
    each: Callable[[Expr], Expr] | None = None
    sort: str = TLIST

    def show(self) -> str:
        if self.each is None:
            return f"pieces({self.split!r})"
        return f"[{self.each(Var('p', TENSOR))!r} for p in {self.split!r}]"


@dataclass(eq=False, repr=False)
class Each(Expr):
    """List pattern: a list whose every element matches ``template(a, b, …)``; ``outs`` are list
    variables bound to the lists of ``a``s, ``b``s, …, whose elements share one dtype each."""

    template: Callable[..., Expr]
    outs: tuple
    when: Callable[..., list] | None = None
    sort: str = TLIST

    def show(self) -> str:
        params = [Var(o.name.rstrip("s") or "a", TENSOR) for o in self.outs]
        names = ", ".join(p.name for p in params)
        source = self.outs[0].name if len(self.outs) == 1 else f"zip({', '.join(o.name for o in self.outs)})"
        guards = [repr(g) for g in (self.when(*params) if self.when else [])]
        cond = f" if {' and '.join(guards)}" if guards else ""
        return f"[{self.template(*params)!r} for {names} in {source}{cond}]"


def pieces(s: Expr, each: Callable[[Expr], Expr] | None = None) -> Pieces:
    """All pieces of split ``s`` in order (optionally each wrapped, e.g. ``lambda p: squeeze(p, d)``)."""
    if not (isinstance(s, Call) and s.fn == Ctor.SPLIT):
        raise TypeError("pieces() takes a split(...) pattern")
    return Pieces(s, each)


def each(template: Callable[..., Expr], *outs: Expr, when: Callable[..., list] | None = None) -> Each:
    """A list whose elements all match ``template``; ``outs`` receive the lists of its arguments."""
    if any(not isinstance(o, Var) or o.sort != TLIST for o in outs):
        raise TypeError("each(): outputs must be list variables")
    return Each(template, tuple(outs), when)


def term_vars(t, out: dict | None = None) -> dict:
    """Every variable in ``t`` (by identity, in order of first appearance), list patterns included."""
    out = {} if out is None else out
    if isinstance(t, Var):
        out.setdefault(id(t), t)
    elif isinstance(t, Call):
        for a in t.args:
            term_vars(a, out)
    elif isinstance(t, ListExpr):
        for a in t.items + ((t.tail,) if t.tail is not None else ()):
            term_vars(a, out)
    elif isinstance(t, Pieces):
        term_vars(t.split, out)
        if t.each is not None:
            term_vars(t.each(Var("_p", TENSOR)), out)
    elif isinstance(t, Each):
        for o in t.outs:
            term_vars(o, out)
        params = [Var(f"_a{k}", TENSOR) for k in range(len(t.outs))]
        for v in term_vars(t.template(*params)).values():
            if all(v is not p for p in params):
                out.setdefault(id(v), v)
    elif isinstance(t, Guard):
        term_vars(t.lhs, out)
        term_vars(t.rhs, out)
    return out
