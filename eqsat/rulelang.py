"""The typed rule language: terms, facts, actions and declarations as Python values.

Every rule the engine runs is written with these (the DSL's rewrites compile to them, the analysis
and the hand-written rules are built from them directly) and only ``eqsat.to_egglog`` turns them into
egglog text. A term is a tree (``Var``, ``Lit``, ``Call``, ``ListExpr``); ints, int lists and tensors
overload Python's operators, so a fact reads ``x.shape[d] % 8 == 0`` and an index ``S[i + 1]``: a
comparison builds a ``Guard``, never a bool. A clause is ``rule(*facts).then(*actions)``; relations
and functions are declared values, called to build their rows (``CatCell(l, d)``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

from . import ops

# Sorts (egglog's, plus DTYPE for the dtype analysis' strings and UNIT for relation rows).
TENSOR, INT, IVEC, STR, TLIST, TTUPLE, DTYPE, UNIT = (
    ops.TENSOR, ops.INT, ops.IVEC, ops.STRING, ops.TLIST, ops.TTUPLE, "Dtype", "Unit")
EGG_SORT = {TENSOR: "Tensor", INT: "i64", IVEC: "IVec", STR: "String", TLIST: "TList", TTUPLE: "TTuple",
            DTYPE: "String"}

# What a variable may be called; a leading _ is the compilers' own (``_root``, ``_s1``, …).
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What a relation, function or constructor may be called (egglog allows dashes: ``vec-get``).
SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")


class Expr:
    """A term; ints, int lists, dtypes and op keys compare and compute into new terms."""

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

    def __getitem__(self, i):
        if self.sort == IVEC:
            return Call("vec-get", (self, lift(i, INT)), INT)
        if self.sort == TTUPLE:
            return Call(ops.Ctor.GET, (self, lift(i, INT)), TENSOR)
        raise TypeError(f"cannot index a {self.sort}")

    def len(self) -> "Expr":
        return Call("vec-length", (self._need(IVEC),), INT)

    def set(self, i, v) -> "Expr":
        return Call("vec-set", (self._need(IVEC), lift(i, INT), lift(v, INT)), IVEC)

    def remove(self, i) -> "Expr":
        return Call("vec-remove", (self._need(IVEC), lift(i, INT)), IVEC)

    def push(self, v) -> "Expr":
        return Call("vec-push", (self._need(IVEC), lift(v, INT)), IVEC)

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
        return self.show()

    def show(self) -> str:
        """The term the way a rule author writes it (torch spelling)."""
        raise NotImplementedError


@dataclass(eq=False, repr=False)
class Var(Expr):
    name: str
    sort: str

    def __post_init__(self):
        if not isinstance(self.name, str) or not IDENTIFIER.fullmatch(self.name):
            raise ValueError(f"variable name {self.name!r} must be an identifier ({IDENTIFIER.pattern})")

    def show(self) -> str:
        return self.name


@dataclass(eq=False, repr=False)
class Lit(Expr):
    value: object
    sort: str

    def show(self) -> str:
        return repr(self.value)


_INFIX = {"+": "+", "-": "-", "*": "*", "/": "//", "%": "%"}


@lru_cache(maxsize=4)
def _torch_names(version: int) -> dict[str, str]:
    """Constructor → the DSL builder name rules are written with (``Narrow`` → ``narrow``)."""
    out: dict[str, str] = {}
    for op in ops.ALL_OPS:
        if ops.builder_name(op) is not None:
            out.setdefault(op.ctor, ops.builder_name(op))
    return out


@dataclass(eq=False, repr=False)
class Call(Expr):
    """``fn`` is an egglog constructor (``Narrow``), primitive (``vec-get``), analysis (``shape``),
    derived function (``splice``) or relation (sort ``UNIT``)."""

    fn: str
    args: tuple
    sort: str

    def show(self) -> str:
        a, fn = self.args, self.fn
        if fn in _INFIX:
            return f"({a[0]!r} {_INFIX[fn]} {a[1]!r})"
        if fn == "vec-of":
            return "[" + ", ".join(repr(x) for x in a) + "]"
        if fn in ("vec-get", ops.Ctor.GET):
            return f"{a[0]!r}[{a[1]!r}]"
        if fn in ("shape", "dtype"):
            return f"{a[0]!r}.{fn}"
        if fn == "vec-length" and isinstance(a[0], Call) and a[0].fn == "shape":
            return f"{a[0].args[0]!r}.ndim"
        if fn == "vec-length":
            return f"len({a[0]!r})"
        if fn == "vec-append":
            return f"{a[0]!r} + {a[1]!r}"
        if fn in ("vec-set", "vec-remove", "vec-push"):
            return f"{a[0]!r}.{fn[4:]}({', '.join(repr(x) for x in a[1:])})"
        if fn in ops.Role.KEYED and isinstance(a[0], Lit):
            return f"{a[0].value}({', '.join(repr(x) for x in a[1:])})"
        name = _torch_names(ops.version()).get(fn, fn.replace("-", "_"))
        return f"{name}({', '.join(repr(x) for x in a)})"


@dataclass(eq=False, repr=False)
class ListExpr(Expr):
    """A tensor list: fixed items, then an optional list variable as the tail (``[a, b, *rest]``)."""

    items: tuple
    tail: Expr | None = None
    sort: str = TLIST

    def show(self) -> str:
        items = [repr(i) for i in self.items] + ([f"*{self.tail!r}"] if self.tail is not None else [])
        return "[" + ", ".join(items) + "]"


@dataclass(eq=False)
class Splat:
    var: Expr


@dataclass(eq=False, repr=False)
class Guard:
    """A fact ``lhs op rhs`` (op one of = != < <= > >=); ``=`` with an unbound side binds it."""

    op: str
    lhs: Expr
    rhs: Expr

    def __bool__(self):
        raise TypeError("a rule comparison is a guard, not a bool: put it in `when=[...]`")

    def __repr__(self) -> str:
        return f"{self.lhs!r} {'==' if self.op == '=' else self.op} {self.rhs!r}"


def lift(v, sort: str) -> Expr:
    """A Python value as a term of ``sort``: ints, strings, lists (int lists or tensor lists)."""
    if isinstance(v, Expr):
        if v.sort != sort and {v.sort, sort} != {STR, DTYPE}:  # both egglog Strings
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


def variables(names: str, sort: str) -> list[Var]:
    """Variables of one sort (``variables("l r", TLIST)``), leading ``_`` allowed."""
    return [Var(n, sort) for n in names.split()]


def lit(value: int | str) -> Lit:
    """A literal where Python would otherwise put it on the right (``lit(1) == s[d]``)."""
    return Lit(value, INT if isinstance(value, int) else STR)


def vec(*items) -> Expr:
    """``(vec-of items…)``; ``vec()`` is the empty int list."""
    if not items:
        return Call("vec-pop", (Call("vec-of", (Lit(0, INT),), IVEC),), IVEC)
    return Call("vec-of", tuple(lift(i, INT) for i in items), IVEC)


def imax(a, b) -> Expr:
    return Call("max", (lift(a, INT), lift(b, INT)), INT)


def ctor(name: str, *args) -> Call:
    """A term of the registry's constructor ``name`` (``ctor("Split", x, s, d)``)."""
    sig = ops.constructors().get(name)
    if sig is None:
        raise KeyError(f"no constructor {name!r} in eqsat.ops")
    if len(args) != len(sig[0]):
        raise TypeError(f"{name} takes {len(sig[0])} arguments, got {len(args)}")
    return Call(name, tuple(lift(a, s) for a, s in zip(args, sig[0])), sig[1])


