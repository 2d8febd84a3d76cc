"""Terms as Python values on the way into egglog, the program that binds them, and the key table.

Lowering and horizontal fusion build ``Term(ctor, args)`` values and record them in a ``Program``
(``let``, ``same``, shape/dtype facts) which renders them as egglog text here, in the engine, and
``Session.load`` runs it; raising reads e-nodes back. Pointwise/reduction keys carry non-tensor
attributes (``clamp(min=0.0,max=6.0)``); a key table keeps the decoded attributes so raising never
parses text, and interns keys whose repr is not safe inside an egglog string.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from . import ops
from .schema import NAME_CTORS
from .to_egglog import string

_NAME_OF_SORT = {sort: ctor for ctor, sort in NAME_CTORS.items()}


@dataclass(frozen=True)
class Ref:
    """A tensor (or tuple, or list) already bound with ``let``; ``sort`` picks its name constructor."""

    let: str
    sort: str = field(default=ops.TENSOR, compare=False)


@dataclass(frozen=True)
class TList:
    items: tuple  # of Ref / Term
    tail: Ref | None = None  # the rest of the list, bound by name (``Program`` splits long lists)


@dataclass(frozen=True)
class IVec:
    items: tuple[int, ...]


@dataclass(frozen=True)
class Term:
    ctor: str
    args: tuple

    def __str__(self) -> str:
        return render(self)


def render(x: Any, sorts: Mapping[str, str] | None = None) -> str:
    """egglog text of a term value; ``sorts`` (name → sort) overrides the sort of a bare ``Ref(name)``."""
    if isinstance(x, Ref):
        sort = sorts.get(x.let, x.sort) if sorts else x.sort
        return f"({_NAME_OF_SORT[sort]} {string(x.let)})"
    if isinstance(x, Term):
        if not x.args:
            return f"({x.ctor})"
        return f"({x.ctor} {' '.join(render(a, sorts) for a in x.args)})"
    if isinstance(x, TList):
        out = render(x.tail, sorts) if x.tail is not None else "(TNil)"
        for item in reversed(x.items):
            out = f"(TCons {render(item, sorts)} {out})"
        return out
    if isinstance(x, IVec):
        return f"(vec-of {' '.join(str(int(i)) for i in x.items)})" if x.items else "(vec-empty)"
    if isinstance(x, bool):
        raise TypeError("booleans are not term arguments")
    if isinstance(x, int):
        return str(x)
    if isinstance(x, str):
        return string(x)
    raise TypeError(f"cannot render {x!r} as an egglog term")


LIST_SEGMENT = 64  # list cells per egglog command
_LIST_IDS = itertools.count()

# A program's statements, kept as values so a session can load them as text commands or in bulk
# (``eqsat.bulk``): ``("let", name, term)``, ``("same", x, term)``, ``("param", x)``,
# ``("shape", x, dims)``, ``("dtype", x, dtype)``, ``("keeps", key)``.
Statement = tuple


class Program:
    """Typed statements for an e-graph (``Session.load`` runs them), rendered to egglog commands here.

    Kept as a value so one lowered graph can be loaded into several sessions (greedy mode).
    """

    def __init__(self):
        self.statements: list[Statement] = []
        self.sorts: dict[str, str] = {}  # bound name → sort, so ``Ref(name)`` renders as its own sort

    def __len__(self) -> int:
        return len(self.statements)

    @property
    def commands(self) -> tuple[str, ...]:
        """The statements as egglog commands, one each (plus one per segment of a long list)."""
        sorts = dict(self.sorts)
        out: list[str] = []
        for st in self.statements:
            out.append(_command(st, lambda x: render(_short_lists(x, sorts, out), sorts)))
        return tuple(out)

    def let(self, name: str, term: Any) -> Ref:
        """Bind ``term`` to the name ``name``: a row of a name function (``schema.NAME_CTORS``),
        found again by ``EGraphView.lets``."""
        ref = Ref(name, sort_of(term, self.sorts))
        self.sorts[name] = ref.sort
        self.statements.append(("let", name, term))
        return ref

    def same(self, x: Any, term: Any) -> None:
        """``x`` and ``term`` are equal: unioned in one batch when saturation starts (``Session.seed``)."""
        self.statements.append(("same", x, term))

    def mark_param(self, x: Any) -> None:
        """``x`` is a parameter (a runtime value in training, foldable when frozen)."""
        self.statements.append(("param", x))

    def set_shape(self, x: Any, shape: Sequence[int]) -> None:
        self.statements.append(("shape", x, tuple(int(d) for d in shape)))

    def set_dtype(self, x: Any, dtype: str) -> None:
        self.statements.append(("dtype", x, dtype))

    def keeps_dtype(self, key: str) -> None:
        """Op key ``key`` (an op with attributes) keeps a floating dtype, as its op does."""
        self.statements.append(("keeps", key))

    def extend(self, other: "Program") -> None:
        self.statements.extend(other.statements)
        self.sorts.update(other.sorts)

    def prepend(self, other: "Program") -> None:
        """``other``'s statements before this program's own."""
        self.statements[:0] = other.statements
        for name, sort in other.sorts.items():
            self.sorts.setdefault(name, sort)


def _command(st: Statement, r) -> str:
    """One statement's egglog command; ``r`` renders a term value."""
    kind = st[0]
    if kind == "let":
        return f"(set {r(Ref(st[1]))} {r(st[2])})"
    if kind == "same":
        return f"(Same {r(st[1])} {r(st[2])})"
    if kind == "param":
        return f"(IsParam {r(st[1])})"
    if kind == "shape":
        return f"(set (shape {r(st[1])}) {render(IVec(st[2]))})"
    if kind == "dtype":
        return f"(set (dtype {r(st[1])}) {render(st[2])})"
    if kind == "keeps":
        return f"(KeepsDtype {render(st[1])})"
    raise ValueError(f"unknown statement {kind!r}")


