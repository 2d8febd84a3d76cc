"""The rule DSL: a rule is a pattern, a replacement and guards, written with torch-named constructors.

    x = tensor("x"); s = ivec("s"); d, e = ints("d e")
    rewrite("stack_split_all", stack(pieces(split(x, s, d)), e),
            movedim(reshape(x, splice(x.shape, d, [s.len(), s[0]])), d, e),
            when=[s == repeat(s.len(), s[0])], family="split_cat")

Rule expressions are the engine's typed rule language (``eqsat.rulelang``: variables, literals and
calls; a pattern, unlike the engine's ``eqsat.terms.Term``, has variables). Ints, int lists and op
keys overload Python's operators, so a guard reads ``x.shape[d] % 8 == 0``; a comparison builds a
``Guard``, never a bool. ``eqsat_rules.compile`` turns a ``DslRule`` into typed clauses; ``eqsat_rules.checker``
evaluates the same trees with torch. Nothing here runs Python during saturation.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Iterable

from eqsat import ops
from eqsat.ops import Ctor
from eqsat.rulelang import (DTYPE, IDENTIFIER, INT, IVEC, STR, TENSOR, TLIST, TTUPLE, Call, Expr,  # noqa: F401
                            Guard, ListExpr, Lit, Var, cons, imax, lift, nil, vec)

from eqsat_rules.compile import compile_rule
from eqsat_rules.derived import DERIVED
from eqsat_rules.patterns import Each, Pieces, RuleError, each, pieces  # noqa: F401

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


def pointwise_op(name: str) -> Callable[..., Expr]:
    """The builder of registered pointwise op ``name``: ``pointwise_op("relu")(x)``."""
    arity = ops.pointwise_arity(name)
    if arity is None:
        raise KeyError(f"{name!r} is no pointwise op in eqsat.ops")
    ctor = {1: unary, 2: binary, 3: ternary}[arity]
    fn = lambda *args: ctor(name, *args)  # noqa: E731
    fn.__name__ = name
    return fn


# Pointwise ops by their torch names, one builder per row of eqsat.ops (``where`` above; rows registered
# later are served by ``pointwise_op`` and the module ``__getattr__``). tests/rules/test_dsl.py checks this
# list against the registry and prints the line a new row needs.
def relu(x: Expr) -> Expr: return unary("relu", x)
def gelu(x: Expr) -> Expr: return unary("gelu", x)
def silu(x: Expr) -> Expr: return unary("silu", x)
def sigmoid(x: Expr) -> Expr: return unary("sigmoid", x)
def tanh(x: Expr) -> Expr: return unary("tanh", x)
def exp(x: Expr) -> Expr: return unary("exp", x)
def exp2(x: Expr) -> Expr: return unary("exp2", x)
def expm1(x: Expr) -> Expr: return unary("expm1", x)
def log(x: Expr) -> Expr: return unary("log", x)
def log1p(x: Expr) -> Expr: return unary("log1p", x)
def log2(x: Expr) -> Expr: return unary("log2", x)
def log10(x: Expr) -> Expr: return unary("log10", x)
def neg(x: Expr) -> Expr: return unary("neg", x)
def abs(x: Expr) -> Expr: return unary("abs", x)
def sqrt(x: Expr) -> Expr: return unary("sqrt", x)
def rsqrt(x: Expr) -> Expr: return unary("rsqrt", x)
def reciprocal(x: Expr) -> Expr: return unary("reciprocal", x)
def sin(x: Expr) -> Expr: return unary("sin", x)
def cos(x: Expr) -> Expr: return unary("cos", x)
def erf(x: Expr) -> Expr: return unary("erf", x)
def floor(x: Expr) -> Expr: return unary("floor", x)
def ceil(x: Expr) -> Expr: return unary("ceil", x)
def round(x: Expr) -> Expr: return unary("round", x)
def trunc(x: Expr) -> Expr: return unary("trunc", x)
def sign(x: Expr) -> Expr: return unary("sign", x)
def logical_not(x: Expr) -> Expr: return unary("logical_not", x)
def bitwise_not(x: Expr) -> Expr: return unary("bitwise_not", x)
def isnan(x: Expr) -> Expr: return unary("isnan", x)
def isinf(x: Expr) -> Expr: return unary("isinf", x)
def isfinite(x: Expr) -> Expr: return unary("isfinite", x)
def square(x: Expr) -> Expr: return unary("square", x)
def nan_to_num(x: Expr) -> Expr: return unary("nan_to_num", x)
def clamp(x: Expr) -> Expr: return unary("clamp", x)
def hardtanh(x: Expr) -> Expr: return unary("hardtanh", x)
def hardsigmoid(x: Expr) -> Expr: return unary("hardsigmoid", x)
def hardswish(x: Expr) -> Expr: return unary("hardswish", x)
def leaky_relu(x: Expr) -> Expr: return unary("leaky_relu", x)
def elu(x: Expr) -> Expr: return unary("elu", x)
def selu(x: Expr) -> Expr: return unary("selu", x)
def celu(x: Expr) -> Expr: return unary("celu", x)
def mish(x: Expr) -> Expr: return unary("mish", x)
def softplus(x: Expr) -> Expr: return unary("softplus", x)
def relu6(x: Expr) -> Expr: return unary("relu6", x)
def logit(x: Expr) -> Expr: return unary("logit", x)
def sgn(x: Expr) -> Expr: return unary("sgn", x)
def frac(x: Expr) -> Expr: return unary("frac", x)
def to_dtype(x: Expr) -> Expr: return unary("to_dtype", x)
def add(x: Expr, y: Expr) -> Expr: return binary("add", x, y)
def sub(x: Expr, y: Expr) -> Expr: return binary("sub", x, y)
def mul(x: Expr, y: Expr) -> Expr: return binary("mul", x, y)
def div(x: Expr, y: Expr) -> Expr: return binary("div", x, y)
def pow(x: Expr, y: Expr) -> Expr: return binary("pow", x, y)
def maximum(x: Expr, y: Expr) -> Expr: return binary("maximum", x, y)
def minimum(x: Expr, y: Expr) -> Expr: return binary("minimum", x, y)
def fmod(x: Expr, y: Expr) -> Expr: return binary("fmod", x, y)
def remainder(x: Expr, y: Expr) -> Expr: return binary("remainder", x, y)
def atan2(x: Expr, y: Expr) -> Expr: return binary("atan2", x, y)
def eq(x: Expr, y: Expr) -> Expr: return binary("eq", x, y)
def ne(x: Expr, y: Expr) -> Expr: return binary("ne", x, y)
def lt(x: Expr, y: Expr) -> Expr: return binary("lt", x, y)
def le(x: Expr, y: Expr) -> Expr: return binary("le", x, y)
def gt(x: Expr, y: Expr) -> Expr: return binary("gt", x, y)
def ge(x: Expr, y: Expr) -> Expr: return binary("ge", x, y)
def logical_and(x: Expr, y: Expr) -> Expr: return binary("logical_and", x, y)
def logical_or(x: Expr, y: Expr) -> Expr: return binary("logical_or", x, y)
def logical_xor(x: Expr, y: Expr) -> Expr: return binary("logical_xor", x, y)
def bitwise_and(x: Expr, y: Expr) -> Expr: return binary("bitwise_and", x, y)
def bitwise_or(x: Expr, y: Expr) -> Expr: return binary("bitwise_or", x, y)
def bitwise_xor(x: Expr, y: Expr) -> Expr: return binary("bitwise_xor", x, y)
def floor_divide(x: Expr, y: Expr) -> Expr: return binary("floor_divide", x, y)
def true_divide(x: Expr, y: Expr) -> Expr: return binary("true_divide", x, y)
def rsub(x: Expr, y: Expr) -> Expr: return binary("rsub", x, y)
def addcmul(a: Expr, b: Expr, c: Expr) -> Expr: return ternary("addcmul", a, b, c)
def addcdiv(a: Expr, b: Expr, c: Expr) -> Expr: return ternary("addcdiv", a, b, c)
def lerp(a: Expr, b: Expr, c: Expr) -> Expr: return ternary("lerp", a, b, c)


def __getattr__(name: str):
    """Builders of rows with no builder above (added to ``eqsat.ops`` later, e.g. ``tile``)."""
    if name in signatures():
        return builder(name)
    if ops.pointwise_arity(name) is not None:
        return pointwise_op(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- derived functions (eqsat_rules.derived gives their egglog and Python meaning) ------------------------
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
    if isinstance(t, Call) and t.fn in (Ctor.VIEW, Ctor.PERMUTE, Ctor.EXPAND):
        return vec_len(t.args[1])
    if isinstance(t, Call) and t.fn == Ctor.UNSQUEEZE:
        return rank(t.args[0]) + 1
    if isinstance(t, Call) and t.fn == Ctor.SQUEEZE:
        return rank(t.args[0]) - 1
    if isinstance(t, Call) and t.fn in (Ctor.NARROW, Ctor.CONTIGUOUS, Ctor.UNARY):
        return rank(t.args[-1] if t.fn == Ctor.UNARY else t.args[0])
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
