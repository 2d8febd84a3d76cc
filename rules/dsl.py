"""The rule DSL: a rule is a pattern, a replacement and guards, written with torch-named constructors.

    x = tensor("x"); s = ivec("s"); d, e = ints("d e")
    rewrite("stack_split_all", stack(pieces(split(x, s, d)), e),
            movedim(reshape(x, splice(x.shape, d, [s.len(), s[0]])), d, e),
            when=[s == repeat(s.len(), s[0])], family="split_cat")

Rule expressions are the engine's typed rule language (``eqsat.rulelang``: variables, literals and
calls; a pattern, unlike the engine's ``eqsat.terms.Term``, has variables). Ints, int lists and op
keys overload Python's operators, so a guard reads ``x.shape[d] % 8 == 0``; a comparison builds a
``Guard``, never a bool. ``rules.compile`` turns a ``DslRule`` into typed clauses; ``rules.checker``
evaluates the same trees with torch. Nothing here runs Python during saturation.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Iterable

from eqsat import ops
from eqsat.rulelang import (DTYPE, IDENTIFIER, INT, IVEC, STR, TENSOR, TLIST, TTUPLE, Call, Expr,  # noqa: F401
                            Guard, ListExpr, Lit, Var, cons, imax, lift, nil, vec)

from .compile import compile_rule
from .derived import DERIVED
from .patterns import Each, Pieces, RuleError, each, pieces  # noqa: F401

_VAR_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")  # a leading _ is the compiler's own (_root, _s1, …)


def _identifier(what: str, value, pattern: re.Pattern = IDENTIFIER) -> str:
    """``value`` if it is an identifier: names become egglog names, so nothing else may pass."""
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise RuleError(f"{what} {value!r} must be an identifier ({pattern.pattern})")
    return value


# -- variables ---------------------------------------------------------------------------------
def _vars(names: str, sort: str):
    vs = [Var(_identifier("variable name", n, _VAR_NAME), sort) for n in names.split()]
    return vs[0] if len(vs) == 1 else vs


def tensor(names: str): return _vars(names, TENSOR)
def ints(names: str): return _vars(names, INT)
def ivec(names: str): return _vars(names, IVEC)
def opkey(names: str): return _vars(names, STR)
def tlist(names: str): return _vars(names, TLIST)


tensors, ivecs, opkeys, tlists = tensor, ivec, opkey, tlist


# -- constructors, named and ordered like torch ------------------------------------------------
@dataclass(frozen=True)
class Sig:
    ctor: str
    args: tuple
    result: str = TENSOR


@lru_cache(maxsize=4)
def _signatures(version: int) -> dict[str, Sig]:
    """DSL builder → constructor signature, from the op registry: ops with their own constructor under
    their ``dsl`` name, shared constructors (``unary``, ``reduce``, …) under the constructor's name."""
    sigs: dict[str, Sig] = {}
    for op in ops.ALL_OPS:
        if ops.builder_name(op) is not None:
            sigs.setdefault(ops.builder_name(op), Sig(op.ctor, op.args, op.sort))
    return sigs


def signatures() -> dict[str, Sig]:
    return _signatures(ops.version())


def _call(name: str, *args) -> Expr:
    sig = signatures()[name]
    if len(args) != len(sig.args):
        raise TypeError(f"{name} takes {len(sig.args)} arguments, got {len(args)}")
    return Call(sig.ctor, tuple(lift(a, s) for a, s in zip(args, sig.args)), sig.result)


def builder(name: str) -> Callable[..., Expr]:
    """The builder of registry row ``name``'s constructor, by its DSL name (``builder("tile")(x, r)``;
    a row registered at runtime gets one too)."""
    if name not in signatures():
        raise KeyError(f"{name!r} is no DSL builder of eqsat.ops")
    fn = lambda *args: _call(name, *args)  # noqa: E731
    fn.__name__ = name
    return fn


