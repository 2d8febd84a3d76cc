"""The analysis gives every constructor a rule can create a shape (and a dtype where it can)."""
import pytest

from egraph_case import Case, tl, vec

SHAPES = [
    ("(Unsqueeze $x 1)", (4, 1, 6)),
    (f"(Stack {tl('$x', '$z', '$x')} 2)", (4, 6, 3)),
    (f'(Reduce "sum" $x {vec(1)} 1)', (4, 1)),
    (f'(Reduce "sum" $x {vec(0, 1)} 0)', ()),
    ('(Softmax "softmax" $x 1)', (4, 6)),
    (f'(LayerNorm $x {vec(6)} $v6 $v6 "1e-05")', (4, 6)),
    ("(Mm $x (Permute $z (vec-of 1 0)))", (4, 4)),
    ("(Matmul $x (Permute $z (vec-of 1 0)))", (4, 4)),
    (f"(Bmm (View $x {vec(2, 2, 6)}) (View $z {vec(2, 6, 2)}))", (2, 2, 2)),
    ('(Binary "mul" $b1 $r1)', (4, 6)),
    ('(Binary "add" $v6 $x)', (4, 6)),
    ('(Binary "add" $s0 $x)', (4, 6)),
    ('(Ternary "where" $x $b1 $r1)', (4, 6)),
    (f"(Cat {tl('$x', '$y')} 1)", (4, 8)),
    ("(Squeeze $r1 0)", (6,)),
]


@pytest.mark.parametrize("term, shape", SHAPES, ids=[t for t, _ in SHAPES])
def test_shape_is_derived(term, shape):
    g = Case([]).let("t", term).run()
    assert g.shape("$t") == shape


DTYPES = [('(Unary "relu" $h)', "float16"), ('(Binary "lt" $x $z)', "bool"), ('(Binary "mul" $x $z)', "float32"),
          ('(Binary "mul" $h (Scalar "2.0"))', "float16"), (f'(Reduce "mean" $h {vec(1)} 0)', "float16"),
          ("(Linear $x $z $v6)", "float32"), ('(Binary "mul" $x $h)', None)]


@pytest.mark.parametrize("term, dtype", DTYPES, ids=[t for t, _ in DTYPES])
def test_dtype_is_derived_only_when_known(term, dtype):
    g = Case([])
    g.s.commands(['(set (dtype (Scalar "2.0")) "scalar")', '(set (shape (Scalar "2.0")) (vec-pop (vec-of 0)))'])
    assert g.let("t", term).run().dtype("$t") == dtype