def cons(head, tail) -> Expr:
    return Call(ops.Ctor.CONS, (lift(head, TENSOR), lift(tail, TLIST)), TLIST)


def nil() -> Expr:
    return Call(ops.Ctor.NIL, (), TLIST)


# -- declarations -----------------------------------------------------------------------------------
def _symbol(name: str) -> str:
    if not isinstance(name, str) or not SYMBOL.fullmatch(name):
        raise ValueError(f"egglog name {name!r} must match {SYMBOL.pattern}")
    return name


@dataclass(frozen=True)
class Relation:
    """A set of rows, declared once per session; ``R(a, b)`` is a fact in a query, a row in an action."""

    name: str
    sorts: tuple[str, ...]

    def __post_init__(self):
        _symbol(self.name)

    def __call__(self, *args) -> Call:
        if len(args) != len(self.sorts):
            raise TypeError(f"{self.name} takes {len(self.sorts)} arguments, got {len(args)}")
        return Call(self.name, tuple(lift(a, s) for a, s in zip(args, self.sorts)), UNIT)


@dataclass(frozen=True)
class Function:
    """A table from arguments to one value; ``merge`` keeps the ``"old"`` value or the ``"min"``."""

    name: str
    args: tuple[str, ...]
    out: str
    merge: str = "old"

    def __post_init__(self):
        _symbol(self.name)
        if self.merge not in ("old", "min"):
            raise ValueError(f"function {self.name}: merge must be 'old' or 'min', not {self.merge!r}")

    def __call__(self, *args) -> Call:
        if len(args) != len(self.args):
            raise TypeError(f"{self.name} takes {len(self.args)} arguments, got {len(args)}")
        return Call(self.name, tuple(lift(a, s) for a, s in zip(args, self.args)), self.out)


# -- clauses ----------------------------------------------------------------------------------------
@dataclass(eq=False)
class Union:
    a: Expr
    b: Expr


@dataclass(eq=False)
class Set:
    target: Call
    value: Expr


@dataclass(eq=False)
class Delete:
    """Remove a row (a relation row, a function entry or a constructor's e-node) from its table."""

    row: Call


def union(a: Expr, b: Expr) -> Union:
    return Union(a, b)


def set_(target: Call, value) -> Set:
    return Set(target, lift(value, target.sort))


@dataclass(eq=False)
class Clause:
    """When every fact holds (guards, relation rows), run the actions (unions, sets, rows, terms)."""

    facts: tuple
    actions: tuple


class _Query:
    def __init__(self, facts: Iterable):
        self.facts = tuple(facts)

    def then(self, *actions) -> Clause:
        return Clause(self.facts, actions)


def rule(*facts) -> _Query:
    """``rule(e == narrow(x, d, a, n), s == x.shape).then(set_(e.shape, s.set(d, n)))``."""
    return _Query(facts)


Decl = Relation | Function | Clause  # what a rule needs declared once: tables and analysis clauses
