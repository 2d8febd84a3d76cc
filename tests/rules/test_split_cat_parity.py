"""Split-cat shapes greedy Optimus turns back into one view of the input (issue 18), through eqsat.

Programs are written the way Optimus' own split-cat tests exercise them (constants built inside the
graph, pieces among other tensors). Each must be optimized (a named rule in ``rules_used``, the graph
not skipped and not fallen back), equal eager forward and backward, and (slow) give Inductor no more
CPU loop nests than Optimus does.
"""
import pytest
import torch

from bench.modes import compile_model
from bench.models.parity import (
    cat_other_dim_last, cat_other_dim_two_runs, cat_other_dim_with_others, cat_partial_run_with_others,
    cat_run_with_others, shuffled_multiple_outputs, stack_run_with_others, stack_two_runs_other_dim,
    two_splits_interleaved, unbind_cat_runs_other_dim, unbind_cat_with_others, unbind_stack_runs_last_dim,
    unbind_stack_with_others, unequal_split_multiple_outputs, Program)
from egraph_case import Case, pieces, tl, vec
from eqsat_torch import eqsat_backend
from bench import inductor_metrics
from eqsat_torch.inductor import compat


# (program, rules that must be used)
CASES = {f.__name__: (f, rule) for f, rule in (
    (cat_run_with_others, "cat_split_run"),
    (cat_partial_run_with_others, "cat_split_run"),
    (cat_other_dim_with_others, "cat_split_run_other_dim"),
    (cat_other_dim_two_runs, "cat_split_run_other_dim"),
    (cat_other_dim_last, "cat_split_run_other_dim"),
    (stack_run_with_others, "stack_split_run"),
    (stack_two_runs_other_dim, "stack_split_run"),
    (unbind_cat_with_others, "unbind_cat_run"),
    (unbind_cat_runs_other_dim, "unbind_cat_run"),
    (shuffled_multiple_outputs, "cat_split_run_other_dim stack_split_run"),
    (unequal_split_multiple_outputs, "cat_split_run_other_dim stack_split_run"),
    (two_splits_interleaved, "cat_split_run_other_dim stack_split_run"),
    (unbind_stack_with_others, "unbind_stack_run"),
    (unbind_stack_runs_last_dim, "unbind_stack_run"),
)}


def _eqsat(f, *xs):
    backend = eqsat_backend(inner="eager", post_grad=False)
    out = torch.compile(f, backend=backend)(*xs)
    assert len(backend.reports) == 1, [r.summary() for r in backend.reports]
    return out, backend.reports[0]


@pytest.mark.parametrize("name", sorted(CASES))
def test_optimized_and_equal_to_eager_forward_and_backward(name):
    f, rules = CASES[name]
    torch.manual_seed(0)
    xs = [torch.randn(2, 32, 32, 16, requires_grad=True) for _ in range(f.__code__.co_argcount)]
    xes = [x.detach().clone().requires_grad_() for x in xs]
    out, report = _eqsat(f, *xs)
    want = f(*xes)
    torch.testing.assert_close(out, want)
    weights = [torch.randn_like(w) for w in _outputs(want)]
    sum((o * w).sum() for o, w in zip(_outputs(out), weights)).backward()
    sum((o * w).sum() for o, w in zip(_outputs(want), weights)).backward()
    torch.testing.assert_close([x.grad for x in xs], [x.grad for x in xes])
    assert not report.skipped and not report.fallback, report.summary()
    assert report.changed and all(report.rules_used.get(r) for r in rules.split()), report.summary()


def _outputs(out):
    return list(out) if isinstance(out, tuple) else [out]


def _loop_nests(mode, f, xs):
    """Inductor's CPU kernel counter (loop nests) for ``f`` compiled in bench mode ``mode``."""
    compat.reset_dynamo()
    inductor_metrics.reset()
    with torch.no_grad(), inductor_metrics.inductor_config_patch(mode):
        out = compile_model(mode, Program(f)).fn(*xs)
    torch.testing.assert_close(out, f(*xs))
    return inductor_metrics.kernel_counts()["generated"]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_inductor_kernels_no_more_than_optimus(name):
    f, _ = CASES[name]
    xs = [torch.randn(2, 32, 32, 16) for _ in range(f.__code__.co_argcount)]
    alone, optimus, ours = (_loop_nests(m, f, xs) for m in ("inductor", "inductor_optimus", "eqsat"))
    assert ours <= optimus and ours < alone, {"inductor": alone, "optimus": optimus, "eqsat": ours}