def narrow(x, dim, start, length): return _call("narrow", x, dim, start, length)
def reshape(x, shape): return _call("reshape", x, shape)
def permute(x, perm): return _call("permute", x, perm)
def expand(x, shape): return _call("expand", x, shape)
def unsqueeze(x, dim): return _call("unsqueeze", x, dim)
def squeeze(x, dim): return _call("squeeze", x, dim)
def contiguous(x): return _call("contiguous", x)
def cat(tensors, dim): return _call("cat", tensors, dim)
def stack(tensors, dim): return _call("stack", tensors, dim)
def split(x, sizes, dim): return _call("split", x, sizes, dim)
def linear(x, w, b): return _call("linear", x, w, b)
def mm(a, b): return _call("mm", a, b)
def bmm(a, b): return _call("bmm", a, b)
def matmul(a, b): return _call("matmul", a, b)
def addmm(c, a, b): return _call("addmm", c, a, b)
def baddbmm(c, a, b): return _call("baddbmm", c, a, b)
def unary(key, x): return _call("unary", key, x)
def binary(key, x, y): return _call("binary", key, x, y)
def ternary(key, a, b, c): return _call("ternary", key, a, b, c)
def reduce(key, x, dims, keepdim): return _call("reduce", key, x, dims, keepdim)
def softmax(x, dim): return _call("softmax", "softmax", x, dim)
def log_softmax(x, dim): return _call("softmax", "log_softmax", x, dim)
def where(cond, x, y): return ternary("where", cond, x, y)
def view(x, shape): return reshape(x, shape)


# Pointwise ops by their torch names: relu(x), add(x, y), where(c, x, y) (eqsat.ops is the table).
def pointwise_op(name: str) -> Callable[..., Expr]:
    """The builder of registered pointwise op ``name``: ``pointwise_op("relu")(x)``."""
    arity = ops.pointwise_arity(name)
    if arity is None:
        raise KeyError(f"{name!r} is no pointwise op in eqsat.ops")
    ctor = {1: unary, 2: binary, 3: ternary}[arity]
    fn = lambda *args: ctor(name, *args)  # noqa: E731
    fn.__name__ = name
    return fn


POINTWISE = {op.name: pointwise_op(op.name) for op in ops.pointwise() if op.name != "where"}
globals().update(POINTWISE)


