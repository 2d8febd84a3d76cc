"""The symbolic size encoding: the engine's integer arithmetic on encoded sizes is the symbolic
arithmetic, decoding never reads a value that is no encoding, and what does not fit is refused."""
import pytest
from hypothesis import given, strategies as st

from eqsat.sizes import (ATOM_BITS, CONST_LIMIT, COEF_LIMIT, Linear, SizeOverflow, SizeTable, hint_shapes,
                         product)

consts = st.integers(-(CONST_LIMIT // 64) + 1, CONST_LIMIT // 64 - 1)
coefs = st.integers(-(COEF_LIMIT // 64) + 1, COEF_LIMIT // 64 - 1)
forms = st.tuples(consts, st.lists(coefs, min_size=3, max_size=3))


def _table() -> SizeTable:
    t = SizeTable()
    for name, hint in (("s0", 8), ("s1", 5), ("s0//4", 2)):
        t.atom(name, hint)
    return t


def _enc(t: SizeTable, form) -> int:
    const, cs = form
    return t.encode(const, {i: c for i, c in enumerate(cs)})


@given(forms, forms, st.integers(-8, 8))
def test_sums_and_multiples_are_the_symbolic_ones(a, b, n):
    t = _table()
    s = _enc(t, a) + n * _enc(t, b)
    const, cs = t.decode(s)
    assert const == a[0] + n * b[0]
    assert [cs.get(i, 0) for i in range(3)] == [x + n * y for x, y in zip(a[1], b[1])]
    assert t.hint(s) == t.hint(_enc(t, a)) + n * t.hint(_enc(t, b))


@given(forms, forms)
def test_equal_encodings_are_equal_forms(a, b):
    t = _table()
    assert (_enc(t, a) == _enc(t, b)) == ((a[0], a[1]) == (b[0], b[1]))


def test_literals_of_a_static_graph_are_themselves_and_no_symbol_is_a_literal():
    t = _table()
    assert t.literal(16) == 16 and t.linear(16) == 16 and t.hint(16) == 16
    s0 = t.encode(0, {0: 1})
    assert t.linear(s0 - 8) == Linear(-8, (("s0", 1),))
    assert t.hint(s0 - 8) == 0 and t.hinted((s0, 16)) == (8, 16)
    assert all(t.encode(c, {0: 1}) != t.literal(k) for c in (-3, 0, 5) for k in (0, 1, 8, 2**20))


def test_what_does_not_fit_is_refused():
    t = _table()
    with pytest.raises(SizeOverflow):
        t.literal(CONST_LIMIT)
    with pytest.raises(SizeOverflow):
        t.encode(0, {1: COEF_LIMIT})
    with pytest.raises(SizeOverflow):
        t.atom("s9", 3)  # a fourth atom
    with pytest.raises(SizeOverflow):
        t.linear(1 << (24 + 3 * ATOM_BITS))  # a digit above the last atom: no encoding
    assert t.decode(1 << (24 + 3 * ATOM_BITS)) is None


def test_products_keep_one_symbolic_factor_and_shapes_without_encoding_are_unknown():
    t = _table()
    s0, s1 = t.encode(0, {0: 1}), t.encode(0, {1: 1})
    assert product((4, s0, 2), t) == t.encode(0, {0: 8})
    assert product((s0, s1), t) is None
    assert hint_shapes({"a": (s0, 4), "b": (1 << 62,)}, t) == {"a": (8, 4)}