# -- e-graph level: the rule's exact form, and near-misses it must leave alone ---------------------
S = f"(Split $x {vec(2, 2, 2)} 1)"            # x: (4, 6) in three (4, 2) pieces; y: (4, 2)
P = pieces(S, 3)


def _other_dim_run(start, m):
    """Pieces start..start+m-1 of S concatenated on dim 0, as the rule writes them."""
    return (f"(View (Permute (View (Narrow $x 1 {2 * start} {2 * m}) {vec(4, m, 2)}) {vec(1, 0, 2)})"
            f" {vec(4 * m, 2)})")


OTHER_DIM_POSITIVE = [
    ("middle", tl("$y", P[0], P[1], "$y"), tl("$y", _other_dim_run(0, 2), "$y")),
    ("tail", tl("$y", P[1], P[2]), tl("$y", _other_dim_run(1, 2))),
    ("head_then_piece", tl(P[0], P[1], "$y", P[2]), tl(_other_dim_run(0, 2), "$y", P[2])),
    ("whole_split_and_more", tl(P[0], P[1], P[2], "$y"), tl(_other_dim_run(0, 3), "$y")),
]


Z = pieces(f"(Split $z {vec(2, 2, 2)} 1)", 3)
OTHER_DIM_NEGATIVE = [  # (name, items, a form it must not become)
    ("wrong_order", tl("$y", P[1], P[0]), tl("$y", _other_dim_run(0, 2))),
    ("gap", tl(P[0], P[2], "$y"), tl(_other_dim_run(0, 2), "$y")),
    ("two_inputs", tl(P[0], Z[1], "$y"), tl(_other_dim_run(0, 2), "$y")),
    ("run_of_one", tl("$y", P[1], "$y"), tl("$y", _other_dim_run(1, 1), "$y")),
]


def _stack_run(start, m, perm):
    """Pieces start..start+m-1 of S stacked, as the rule writes them: the piece index moved by ``perm``."""
    return f"(Permute (View (Narrow $x 1 {2 * start} {2 * m}) {vec(4, m, 2)}) {vec(*perm)})"


STACK_POSITIVE = [  # (name, items, stack dim, the cat it equals)
    ("middle", tl("$y", P[0], P[1], "$y"), 0,
     tl("(Unsqueeze $y 0)", _stack_run(0, 2, (1, 0, 2)), "(Unsqueeze $y 0)")),
    ("last_dim", tl(P[1], P[2], "$y"), 2, tl(_stack_run(1, 2, (0, 2, 1)), "(Unsqueeze $y 2)")),
    ("split_dim", tl("$y", P[0], P[1], P[2]), 1, tl("(Unsqueeze $y 1)", _stack_run(0, 3, (0, 1, 2)))),
]


STACK_NEGATIVE = [  # (name, items, a cat it must not become)
    ("wrong_order", tl("$y", P[1], P[0]), tl("(Unsqueeze $y 0)", _stack_run(0, 2, (1, 0, 2)))),
    ("gap", tl(P[0], P[2], "$y"), tl(_stack_run(0, 2, (1, 0, 2)), "(Unsqueeze $y 0)")),
    ("two_inputs", tl(P[0], Z[1], "$y"), tl(_stack_run(0, 2, (1, 0, 2)), "(Unsqueeze $y 0)")),
]


U = f"(Split $x {vec(1, 1, 1, 1)} 0)"         # x.unbind(0), as lowering spells it: four (6,) pieces
UP = pieces(U, 4, "(Squeeze {} 0)")


def _unbind_run(start, m):
    return f"(View (Permute (Narrow $x 0 {start} {m}) {vec(0, 1)}) {vec(6 * m)})"


UNBIND_POSITIVE = [
    ("middle", tl("$v6", UP[1], UP[2], "$v6"), tl("$v6", _unbind_run(1, 2), "$v6")),
    ("two_runs", tl(UP[0], UP[1], "$v6", UP[2], UP[3]), tl(_unbind_run(0, 2), "$v6", _unbind_run(2, 2))),
]


SQ2 = pieces(f"(Split $x {vec(2, 2)} 0)", 2, "(Squeeze {} 0)")  # squeeze of a size-2 dim: no unbind
UNBIND_NEGATIVE = [
    ("wrong_order", tl("$v6", UP[2], UP[1]), tl("$v6", _unbind_run(1, 2))),
    ("gap", tl(UP[0], UP[2], "$v6"), tl(_unbind_run(0, 2), "$v6")),
    ("sections_of_two", tl(SQ2[0], SQ2[1], "$x"), tl("(Narrow $x 0 0 4)", "$x")),
]