def _short_lists(x: Any, sorts: dict[str, str], out: list[str]) -> Any:
    """``x`` with every list longer than ``LIST_SEGMENT`` bound segment by segment from its end (the
    segments' commands appended to ``out``): egglog checks one deeply nested command in time
    quadratic in its depth (a 4,096-long cat: 4 s for the one command)."""
    if isinstance(x, Term):
        return Term(x.ctor, tuple(_short_lists(a, sorts, out) for a in x.args))
    if not isinstance(x, TList):
        return x
    items = tuple(_short_lists(i, sorts, out) for i in x.items)
    tail = x.tail
    for start in reversed(range(LIST_SEGMENT, len(items), LIST_SEGMENT)):
        name = f"$list{next(_LIST_IDS)}"  # unique across programs loaded into one session
        sorts[name] = ops.TLIST
        segment = TList(items[start:start + LIST_SEGMENT], tail)
        out.append(f"(set {render(Ref(name, ops.TLIST))} {render(segment, sorts)})")
        tail = Ref(name, ops.TLIST)
    return TList(items[:LIST_SEGMENT], tail)


def sort_of(x: Any, sorts: Mapping[str, str] | None = None) -> str:
    """The egglog sort of a term value."""
    if isinstance(x, Ref):
        return sorts.get(x.let, x.sort) if sorts else x.sort
    if isinstance(x, TList):
        return ops.TLIST
    if isinstance(x, Term):
        return ops.CTOR_SORT[x.ctor]  # a row registered at runtime included
    raise TypeError(f"{x!r} is not a term")


_SAFE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,=()[]-+ ':/<>")


class KeyTable:
    """Maps (op name, attributes) ↔ the key string stored in the e-graph."""

    def __init__(self):
        self._by_attrs: dict[tuple, str] = {}
        self._decode: dict[str, tuple[str, dict]] = {}

    def key(self, name: str, attrs: dict | None = None) -> str:
        attrs = {k: v for k, v in (attrs or {}).items()}
        canon = (name, tuple(sorted((k, repr(v)) for k, v in attrs.items())))
        if canon in self._by_attrs:
            return self._by_attrs[canon]
        if not attrs:
            key = name
        else:
            text = f"{name}({','.join(f'{k}={v}' for k, v in canon[1])})"
            key = text if set(text) <= _SAFE else f"{name}#{len(self._by_attrs)}"
        self._by_attrs[canon] = key
        self._decode[key] = (name, attrs)
        return key

    def decode(self, key: str) -> tuple[str, dict]:
        """The op name and attributes of a key; a bare name (e.g. written by a rule) has none."""
        return self._decode.get(key, (key, {}))
