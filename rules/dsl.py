"""The rule DSL: a rule is a pattern, a replacement and guards, written with torch-named constructors.

    x = tensor("x"); s = ivec("s"); d, e = ints("d e")
    rewrite("stack_split_all", stack(pieces(split(x, s, d)), e),
            movedim(reshape(x, splice(x.shape, d, [s.len(), s[0]])), d, e),
            when=[s == repeat(s.len(), s[0])], family="split_cat")

Rule expressions are plain trees (``Expr``: variables, literals and calls; a pattern, unlike the
engine's ``eqsat.terms.Term``, has variables). Ints, int lists and op keys overload Python's
operators, so a guard reads ``x.shape[d] % 8 == 0``; a comparison builds a ``Guard``, never a bool. ``rules.compile`` turns a ``DslRule`` into egglog text; ``rules.checker`` evaluates the same
trees with torch. Nothing here runs Python during saturation.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterable

from eqsat import ops
from eqsat.rule import IDENTIFIER

class RuleError(ValueError):
    """A malformed rule, refused before it reaches the e-graph."""


_VAR_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")  # a leading _ is the compiler's own (_root, _s1, …)


def _identifier(what: str, value, pattern: re.Pattern = IDENTIFIER) -> str:
    """``value`` if it is an identifier: names are pasted into egglog text, so nothing else may pass."""
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise RuleError(f"{what} {value!r} must be an identifier ({pattern.pattern})")
    return value


# Sorts of DSL terms (egglog sorts, plus DTYPE for the dtype analysis' strings).
TENSOR, INT, IVEC, STR, TLIST, TTUPLE, DTYPE = "Tensor", "i64", "IVec", "String", "TList", "TTuple", "Dtype"


class Expr:
    """A DSL term; ints, int lists, dtypes and op keys compare and compute into new terms."""

    sort: str

    # -- ints and int lists ---------------------------------------------------------------------
    def _bin(self, op: str, other, flip=False):
        other = lift(other, INT if self.sort == INT else self.sort)
        a, b = (other, self) if flip else (self, other)
        if self.sort == IVEC and op == "+":
            return Call("vec-append", (a, b), IVEC)
        if self.sort != INT:
            raise TypeError(f"{op} needs ints, got {self.sort}")
        return Call(op, (a, b), INT)

    def __add__(self, o): return self._bin("+", o)
    def __radd__(self, o): return self._bin("+", o, True)
    def __sub__(self, o): return self._bin("-", o)
    def __rsub__(self, o): return self._bin("-", o, True)
    def __mul__(self, o): return self._bin("*", o)
    def __rmul__(self, o): return self._bin("*", o, True)
    def __floordiv__(self, o): return self._bin("/", o)
    def __mod__(self, o): return self._bin("%", o)

    def _cmp(self, op: str, other) -> "Guard":
        return Guard(op, self, lift(other, self.sort))

    def __eq__(self, o): return self._cmp("=", o)        # type: ignore[override]
    def __ne__(self, o): return self._cmp("!=", o)       # type: ignore[override]
    def __lt__(self, o): return self._cmp("<", o)
    def __le__(self, o): return self._cmp("<=", o)
    def __gt__(self, o): return self._cmp(">", o)
    def __ge__(self, o): return self._cmp(">=", o)
    __hash__ = object.__hash__

    # -- int lists ------------------------------------------------------------------------------
    def __getitem__(self, i):
        if self.sort == IVEC:
            return Call("vec-get", (self, lift(i, INT)), INT)
        if self.sort == TTUPLE:
            return Call("Get", (self, lift(i, INT)), TENSOR)
        raise TypeError(f"cannot index a {self.sort}")

    def len(self) -> "Expr":
        return Call("vec-length", (self._need(IVEC),), INT)

    def set(self, i, v) -> "Expr":
        return Call("vec-set", (self._need(IVEC), lift(i, INT), lift(v, INT)), IVEC)

    def remove(self, i) -> "Expr":
        return Call("vec-remove", (self._need(IVEC), lift(i, INT)), IVEC)

    # -- tensors --------------------------------------------------------------------------------
    @property
    def shape(self) -> "Expr":
        return Call("shape", (self._need(TENSOR),), IVEC)

    @property
    def dtype(self) -> "Expr":
        return Call("dtype", (self._need(TENSOR),), DTYPE)

    @property
    def ndim(self) -> "Expr":
        return self.shape.len()

    def _need(self, sort: str) -> "Expr":
        if self.sort != sort:
            raise TypeError(f"{self} is a {self.sort}, not a {sort}")
        return self

    def __iter__(self):  # `[a, *rest]`: a list variable spliced as the tail of a list pattern
        if self.sort != TLIST:
            raise TypeError(f"only a list variable can be spliced with *, not {self}")
        yield Splat(self)

    def __repr__(self) -> str:
        from .pretty import show
        return show(self)


@dataclass(eq=False, repr=False)
class Var(Expr):
    name: str
    sort: str


@dataclass(eq=False, repr=False)
class Lit(Expr):
    value: object
    sort: str


@dataclass(eq=False, repr=False)
class Call(Expr):
    """``fn`` is an egglog constructor (``Narrow``), primitive (``vec-get``), analysis (``shape``)
    or derived function (``splice``, see ``rules.derived``)."""

    fn: str
    args: tuple
    sort: str


@dataclass(eq=False, repr=False)
class ListExpr(Expr):
    """A list pattern or value: fixed items, then an optional list variable as the tail."""

    items: tuple
    tail: Expr | None = None
    sort: str = TLIST


@dataclass(eq=False, repr=False)
class Pieces(Expr):
    """List pattern: every piece of ``split`` in order, each wrapped by ``each`` (a template)."""

    split: Expr
    each: Callable[[Expr], Expr] | None = None
    sort: str = TLIST


@dataclass(eq=False, repr=False)
class Each(Expr):
    """List pattern: a list whose every element matches ``template(a, b, …)``; ``outs`` are list
    variables bound to the lists of ``a``s, ``b``s, …, whose elements share one dtype each."""

    template: Callable[..., Expr]
    outs: tuple
    when: Callable[..., list] | None = None
    sort: str = TLIST


@dataclass(eq=False)
class Splat:
    var: Expr


@dataclass(eq=False)
class Guard:
    """A condition ``lhs op rhs`` (op one of = != < <= > >=), compiled to one egglog fact."""

    op: str
    lhs: Expr
    rhs: Expr

    def __bool__(self):
        raise TypeError("a DSL comparison is a guard, not a bool: put it in `when=[...]`")


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


def lift(v, sort: str) -> Expr:
    """A Python value as a term of ``sort``: ints, strings, lists (int lists or tensor lists)."""
    if isinstance(v, Expr):
        if v.sort != sort and not (sort == DTYPE and v.sort == STR):
            raise TypeError(f"expected a {sort}, got {v} ({v.sort})")
        return v
    if isinstance(v, bool):
        raise TypeError("bools are not terms")
    if isinstance(v, int) and sort == INT:
        return Lit(v, INT)
    if isinstance(v, str) and sort in (STR, DTYPE):
        return Lit(v, sort)
    if isinstance(v, (list, tuple)) and sort == IVEC:
        return Call("vec-of", tuple(lift(i, INT) for i in v), IVEC)
    if isinstance(v, (list, tuple)) and sort == TLIST:
        items, tail = list(v), None
        if items and isinstance(items[-1], Splat):
            tail = items.pop().var
        if any(isinstance(i, Splat) for i in items):
            raise TypeError("a *list variable must come last in a list pattern")
        return ListExpr(tuple(lift(i, TENSOR) for i in items), tail)
    raise TypeError(f"cannot use {v!r} as a {sort}")


# -- constructors, named and ordered like torch ------------------------------------------------
@dataclass(frozen=True)
class Sig:
    ctor: str
    args: tuple
    result: str = TENSOR


def _signatures() -> dict[str, Sig]:
    """DSL builder → constructor signature, from the op registry: ops with their own constructor under
    their ``dsl`` name, shared constructors (``unary``, ``reduce``, …) under the constructor's name."""
    sigs: dict[str, Sig] = {}
    for op in ops.ALL_OPS:
        if op.dsl is not None:
            sigs[op.dsl] = Sig(op.ctor, op.args, op.sort)
        elif op.args[:1] == (ops.STRING,) and op.category is not ops.Category.SOURCE and op.sort == TENSOR:
            sigs.setdefault(op.ctor.lower(), Sig(op.ctor, op.args, op.sort))
    return sigs