def __getattr__(name: str):
    """Builders of rows with no builder above (added to ``eqsat.ops`` later, e.g. ``tile``)."""
    if name in signatures():
        return builder(name)
    if ops.pointwise_arity(name) is not None:
        return pointwise_op(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- derived functions (rules.derived gives their egglog and Python meaning) ------------------------
def _derived(name: str, *args) -> Expr:
    return DERIVED[name](*args)


def splice(v, i, w) -> Expr:
    """``v[:i] + w + v[i+1:]``: entry i replaced by the list w (unflatten, merged split sizes)."""
    return _derived("splice", v, i, w)


def repeat(n, k) -> Expr:
    """``[k] * n``: a guard ``s == repeat(s.len(), s[0])`` says all sections are equal."""
    return _derived("repeat", n, k)


def insert(v, i, k) -> Expr:
    """``v[:i] + [k] + v[i:]``."""
    return _derived("insert", v, i, k)


def movedim_perm(rank, src, dst) -> Expr:
    """The permutation ``torch.movedim`` applies to a rank-``rank`` tensor."""
    return _derived("movedim-perm", rank, src, dst)


def iota(n) -> Expr:
    """``[0, 1, …, n-1]``: the identity permutation."""
    return _derived("iota", n)


def gather(p, q) -> Expr:
    """``[p[j] for j in q]``: ``x.permute(p).permute(q) == x.permute(gather(p, q))``."""
    return _derived("gather", p, q)


def lead_perm(p, d) -> Expr:
    """``[d] + [j + (j >= d) for j in p]``: permute ``p`` on a tensor given a new axis at ``d``, with
    that axis moved first."""
    return _derived("lead-perm", p, d)


def offset(sizes, i) -> Expr:
    """``sum(sizes[:i])``: where piece i of a split starts."""
    return _derived("offset", sizes, i)


def cat_extent(tensors, d) -> Expr:
    """``sum(t.shape[d] for t in tensors)``: the extent of a cat along ``d``."""
    return _derived("cat-extent", tensors, d)


def list_len(tensors) -> Expr:
    """The number of tensors in a list."""
    return _derived("list-len", tensors)


def reduced(shape, dims, keepdim) -> Expr:
    """A reduction's result shape: the (sorted) ``dims`` of ``shape`` set to 1 (``keepdim``) or removed."""
    return _derived("reduced", shape, dims, keepdim)


def rank(t: Expr) -> Expr:
    """The rank of a tensor term as an int expression, without asking the shape analysis of a
    term the replacement builds (its shape does not exist yet when the rule's query runs)."""
    if isinstance(t, Call) and t.fn in ("View", "Permute", "Expand"):
        return vec_len(t.args[1])
    if isinstance(t, Call) and t.fn == "Unsqueeze":
        return rank(t.args[0]) + 1
    if isinstance(t, Call) and t.fn == "Squeeze":
        return rank(t.args[0]) - 1
    if isinstance(t, Call) and t.fn in ("Narrow", "Contiguous", "Unary"):
        return rank(t.args[-1] if t.fn == "Unary" else t.args[0])
    return t.ndim


def vec_len(v: Expr) -> Expr:
    """Length of an int-list term, symbolically (see ``rank``)."""
    if isinstance(v, Call):
        if v.fn == "vec-of":
            return Lit(len(v.args), INT)
        if v.fn == "splice":
            return vec_len(v.args[0]) - 1 + vec_len(v.args[2])
        if v.fn == "insert":
            return vec_len(v.args[0]) + 1
        if v.fn == "vec-remove":
            return vec_len(v.args[0]) - 1
        if v.fn == "vec-set":
            return vec_len(v.args[0])
        if v.fn == "vec-append":
            return vec_len(v.args[0]) + vec_len(v.args[1])
        if v.fn in ("repeat", "movedim-perm", "iota"):
            return v.args[0]
        if v.fn == "gather":
            return vec_len(v.args[1])
    return v.len()


def movedim(x: Expr, src, dst) -> Expr:
    """``torch.movedim(x, src, dst)`` as a permute."""
    return permute(x, movedim_perm(rank(x), src, dst))


# -- rules ---------------------------------------------------------------------------------------
@dataclass(eq=False)
class DslRule:
    """``lhs`` ⇒ ``rhs`` when every guard holds and every ``given`` term exists in the e-graph (and
    ``rhs`` ⇒ ``lhs`` too if ``bidirectional``). A given term binds variables the pattern cannot reach:
    another term of the program this one's equality depends on."""

    name: str
    lhs: Expr
    rhs: Expr
    when: list = field(default_factory=list)
    family: str = "user"
    doc: str = ""
    bidirectional: bool = False
    given: list = field(default_factory=list)

    def __post_init__(self):
        _identifier("rule name", self.name)
        _identifier(f"rule {self.name!r}: family", self.family)
        if self.given and self.bidirectional:
            raise RuleError(f"rule {self.name!r}: given=[...] binds variables for one direction only")
        if not all(isinstance(g, Call) for g in self.given):
            raise RuleError(f"rule {self.name!r}: given=[...] takes terms such as `split(x, s, d)`")
        for side, t in (("pattern", self.lhs), ("replacement", self.rhs)):
            if not isinstance(t, Expr) or t.sort != TENSOR:
                raise RuleError(f"rule {self.name!r}: the {side} must be a tensor term, got {t!r}")
        bad = [g for g in self.when if not isinstance(g, Guard)]
        if bad:
            raise RuleError(f"rule {self.name!r}: when=[...] takes DSL comparisons such as "
                            f"`x.shape[d] == 4`, got {bad[0]!r}")
        if not self.doc:
            arrow = " <=> " if self.bidirectional else " => "
            guard = " if " + " and ".join(repr(g) for g in self.when) if self.when else ""
            self.doc = f"{self.lhs!r}{arrow}{self.rhs!r}{guard}"

    def compile(self):
        return compile_rule(self)


def rewrite(name: str, lhs: Expr, rhs: Expr, when: Iterable[Guard] = (), family: str = "user",
            doc: str = "", given: Iterable[Expr] = ()) -> DslRule:
    return DslRule(name, lhs, rhs, list(when), family, doc, given=list(given))


def birewrite(name: str, lhs: Expr, rhs: Expr, when: Iterable[Guard] = (), family: str = "user",
              doc: str = "") -> DslRule:
    """Both directions: the guard must only use variables both sides bind."""
    return DslRule(name, lhs, rhs, list(when), family, doc, bidirectional=True)
