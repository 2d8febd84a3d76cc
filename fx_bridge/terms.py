"""Terms as Python values on the way into egglog, and the key table for op attributes.

Lowering builds ``Term(ctor, args)`` values and prints them as egglog text; raising reads e-nodes
back. Pointwise/reduction keys carry non-tensor attributes (``clamp(min=0.0,max=6.0)``); a key table
keeps the decoded attributes so raising never parses text, and interns keys whose repr is not safe
inside an egglog string.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Ref:
    """A tensor (or tuple) already bound with ``let``."""

    let: str


@dataclass(frozen=True)
class TList:
    items: tuple  # of Ref / Term


@dataclass(frozen=True)
class IVec:
    items: tuple[int, ...]


@dataclass(frozen=True)
class Term:
    ctor: str
    args: tuple

    def __str__(self) -> str:
        return render(self)


def render(x: Any) -> str:
    if isinstance(x, Ref):
        return x.let
    if isinstance(x, Term):
        if not x.args:
            return f"({x.ctor})"
        return f"({x.ctor} {' '.join(render(a) for a in x.args)})"
    if isinstance(x, TList):
        out = "(TNil)"
        for item in reversed(x.items):
            out = f"(TCons {render(item)} {out})"
        return out
    if isinstance(x, IVec):
        return f"(vec-of {' '.join(str(int(i)) for i in x.items)})" if x.items else "(vec-empty)"
    if isinstance(x, bool):
        raise TypeError("booleans are not term arguments")
    if isinstance(x, int):
        return str(x)
    if isinstance(x, str):
        return json.dumps(x)
    raise TypeError(f"cannot render {x!r} as an egglog term")


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
