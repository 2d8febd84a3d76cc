"""Symbolic sizes inside the engine's integer sizes: a positional encoding of linear size expressions.

The engine keeps ``i64`` sizes (shape facts, split sizes, narrow bounds, view shapes) and the rules
compare and add them. A graph with symbolic sizes (``torch.compile(dynamic=True)``, ``mark_dynamic``,
automatic dynamic, a ``SymInt`` argument) is lowered by writing every size as a linear form
``c0 + c1·a1 + c2·a2 + c3·a3`` over at most ``MAX_ATOMS`` *atoms* (a symbol such as ``s77``, or a non-linear
sub-expression such as ``s27//4`` kept whole), encoded as the integer

    c0 + c1·2^24 + c2·2^37 + c3·2^50      (CONST_BITS = 24, ATOM_BITS = 13)

with balanced digits. The encoding is additive (``enc(x) + enc(y) == enc(x + y)``,
``n·enc(x) == enc(n·x)``) and injective while every digit stays inside its field, so the sums and
equality tests the rules do on sizes (cat extents, split offsets, "all pieces have the same batch
dim", "split sizes sum to the dim") are exactly the symbolic ones: no value the engine derives is a
guess at the hint. A size outside the fields (a literal of 2^23 or more, a coefficient of 2^12 or
more, a fourth atom) makes lowering refuse the graph (``symbolic size: ...``). Products of two symbolic sizes are never
formed (callers use :func:`product`).

``SizeTable`` maps atoms to their size hints (Dynamo's example values) so the cost model prices a
symbolic graph exactly as the static graph of its hint, and raising turns every encoded size back
into an expression (:class:`Linear`). The table is torch-free: atoms are opaque keys here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable, Iterable, Sequence

CONST_BITS = 24
ATOM_BITS = 13
MAX_ATOMS = 3
CONST_LIMIT = 1 << (CONST_BITS - 1)   # |c0| must stay below: literals in a symbolic graph too
COEF_LIMIT = 1 << (ATOM_BITS - 1)     # |ci| must stay below


class SizeOverflow(ValueError):
    """A size the encoding cannot represent exactly (too large, or too many atoms)."""


@dataclass(frozen=True)
class Linear:
    """``const + Σ coef·atom``: a symbolic size read back from an encoded integer (raising)."""

    const: int
    terms: tuple[tuple[Hashable, int], ...]  # (atom, coefficient), coefficient != 0

    def __add__(self, other: Any) -> "Linear":
        if isinstance(other, int):
            return Linear(self.const + other, self.terms)
        if isinstance(other, Linear):
            coefs = dict(self.terms)
            for atom, c in other.terms:
                coefs[atom] = coefs.get(atom, 0) + c
            return Linear(self.const + other.const, tuple((a, c) for a, c in coefs.items() if c))
        return NotImplemented

    __radd__ = __add__


def _balanced(v: int, bits: int) -> tuple[int, int]:
    """(digit, rest) with ``v == digit + rest·2^bits`` and ``-2^(bits-1) <= digit < 2^(bits-1)``."""
    half = 1 << (bits - 1)
    digit = ((v + half) & ((1 << bits) - 1)) - half
    return digit, (v - digit) >> bits


class SizeTable:
    """The atoms of one graph, their hints, and the encoding of sizes over them."""

    def __init__(self):
        self.atoms: list[Hashable] = []
        self.hints: list[int] = []

    def __bool__(self) -> bool:
        return bool(self.atoms)

    def atom(self, key: Hashable, hint: int) -> int:
        """The index of atom ``key`` (registered on first use, with its hint)."""
        if key in self.atoms:
            return self.atoms.index(key)
        if len(self.atoms) >= MAX_ATOMS:
            raise SizeOverflow(f"more than {MAX_ATOMS} symbolic size atoms ({self.atoms + [key]})")
        self.atoms.append(key)
        self.hints.append(int(hint))
        return len(self.atoms) - 1

    def encode(self, const: int, coefs: dict[int, int]) -> int:
        """The integer of ``const + Σ coefs[i]·atom_i``."""
        if not -CONST_LIMIT < const < CONST_LIMIT:
            raise SizeOverflow(f"size constant {const} outside ±2^{CONST_BITS - 1}")
        v = const
        for i, c in coefs.items():
            if not -COEF_LIMIT < c < COEF_LIMIT:
                raise SizeOverflow(f"size coefficient {c} outside ±2^{ATOM_BITS - 1}")
            v += c << (CONST_BITS + ATOM_BITS * i)
        return v

    def literal(self, v: int) -> int:
        """A plain integer size of a symbolic graph: it must not collide with an encoded one."""
        return self.encode(int(v), {})

    def decode(self, v: int) -> tuple[int, dict[int, int]] | None:
        """(const, {atom index: coefficient}) of an encoded integer; None when ``v`` is no
        encoding over this table's atoms (a digit carried out of its field)."""
        const, rest = _balanced(int(v), CONST_BITS)
        coefs: dict[int, int] = {}
        for i in range(len(self.atoms)):
            c, rest = _balanced(rest, ATOM_BITS)
            if c:
                coefs[i] = c
        return (const, coefs) if rest == 0 else None

    def is_constant(self, v: int) -> bool:
        d = self.decode(v)
        return d is not None and not d[1]

    def hint(self, v: int) -> int | None:
        """The value of size ``v`` at the hints; None when it is no encoding."""
        d = self.decode(v)
        if d is None:
            return None
        const, coefs = d
        return const + sum(c * self.hints[i] for i, c in coefs.items())

    def hinted(self, shape: Sequence[int]) -> tuple[int, ...] | None:
        out = tuple(self.hint(s) for s in shape)
        return None if any(s is None or s < 0 for s in out) else out

    def linear(self, v: int) -> int | Linear:
        """Size ``v`` as raising writes it: an int when constant, else a :class:`Linear`."""
        d = self.decode(v)
        if d is None:
            raise SizeOverflow(f"{v} is no size over the atoms {self.atoms}")
        const, coefs = d
        if not coefs:
            return const
        return Linear(const, tuple((self.atoms[i], c) for i, c in sorted(coefs.items())))


def product(sizes: Iterable[int], table: SizeTable | None) -> int | None:
    """The product of encoded sizes, or None when two factors are symbolic (not linear)."""
    out, symbolic = 1, False
    for s in sizes:
        if table and not table.is_constant(s):
            if symbolic:
                return None
            symbolic = True
            out = out * s
        else:
            out = out * (table.decode(s)[0] if table else s)
    return out if not symbolic or table is None else _times(out, table)


def _times(v: int, table: SizeTable) -> int | None:
    d = table.decode(v)
    if d is None:
        return None
    try:
        return table.encode(*d)
    except SizeOverflow:
        return None


def hint_shapes(shapes: dict[str, tuple], table: SizeTable) -> dict[str, tuple]:
    """Shape facts of an e-graph at the hints; a shape that is no encoding is dropped (unknown)."""
    out = {}
    for cls, shape in shapes.items():
        h = table.hinted(shape)
        if h is not None:
            out[cls] = h
    return out
