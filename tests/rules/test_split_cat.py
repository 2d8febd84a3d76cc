"""split_cat family: each rule fires where it should (run alone) and leaves near-misses alone (run with
every rule, so no other rule sneaks the forbidden form in either)."""
import pytest

from eqsat.egraph import Budget
from egraph_case import Case, pieces, tl, vec

S = f"(Split $x {vec(2, 2, 2)} 1)"            # x: (4, 6) in three (4, 2) pieces
P = pieces(S, 3)
U = f"(Split $x {vec(1, 1, 1, 1)} 0)"         # x.unbind(0), as lowering spells it
UP = pieces(U, 4, "(Squeeze {} 0)")
UNFLAT = f"(View $x {vec(4, 3, 2)})"

# (rule, term, expected equal term)
POSITIVE = [
    ("split_single", f"(Get (Split $x {vec(6)} 1) 0)", "$x"),
    ("merge_splits", f"(Get (Split {P[1]} {vec(1, 1)} 1) 1)", f"(Get (Split $x {vec(2, 1, 1, 2)} 1) 2)"),
    ("cat_split_all", f"(Cat {tl(*P)} 1)", "$x"),
    ("cat_split_run", f"(Cat {tl('$y', P[1], P[2], '$y')} 1)", f"(Cat {tl('$y', '(Narrow $x 1 2 4)', '$y')} 1)"),
    ("cat_split_run", f"(Cat {tl(P[0], P[1], '$y', P[2])} 1)", f"(Cat {tl('(Narrow $x 1 0 4)', '$y', P[2])} 1)"),
    ("cat_narrow_run", f"(Cat {tl('$y', '(Narrow $x 1 1 2)', '(Narrow $x 1 3 2)', '$y')} 1)",
     f"(Cat {tl('$y', '(Narrow $x 1 1 4)', '$y')} 1)"),
    ("cat_split_other_dim", f"(Cat {tl(*P)} 0)", f"(View (Permute {UNFLAT} {vec(1, 0, 2)}) {vec(12, 2)})"),
    ("stack_split_all", f"(Stack {tl(*P)} 0)", f"(Permute {UNFLAT} {vec(1, 0, 2)})"),
    ("stack_split_all", f"(Stack {tl(*P)} 2)", f"(Permute {UNFLAT} {vec(0, 2, 1)})"),
    ("stack_reshaped_pieces", f"(Stack {tl(*[f'(View {p} {vec(8)})' for p in P])} 1)",
     f"(Permute (View (Permute {UNFLAT} {vec(1, 0, 2)}) {vec(3, 8)}) {vec(1, 0)})"),
    ("unbind_stack", f"(Stack {tl(*UP)} 1)", f"(Permute $x {vec(1, 0)})"),
    ("unbind_cat", f"(Cat {tl(*UP)} 0)", f"(View (Permute $x {vec(0, 1)}) {vec(24)})"),
]


@pytest.mark.parametrize("rule, term, expected", POSITIVE, ids=[p[0] for p in POSITIVE])
def test_rule_fires_and_unions(rule, term, expected):
    g = Case([rule]).let("t", term).run()
    assert g.fired.get(rule), g.fired
    assert g.same("$t", expected)
    assert g.shape("$t") == g.shape(expected)