UNBIND_STACK_POSITIVE = [  # (name, items, stack dim, the cat it equals)
    ("middle", tl("$v6", UP[1], UP[2], "$v6"), 0,
     tl("(Unsqueeze $v6 0)", f"(Permute (Narrow $x 0 1 2) {vec(0, 1)})", "(Unsqueeze $v6 0)")),
    ("last_dim", tl(UP[0], UP[1], UP[2], "$v6"), 1,
     tl(f"(Permute (Narrow $x 0 0 3) {vec(1, 0)})", "(Unsqueeze $v6 1)")),
]


UNBIND_STACK_NEGATIVE = [  # (name, items, a cat it must not become)
    ("wrong_order", tl("$v6", UP[2], UP[1]), tl("(Unsqueeze $v6 0)", f"(Permute (Narrow $x 0 1 2) {vec(0, 1)})")),
    ("gap", tl(UP[0], UP[2], "$v6"), tl(f"(Permute (Narrow $x 0 0 2) {vec(0, 1)})", "(Unsqueeze $v6 0)")),
]


# (rule, constructor, case, items, dim, the cat it equals) and (rule, constructor, case, items, a cat it
# must not become): every run rule's exact form and its near-misses, checked the same way
POSITIVE = ([("cat_split_run_other_dim", "Cat", n, items, 0, want) for n, items, want in OTHER_DIM_POSITIVE]
            + [("stack_split_run", "Stack", *row) for row in STACK_POSITIVE]
            + [("unbind_cat_run", "Cat", n, items, 0, want) for n, items, want in UNBIND_POSITIVE]
            + [("unbind_stack_run", "Stack", *row) for row in UNBIND_STACK_POSITIVE])
NEGATIVE = ([("cat_split_run_other_dim", "Cat", *row) for row in OTHER_DIM_NEGATIVE]
            + [("stack_split_run", "Stack", *row) for row in STACK_NEGATIVE]
            + [("unbind_cat_run", "Cat", *row) for row in UNBIND_NEGATIVE]
            + [("unbind_stack_run", "Stack", *row) for row in UNBIND_STACK_NEGATIVE])


@pytest.mark.parametrize("rule, ctor, name, items, dim, expected", POSITIVE, ids=[f"{p[0]}-{p[2]}" for p in POSITIVE])
def test_run_rule_fires_and_unions(rule, ctor, name, items, dim, expected):
    g = Case([rule]).let("t", f"({ctor} {items} {dim})").run()
    assert g.fired.get(rule), g.fired
    assert g.same("$t", f"(Cat {expected} {dim})")
    assert g.shape("$t") == g.shape(f"(Cat {expected} {dim})")


@pytest.mark.parametrize("rule, ctor, name, items, forbidden", NEGATIVE, ids=[f"{n[0]}-{n[2]}" for n in NEGATIVE])
def test_run_rule_near_miss_is_left_alone(rule, ctor, name, items, forbidden):
    g = Case().let("t", f"({ctor} {items} 0)").run()
    assert rule not in g.fired, g.fired
    assert not g.same("$t", f"(Cat {forbidden} 0)")


@pytest.mark.parametrize("items", [tl(*P), tl(*UP)], ids=["split", "unbind"])
def test_stack_of_every_piece_in_order_is_left_to_the_whole_split_rules(items):
    """No run boundary: stack_split_all / unbind_stack say it already, so no cat spelling is built
    (a 64-piece batch stack would otherwise cost seconds of saturation)."""
    g = Case().let("t", f"(Stack {items} 0)").run()
    assert not {"stack_split_run", "unbind_stack_run"} & set(g.fired), g.fired


def _split_backward_like(t):
    """The backward of a split whose pieces 2 and 4.. are unused: the used pieces' gradients between
    copies of one zero fill (AOTAutograd's CSE keeps one)."""
    z = torch.zeros(2, 4, 8)
    return torch.cat([t[:, :4].sin(), z, z, t[:, 4:8].cos(), z, z, z], 1)


def test_zero_fills_in_a_cat_become_one_repeated_cell_forward_and_backward():
    """cat_repeat_run: each run of the fill is one view (the CPU model saves a loop nest per fill
    merged); the split_getitems_out_of_order training step's backward gets 8 kernels, Optimus' count."""
    t = torch.randn(2, 8, 8, requires_grad=True)
    te = t.detach().clone().requires_grad_()
    out, report = _eqsat(_split_backward_like, t)
    want = _split_backward_like(te)
    torch.testing.assert_close(out, want)
    w = torch.randn_like(want)
    (out * w).sum().backward()
    (want * w).sum().backward()
    torch.testing.assert_close(t.grad, te.grad)
    assert report.rules_used.get("cat_repeat_run"), report.summary()
