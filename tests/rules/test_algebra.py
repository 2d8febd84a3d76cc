"""algebra family and the basic rules: positive (rule alone) and near-miss (all rules) cases."""
import pytest

from egraph_case import Case, pieces, tl, vec

RELU = '(Unary "relu" {})'
MUL = '(Binary "mul" {} {})'
S = f"(Split $x {vec(2, 4)} 1)"


XW, YN0 = f"(Cat {tl('$x', '$w')} 1)", f"(Cat {tl('$y', '(Narrow $x 1 0 2)')} 0)"  # two cells: no repeat run
EXP_Y, EXP_Z = '(Unary "exp" $y)', '(Unary "exp" $z)'
SPLIT_RELU = f"(Split {RELU.format('$x')} {vec(2, 4)} 1)"


def mul(a, b):
    return MUL.format(a, b)


def relu(a):
    return RELU.format(a)


POSITIVE = [
    ("cat_single", f"(Cat {tl('$x')} 1)", "$x"),
    ("stack_single", f"(Stack {tl('$x')} 1)", "(Unsqueeze $x 1)"),
    ("view_view", f"(View (View $x {vec(24)}) {vec(2, 12)})", f"(View $x {vec(2, 12)})"),
    ("view_noop", f"(View $x {vec(4, 6)})", "$x"),
    ("permute_permute", f"(Permute (Permute (View $x {vec(2, 3, 4)}) {vec(1, 2, 0)}) {vec(2, 0, 1)})",
     f"(Permute (View $x {vec(2, 3, 4)}) {vec(0, 1, 2)})"),
    ("permute_identity", f"(Permute $x {vec(0, 1)})", "$x"),
    ("squeeze_unsqueeze", "(Squeeze (Unsqueeze $x 1) 1)", "$x"),
    ("unsqueeze_squeeze", "(Unsqueeze (Squeeze $b1 1) 1)", "$b1"),
    ("contiguous_idem", "(Contiguous (Contiguous $x))", "(Contiguous $x)"),
    ("narrow_full", "(Narrow $x 1 0 6)", "$x"),
    ("narrow_unary", f"(Narrow {relu('$x')} 1 1 2)", relu("(Narrow $x 1 1 2)")),
    ("narrow_binary_same", f"(Narrow {mul('$x', '$z')} 0 1 2)", mul("(Narrow $x 0 1 2)", "(Narrow $z 0 1 2)")),
    ("narrow_binary_rhs_scalar", f"(Narrow {mul('$x', '$s0')} 1 1 2)", mul("(Narrow $x 1 1 2)", "$s0")),
    ("narrow_binary_lhs_scalar", f"(Narrow {mul('$s0', '$x')} 1 1 2)", mul("$s0", "(Narrow $x 1 1 2)")),
    ("narrow_binary_rhs_bcast", f"(Narrow {mul('$x', '$b1')} 1 1 2)", mul("(Narrow $x 1 1 2)", "$b1")),
    ("narrow_binary_lhs_bcast", f"(Narrow {mul('$r1', '$x')} 0 1 2)", mul("$r1", "(Narrow $x 0 1 2)")),
    ("split_unary", f"(Get (Split {relu('$x')} {vec(2, 4)} 1) 1)", relu(f"(Get {S} 1)")),
    ("split_binary_same", f"(Get (Split {mul('$x', '$z')} {vec(2, 4)} 1) 0)",
     mul(f"(Get {S} 0)", f"(Get (Split $z {vec(2, 4)} 1) 0)")),
    ("split_binary_rhs_bcast", f"(Get (Split {mul('$x', '$b1')} {vec(2, 4)} 1) 0)", mul(f"(Get {S} 0)", "$b1")),
    ("split_binary_lhs_bcast", f"(Get (Split {mul('$b1', '$x')} {vec(2, 4)} 1) 0)", mul("$b1", f"(Get {S} 0)")),
    ("split_binary_lhs_scalar", f"(Get (Split {mul('$s0', '$x')} {vec(2, 4)} 1) 1)", mul("$s0", f"(Get {S} 1)")),
    ("narrow_log_softmax", '(Narrow (Softmax "log_softmax" $x 0) 1 1 2)', '(Softmax "log_softmax" (Narrow $x 1 1 2) 0)'),
    ("split_softmax", f'(Get (Split (Softmax "softmax" $x 0) {vec(2, 4)} 1) 0)', f'(Softmax "softmax" (Get {S} 0) 0)'),
    ("split_binary_rhs_scalar", f"(Get (Split {mul('$x', '$s0')} {vec(2, 4)} 1) 0)", mul(f"(Get {S} 0)", "$s0")),
    ("narrow_softmax", '(Narrow (Softmax "softmax" $x 1) 0 1 2)', '(Softmax "softmax" (Narrow $x 0 1 2) 1)'),
    ("split_log_softmax", f'(Get (Split (Softmax "log_softmax" $x 0) {vec(2, 4)} 1) 1)',
     f'(Softmax "log_softmax" (Get {S} 1) 0)'),
    ("cat_unary", f"(Cat {tl(relu('$x'), relu('$y'))} 1)", relu(f"(Cat {tl('$x', '$y')} 1)")),
    ("stack_unary", f"(Stack {tl(relu('$x'), relu('$z'))} 0)", relu(f"(Stack {tl('$x', '$z')} 0)")),
    ("cat_binary_same", f"(Cat {tl(mul('$x', '$z'), mul('$y', '$y'))} 1)",
     mul(f"(Cat {tl('$x', '$y')} 1)", f"(Cat {tl('$z', '$y')} 1)")),
    ("cat_binary_scalar", f"(Cat {tl(mul('$x', '$s0'), mul('$y', '$s0'))} 1)", mul(f"(Cat {tl('$x', '$y')} 1)", "$s0")),
    ("cat_flatten", f"(Cat {tl(XW, '$y')} 1)", f"(Cat {tl('$x', '$w', '$y')} 1)"),
    ("unsqueeze_as_view", "(Unsqueeze $x 2)", f"(View $x {vec(4, 6, 1)})"),
    ("squeeze_as_view", "(Squeeze $r1 0)", f"(View $r1 {vec(6)})"),
]