# (name, term, a form it must not become, rule that must not fire)
NEGATIVE = [
    ("split_of_two", f"(Get (Split $x {vec(2, 4)} 1) 0)", "$x", "split_single"),
    ("merge_other_dim", f"(Get (Split {P[1]} {vec(2, 2)} 0) 0)", f"(Get (Split $x {vec(2, 1, 1, 2)} 1) 1)",
     "merge_splits"),
    ("cat_other_dim_shuffled", f"(Cat {tl(P[1], P[0], P[2])} 0)",
     f"(View (Permute {UNFLAT} {vec(1, 0, 2)}) {vec(12, 2)})", "cat_split_other_dim"),
    ("cat_wrong_order", f"(Cat {tl(P[1], P[0], P[2])} 1)", "$x", "cat_split_all"),
    ("cat_missing_piece", f"(Cat {tl(P[0], P[2])} 1)", "(Narrow $x 1 0 4)", "cat_split_all"),
    ("run_shuffled", f"(Cat {tl('$y', P[2], P[1], '$y')} 1)", f"(Cat {tl('$y', '(Narrow $x 1 2 4)', '$y')} 1)",
     "cat_split_run"),
    ("run_of_one", f"(Cat {tl('$y', P[1], '$y')} 1)", f"(Cat {tl('$y', '(Narrow $x 1 2 2)', '$y')} 1)",
     "cat_split_run"),
    ("run_other_dim", f"(Cat {tl(P[0], P[1])} 0)", "(Narrow $x 1 0 4)", "cat_split_run"),
    ("narrows_with_gap", f"(Cat {tl('(Narrow $x 1 0 2)', '(Narrow $x 1 3 2)')} 1)", "(Narrow $x 1 0 5)",
     "cat_narrow_run"),
    ("narrows_other_tensor", f"(Cat {tl('(Narrow $x 1 0 2)', '(Narrow $z 1 2 2)')} 1)", "(Narrow $x 1 0 4)",
     "cat_narrow_run"),
    ("stack_repeated_piece", f"(Stack {tl(P[0], P[0], P[2])} 0)", f"(Permute {UNFLAT} {vec(1, 0, 2)})",
     "stack_split_all"),
    ("stack_missing", f"(Stack {tl(P[0], P[1])} 0)", f"(Permute {UNFLAT} {vec(1, 0, 2)})", "stack_split_all"),
    ("stack_reshaped_missing", f"(Stack {tl(*[f'(View {p} {vec(8)})' for p in P[:2]])} 1)",
     f"(Permute (View (Permute {UNFLAT} {vec(1, 0, 2)}) {vec(3, 8)}) {vec(1, 0)})", "stack_reshaped_pieces"),
    ("unbind_reversed", f"(Stack {tl(*reversed(UP))} 1)", f"(Permute $x {vec(1, 0)})", "unbind_stack"),
    ("unbind_missing", f"(Cat {tl(*UP[:3])} 0)", f"(View (Permute $x {vec(0, 1)}) {vec(24)})", "unbind_cat"),
]


