"""head_split_copy and transpose_out_of_copy (eqsat_rules.algebra): attention's per-piece copies of q/k/v
become selects of one copy of the whole projection, and near misses are left alone.

``$a`` is a (B, T, 3C) = (2, 3, 12) projection, ``$b`` the same as (B·T, 3C) = (6, 12); n = 3 pieces of
C = 4 features, H = 2 heads of D = 2."""
import pytest

from egraph_case import Case, vec

SPLIT = f"(Get (Split $a {vec(4, 4, 4)} 2) {{}})"
HEADS = vec(2, 3, 2, 2)            # (B, T, H, D)
BHTD = vec(0, 2, 1, 3)             # to (B, H, T, D)
WHOLE = f"(Contiguous (Permute (View $a {vec(2, 3, 3, 2, 2)}) {vec(2, 0, 3, 1, 4)}))"  # (n, B, H, T, D)


def select(whole: str, i: int) -> str:
    return f"(Squeeze (Narrow {whole} 0 {i} 1) 0)"


def head_copy(piece: str, perm: str = BHTD, heads: str = HEADS) -> str:
    return f"(Contiguous (Permute (View {piece} {heads}) {perm}))"


def case(rules=None) -> Case:
    g = Case(rules)
    for name, shape in (("a", (2, 3, 12)), ("b", (6, 12))):
        g.s.commands([f'(let ${name} (Input "{name}"))', f"(set (shape ${name}) {vec(*shape)})",
                      f'(set (dtype ${name}) "float32")'])
    return g


@pytest.mark.parametrize("i", [0, 1, 2])
def test_each_piece_is_a_select_of_one_shared_copy(i):
    g = case(["head_split_copy_split_inner"]).let("t", head_copy(SPLIT.format(i))).run()
    assert g.fired.get("head_split_copy_split_inner"), g.fired
    assert g.same("$t", select(WHOLE, i))


def test_aligned_narrow_selects_the_same_copy():
    g = case(["head_split_copy_narrow_inner"]).let("t", head_copy("(Narrow $a 2 8 4)")).run()
    assert g.same("$t", select(WHOLE, 2))


def test_pieces_of_a_flattened_projection_reshaped_to_heads():
    """q/k/v of one (B·T, 3C) matmul viewed as (B, T, H, D): the leading dim is reshaped too."""
    g = case(["head_split_copy_split_last"]).let("t", head_copy(f"(Get (Split $b {vec(4, 4, 4)} 1) 1)")).run()
    assert g.same("$t", select(f"(Contiguous (Permute (View $b {vec(2, 3, 3, 2, 2)}) {vec(2, 0, 3, 1, 4)}))", 1))


@pytest.mark.parametrize("k_perm", [f"(Permute (Permute {{}} {BHTD}) {vec(0, 1, 3, 2)})", f"(Permute {{}} {vec(0, 2, 3, 1)})"],
                         ids=["two_permutes", "one_permute"])
def test_transposed_piece_shares_the_copy_through_a_transposed_view(k_perm):
    """k: transposed before its copy (as two permutes, or one), then flattened to (B·H, D, T) for a bmm."""
    k = f"(View (Contiguous {k_perm.format(f'(View {SPLIT.format(1)} {HEADS})')}) {vec(4, 2, 3)})"
    g = case().let("t", k).run()
    assert g.fired.get("transpose_out_of_copy"), g.fired
    assert g.same("$t", f"(Permute (View {select(WHOLE, 1)} {vec(4, 3, 2)}) {vec(0, 2, 1)})")


HEAD_RULES = ["head_split_copy_split_inner", "head_split_copy_split_last", "head_split_copy_narrow_inner",
              "head_split_copy_narrow_last"]
NEGATIVE = [  # (name, term, rules that must not fire)
    ("unaligned_narrow", head_copy("(Narrow $a 2 2 4)"), HEAD_RULES),
    ("narrow_not_dividing_the_dim", head_copy("(Narrow $a 2 0 5)", heads=vec(2, 3, 5, 1)), HEAD_RULES),
    ("unequal_split", head_copy(f"(Get (Split $a {vec(4, 8)} 2) 0)"), HEAD_RULES),
    ("reshape_mixing_the_split_dim_with_another", head_copy(SPLIT.format(0), vec(0, 2, 1), vec(2, 6, 2)),
     HEAD_RULES),
    ("copy_flattened_in_the_middle", f"(View (Contiguous (Permute (View {SPLIT.format(1)} {HEADS}) {BHTD})) {vec(2, 6, 2)})",
     ["transpose_out_of_copy"]),
    ("transposed_copy_not_flattened_to_matrices",
     f"(View (Contiguous (Permute (View {SPLIT.format(1)} {HEADS}) {vec(0, 1, 3, 2)})) {vec(2, 3, 4)})",
     ["transpose_out_of_copy"]),
]


@pytest.mark.parametrize("name, term, rules", NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_near_miss_is_left_alone(name, term, rules):
    g = case().let("t", term).run()
    assert not set(rules) & set(g.fired), g.fired
    assert g.shape("$t") is not None  # a well-formed term: the miss is the guard's, not a typo's
