"""rules/listpat.py's ``each(…)`` walk: one row per list whatever the number of ways its elements match.

Soak seed 100055: cat_binary_same's elements matched ``binary(f, p, q)`` in ~100 ways each, and a row
per combination of the matches (each building argument lists that were walked in turn) grew without
bound inside one analysis command."""
from egraph_case import Case, tl, vec

from eqsat.egraph import Budget

N = 6


def _mul(a: str, b: str) -> str:
    return f'(Binary "mul" {a} {b})'


def _col(name: str, k: int) -> str:
    return f"(Narrow ${name} 1 {k} 1)"


def _commuted_cat() -> Case:
    """cat([x[:, k] * z[:, k] for k]) where every product's class also holds z[:, k] * x[:, k]: 2**6
    combinations of matches."""
    g = Case(["cat_binary_same"])
    for k in range(N):
        g.let(f"e{k}", _mul(_col("x", k), _col("z", k)))
        g.s._command(f"(union $e{k} {_mul(_col('z', k), _col('x', k))})")
    return g.let("c", f"(Cat {tl(*(f'$e{k}' for k in range(N)))} 1)")


def _each_rows(g: Case) -> int:
    """Rows of the list relations (not their per-element tables ``…Elem`` / ``…Pick<j>``)."""
    (out,) = g.s._command("(print-size)")
    return sum(n for name, n in out.sizes if name.startswith("Each_") and name[len("Each_") + 8:] == "")


def test_a_list_has_one_row_however_many_ways_its_elements_match():
    g = _commuted_cat().run()
    assert g.fired.get("cat_binary_same"), g.fired
    assert _each_rows(g) == N  # one per suffix of the cat's list (before: 2**6 + 2**5 + … = 126)
    xs, zs = (f"(Cat {tl(*(_col(n, k) for k in range(N)))} 1)" for n in ("x", "z"))
    assert g.same("$c", _mul(xs, zs)) or g.same("$c", _mul(zs, xs))
    assert g.shape("$c") == (4, 6)


def test_the_pick_is_the_same_every_run():
    """The walk keeps the first match found: egglog runs the same commands the same way, so the same
    e-graph (tests/fx_bridge/scale/test_determinism.py checks whole compiles)."""
    sizes = []
    for _ in range(2):
        g = _commuted_cat()
        sizes.append(g.s.saturate(Budget(iterations=12, nodes=100_000, seconds=20)).sizes)
    assert sizes[0] == sizes[1]