@pytest.mark.parametrize("name, term, forbidden, rule", NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_near_miss_is_left_alone(name, term, forbidden, rule):
    g = Case().let("t", term).run()
    assert rule not in g.fired, g.fired
    assert not g.same("$t", forbidden)


def test_pieces_used_elsewhere_stay_available():
    g = Case().let("t", f"(Cat {tl('$y', P[0], P[1], '$y')} 1)").let("other", f"(Unary \"relu\" {P[0]})").run()
    assert g.same("$t", f"(Cat {tl('$y', '(Narrow $x 1 0 4)', '$y')} 1)")
    assert g.same("$other", f"(Unary \"relu\" {P[0]})") and not g.same("$other", "$t")


def test_two_runs_in_one_cat_both_merge():
    other = f"(Split $z {vec(3, 3)} 1)"
    z0, z1 = pieces(other, 2)
    g = Case(["cat_split_run"]).let("t", f"(Cat {tl(P[1], P[2], '$y', z0, z1)} 1)").run()
    assert g.same("$t", f"(Cat {tl('(Narrow $x 1 2 4)', '$y', '(Narrow $z 1 0 6)')} 1)")


def test_relu_between_split_and_cat_is_seen_through():
    relu = [f'(Unary "relu" {p})' for p in P]
    g = Case().let("t", f"(Cat {tl(*relu)} 1)").run()
    assert g.same("$t", '(Unary "relu" $x)')
    assert {"cat_unary", "cat_split_all"} <= set(g.fired)


def test_many_runs_in_one_cat_stay_bounded():
    items = []
    for k in range(16):
        p = pieces(S if k % 2 == 0 else f"(Split $z {vec(2, 2, 2)} 1)", 3)
        items += [p[0], p[1], "$y", p[2]]
    g = Case(["cat_split_run"]).let("t", f"(Cat {tl(*items)} 1)")
    log = g.s.saturate(Budget(iterations=12, nodes=50_000))
    assert log.stop_reason == "saturated" and log.sizes[-1] < 10_000, log.sizes
    merged = [item for k in range(16) for item in (f"(Narrow {'$x' if k % 2 == 0 else '$z'} 1 0 4)", "$y",
                                                     pieces(S if k % 2 == 0 else f"(Split $z {vec(2, 2, 2)} 1)", 3)[2])]
    assert g.same("$t", f"(Cat {tl(*merged)} 1)")


MERGED = f"(Split $x {vec(2, 1, 1, 2)} 1)"    # S with its middle piece re-split in two


def test_outer_pieces_of_a_merged_split_are_the_merged_splits_pieces():
    """merge_splits_before/after: the pieces around the re-split one become pieces of the merged split,
    so the outer split can die (issue 18: Optimus' merge_splits leaves one split)."""
    g = Case(["merge_splits", "merge_splits_before", "merge_splits_after"]).let(
        "inner", f"(Get (Split {P[1]} {vec(1, 1)} 1) 0)").let("a", P[0]).let("c", P[2]).run()
    assert g.fired.get("merge_splits_before") and g.fired.get("merge_splits_after"), g.fired
    assert g.same("$a", f"(Get {MERGED} 0)") and g.same("$c", f"(Get {MERGED} 3)")
    assert g.same("$inner", f"(Get {MERGED} 1)")


@pytest.mark.parametrize("inner", [f"(Split {P[1]} {vec(2, 2)} 0)", f"(Split (Get (Split $z {vec(2, 2, 2)} 1) 1) {vec(1, 1)} 1)"],
                         ids=["inner_split_other_dim", "inner_split_of_another_input"])
def test_outer_pieces_stay_without_a_same_dim_re_split(inner):
    """A re-split on another dim, or of another input's split piece, merges nothing into x's split."""
    g = Case().let("inner", f"(Get {inner} 0)").let("a", P[0]).let("c", P[2]).run()
    assert not g.same("$a", f"(Get {MERGED} 0)") and not g.same("$c", f"(Get {MERGED} 3)")


def _repeated(t: str, m: int, d: int = 1) -> str:
    """``t`` (4, 2) repeated m times along ``d``: unsqueezed, expanded, flattened."""
    e, v = [4, 2], [4, 2]
    e.insert(d, m)
    v[d] *= m
    return f"(View (Expand (Unsqueeze {t} {d}) {vec(*e)}) {vec(*v)})"


@pytest.mark.parametrize("cells, expected", [
    (["$y", "$y", "$y"], [_repeated("$y", 3)]),
    (["$w", "$y", "$y", "$w"], ["$w", _repeated("$y", 2), "$w"]),
    (["$y", "$y", "$w", "$y", "$y", "$y", "$y"], [_repeated("$y", 2), "$w", _repeated("$y", 4)]),
], ids=["whole", "inside", "two_runs"])
def test_cat_repeat_run_fires_and_unions(cells, expected):
    """A split's backward concatenates one zero fill for every unused piece: a run of it is one cell."""
    g = Case(["cat_repeat_run"]).let("t", f"(Cat {tl(*cells)} 1)").run()
    assert g.fired.get("cat_repeat_run"), g.fired
    assert g.same("$t", f"(Cat {tl(*expected)} 1)")
    assert g.shape("$t") == g.shape(f"(Cat {tl(*expected)} 1)")


@pytest.mark.parametrize("cells, forbidden", [
    (["$y", "(Narrow $x 1 0 2)", "$y"], [_repeated("$y", 2), "(Narrow $x 1 0 2)"]),
    # y with every column repeated (unsqueezed after the cat dim) is no run of y: it must not grow
    ([f"(View (Expand (Unsqueeze $y 2) {vec(4, 2, 2)}) {vec(4, 4)})", "$y"], [_repeated("$y", 3)]),
], ids=["not_adjacent", "interleaved"])
def test_cat_repeat_run_near_miss_is_left_alone(cells, forbidden):
    g = Case().let("t", f"(Cat {tl(*cells)} 1)").run()
    assert not g.same("$t", f"(Cat {tl(*forbidden)} 1)")