SIGNATURES: dict[str, Sig] = _signatures()


def _call(name: str, *args) -> Expr:
    sig = SIGNATURES[name]
    if len(args) != len(sig.args):
        raise TypeError(f"{name} takes {len(sig.args)} arguments, got {len(args)}")
    return Call(sig.ctor, tuple(lift(a, s) for a, s in zip(args, sig.args)), sig.result)


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


def pieces(s: Expr, each: Callable[[Expr], Expr] | None = None) -> Pieces:
    """All pieces of split ``s`` in order (optionally each wrapped, e.g. ``lambda p: squeeze(p, d)``)."""
    if not (isinstance(s, Call) and s.fn == "Split"):
        raise TypeError("pieces() takes a split(...) pattern")
    return Pieces(s, each)


def each(template: Callable[..., Expr], *outs: Expr, when: Callable[..., list] | None = None) -> Each:
    """A list whose elements all match ``template``; ``outs`` receive the lists of its arguments."""
    if any(not isinstance(o, Var) or o.sort != TLIST for o in outs):
        raise TypeError("each(): outputs must be list variables")
    return Each(template, tuple(outs), when)


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


# -- derived int-list functions (rules.derived gives their egglog and Python meaning) -------------
def splice(v, i, w) -> Expr:
    """``v[:i] + w + v[i+1:]``: entry i replaced by the list w (unflatten, merged split sizes)."""
    return Call("splice", (lift(v, IVEC), lift(i, INT), lift(w, IVEC)), IVEC)