@pytest.mark.parametrize("rule, term, expected", POSITIVE, ids=[p[0] for p in POSITIVE])
def test_rule_fires_and_unions(rule, term, expected):
    g = Case([rule]).let("t", term).run()
    assert g.fired.get(rule), g.fired
    assert g.same("$t", expected)


NEGATIVE = [  # (name, term, a form it must not become, rules that must not fire)
    ("narrow_along_softmax_dim", '(Narrow (Softmax "softmax" $x 1) 1 0 2)', '(Softmax "softmax" (Narrow $x 1 0 2) 1)',
     ["narrow_unary", "narrow_softmax"]),
    ("narrow_rank1_bcast", f"(Narrow {mul('$x', '$v6')} 1 1 2)", mul("(Narrow $x 1 1 2)", "$v6"),
     ["narrow_binary_rhs_bcast", "narrow_binary_same", "narrow_binary_rhs_scalar"]),
    ("narrow_along_bcast_dim", f"(Narrow {mul('$x', '$r1')} 1 1 2)", mul("(Narrow $x 1 1 2)", "$r1"),
     ["narrow_binary_rhs_bcast", "narrow_binary_same"]),
    ("split_along_bcast_dim", f"(Get (Split {mul('$x', '$r1')} {vec(2, 4)} 1) 0)", mul(f"(Get {S} 0)", "$r1"),
     ["split_binary_rhs_bcast", "split_binary_same"]),
    ("cat_different_ops", f"(Cat {tl(relu('$x'), EXP_Y)} 1)", relu(f"(Cat {tl('$x', '$y')} 1)"),
     ["cat_unary"]),
    ("cat_mixed_dtypes", f"(Cat {tl(relu('$x'), relu('$h'))} 1)", relu(f"(Cat {tl('$x', '$h')} 1)"), ["cat_unary"]),
    ("cat_broadcast_operand", f"(Cat {tl(mul('$x', '$b1'), mul('$y', '$y'))} 1)",
     mul(f"(Cat {tl('$x', '$y')} 1)", f"(Cat {tl('$b1', '$y')} 1)"), ["cat_binary_same"]),
    ("cat_different_scalars", f"(Cat {tl(mul('$x', '$s0'), mul('$y', '$s1'))} 1)",
     mul(f"(Cat {tl('$x', '$y')} 1)", "$s0"), ["cat_binary_scalar"]),
    ("inner_cat_other_dim", f"(Cat {tl('$y', YN0)} 1)",
     f"(Cat {tl('$y', '$y', '(Narrow $x 1 0 2)')} 1)", ["cat_flatten"]),
    ("stack_different_ops", f"(Stack {tl(relu('$x'), EXP_Z)} 0)", relu(f"(Stack {tl('$x', '$z')} 0)"),
     ["stack_unary"]),
    ("unsqueeze_other_dim", "(Unsqueeze (Squeeze $b1 1) 0)", "$b1", ["unsqueeze_squeeze"]),
    ("view_of_other_shape", f"(View $x {vec(6, 4)})", "$x", ["view_noop"]),
    ("narrow_not_full", "(Narrow $x 1 1 5)", "$x", ["narrow_full"]),
    ("permute_not_identity", f"(Permute $x {vec(1, 0)})", "$x", ["permute_identity"]),
]


@pytest.mark.parametrize("name, term, forbidden, rules", NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_near_miss_is_left_alone(name, term, forbidden, rules):
    g = Case().let("t", term).run()
    assert not set(rules) & set(g.fired), g.fired
    assert not g.same("$t", forbidden)


def test_split_pieces_of_relu_become_relu_of_pieces():
    g = Case().let("t", f"(Cat {tl(*pieces(SPLIT_RELU, 2))} 1)").run()
    assert g.same("$t", relu("$x"))