def repeat(n, k) -> Expr:
    """``[k] * n``: a guard ``s == repeat(s.len(), s[0])`` says all sections are equal."""
    return Call("repeat", (lift(n, INT), lift(k, INT)), IVEC)


def insert(v, i, k) -> Expr:
    """``v[:i] + [k] + v[i:]``."""
    return Call("insert", (lift(v, IVEC), lift(i, INT), lift(k, INT)), IVEC)


def movedim_perm(rank, src, dst) -> Expr:
    """The permutation ``torch.movedim`` applies to a rank-``rank`` tensor."""
    return Call("movedim-perm", (lift(rank, INT), lift(src, INT), lift(dst, INT)), IVEC)


def iota(n) -> Expr:
    """``[0, 1, …, n-1]``: the identity permutation."""
    return Call("iota", (lift(n, INT),), IVEC)


def gather(p, q) -> Expr:
    """``[p[j] for j in q]``: ``x.permute(p).permute(q) == x.permute(gather(p, q))``."""
    return Call("gather", (lift(p, IVEC), lift(q, IVEC)), IVEC)


def lead_perm(p, d) -> Expr:
    """``[d] + [j + (j >= d) for j in p]``: permute ``p`` on a tensor given a new axis at ``d``, with
    that axis moved first."""
    return Call("lead-perm", (lift(p, IVEC), lift(d, INT)), IVEC)


def offset(sizes, i) -> Expr:
    """``sum(sizes[:i])``: where piece i of a split starts."""
    return Call("offset", (lift(sizes, IVEC), lift(i, INT)), INT)


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
            from .pretty import show_guard
            guard = " if " + " and ".join(show_guard(g) for g in self.when) if self.when else ""
            self.doc = f"{self.lhs!r}{arrow}{self.rhs!r}{guard}"

    def compile(self):
        from .compile import compile_rule
        return compile_rule(self)


def rewrite(name: str, lhs: Expr, rhs: Expr, when: Iterable[Guard] = (), family: str = "user",
            doc: str = "", given: Iterable[Expr] = ()) -> DslRule:
    return DslRule(name, lhs, rhs, list(when), family, doc, given=list(given))


def birewrite(name: str, lhs: Expr, rhs: Expr, when: Iterable[Guard] = (), family: str = "user",
              doc: str = "") -> DslRule:
    """Both directions: the guard must only use variables both sides bind."""
    return DslRule(name, lhs, rhs, list(when), family, doc, bidirectional=True)
