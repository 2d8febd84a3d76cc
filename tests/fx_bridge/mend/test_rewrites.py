"""Each rewrite kind on small functions: breaks really drop, outputs match the original code,
and near-misses are left alone (with the reason reported)."""

import contextlib
import dis
import inspect
import io
import logging
import warnings

import pytest
import torch

import mend_samples as s
from eqsat_torch.mend import compile as mend_compile
from eqsat_torch.mend import detect, mend
from eqsat_torch.mend.detect import DATA_DEPENDENT, SCALAR_READ, SIDE_EFFECT, VALIDATION
from eqsat_torch.mend.inprocess import Patch
from eqsat_torch.mend.plan import plan


@pytest.fixture
def mended():
    """mend(fn, args) that undoes the in-process patch after the test."""
    reports = []

    def run(fn, *args):
        report = mend(fn, args, explain=False)
        reports.append(report)
        return report

    yield run
    for report in reports:
        report.patch.undo()


def compiled_eager(fn):
    torch._dynamo.reset()
    return mend_compile(fn, backend="eager")


def test_where_if_else_removes_break_and_matches_both_branches(mended):
    original = {x: s.where_if_else(x) for x in (torch.ones(3), -torch.ones(3))}
    report = mended(s.where_if_else, torch.ones(3))
    assert (report.before.breaks, report.after.breaks) == (1, 0)
    assert [d.rule for d in report.decisions] == ["where"]
    assert report.before.sites[0].category == DATA_DEPENDENT and report.before.sites[0].gb_code == "GB0170"
    f = compiled_eager(s.where_if_else)
    for x, expected in original.items():
        assert torch.equal(f(x), expected)  # the untaken input exercises the other branch


def test_where_return_form(mended):
    expected = [s.where_return(x) for x in (torch.ones(2), -torch.ones(2) * 3)]
    report = mended(s.where_return, torch.ones(2))
    assert (report.before.breaks, report.after.breaks) == (1, 0)
    f = compiled_eager(s.where_return)
    assert torch.equal(f(torch.ones(2)), expected[0]) and torch.equal(f(-torch.ones(2) * 3), expected[1])


def test_fp16_guard_static_prefix(mended):
    h = torch.tensor([1.0, float("inf"), -float("inf")], dtype=torch.float16)
    finite = torch.tensor([1.0, 2.0], dtype=torch.float16)
    expected16, expected32, expected_finite = s.fp16_guard(h), s.fp16_guard(h.float()), s.fp16_guard(finite)
    report = mended(s.fp16_guard, h)
    assert (report.before.breaks, report.after.breaks) == (1, 0)
    assert report.outputs_equal
    f = compiled_eager(s.fp16_guard)
    assert torch.equal(f(h), expected16)
    assert torch.equal(f(h.float()), expected32)  # static prefix false: the guard is skipped as before
    assert torch.equal(f(finite), expected_finite)  # guard condition false: values untouched


def test_else_less_maybe_update(mended):
    x = torch.tensor([1.0, -4.0, 3.0])
    expected = {scale: s.maybe_update(x, scale) for scale in (1.0, 10.0)}
    report = mended(s.maybe_update, x, 10.0)
    assert (report.before.breaks, report.after.breaks) == (1, 0)
    f = compiled_eager(s.maybe_update)
    for scale, value in expected.items():
        assert torch.equal(f(x, scale), value)


def test_near_miss_branch_with_side_effect_left_alone(mended):
    report = mended(s.near_miss_side_effect, torch.ones(2), [])
    assert report.decisions[0].rule is None
    assert "seen.append" in report.decisions[0].reason
    assert report.after.breaks == report.before.breaks == 1


def test_near_miss_unbound_name_left_alone(mended):
    report = mended(s.near_miss_unbound, torch.ones(2))
    assert report.decisions[0].rule is None and "unbound" in report.decisions[0].reason


def test_near_miss_different_shapes_keeps_original_choice(mended):
    """select() compares shapes at trace time; they differ, so the original branch stays."""
    expected = [s.near_miss_shapes(x) for x in (torch.ones(3), -torch.ones(3))]
    report = mended(s.near_miss_shapes, torch.ones(3))
    assert report.after.breaks == report.before.breaks == 1
    assert any("differ in shape" in d.reason for d in report.decisions if d.rule is None)
    f = compiled_eager(s.near_miss_shapes)
    assert torch.equal(f(torch.ones(3)), expected[0]) and torch.equal(f(-torch.ones(3)), expected[1])


def test_deferred_effects_keep_order_and_pre_mutation_values(mended):
    report = mended(s.side_effects, torch.ones(2))
    assert report.before.breaks >= 2 and report.after.breaks == 0
    assert {site.category for site in report.before.sites} == {SIDE_EFFECT}
    f = compiled_eager(s.side_effects)
    events = []
    handler = logging.Handler()
    handler.emit = lambda record: events.append(("log", record.getMessage()))
    s.log.addHandler(handler)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = f(torch.ones(2))
    finally:
        s.log.removeHandler(handler)
    assert torch.equal(result, s.side_effects(torch.ones(2)))
    assert out.getvalue() == "y is tensor([2., 2.]) torch.Size([2])\n"  # cloned before y.add_(100)
    assert events == [("log", "sum tensor(4.)")]
    warn_line = next(i for i, line in enumerate(open(s.__file__), 1) if 'warnings.warn("careful"' in line)
    assert [(w.category, str(w.message), w.filename, w.lineno) for w in caught] == [
        (FutureWarning, "careful", s.__file__, warn_line)]  # attributed to the original line


def test_deferred_print_emitted_when_call_raises(mended):
    mended(s.print_then_raise, torch.ones(2), False)
    f = compiled_eager(s.print_then_raise)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(KeyError):
        f(torch.ones(2), True)
    assert out.getvalue() == "before tensor([2., 2.])\n"


def test_shadowed_print_left_alone(mended):
    report = mended(s.shadowed_print, torch.ones(2), print)
    assert report.decisions[0].rule is None and "not provably" in report.decisions[0].reason
    assert report.after.breaks == report.before.breaks


def test_trap_lowers_guard_and_restores_exception_type(mended):
    report = mended(s.guard, torch.ones(2))
    assert report.before.sites[0].category == VALIDATION
    assert (report.before.breaks, report.after.breaks) == (1, 0)
    f = compiled_eager(s.guard)
    assert torch.equal(f(torch.ones(2)), s.guard(torch.ones(2)))
    with pytest.raises(ValueError, match="^negative input$"):
        f(-torch.ones(2))
    with pytest.raises(ValueError, match="^negative input$"):
        s.guard(-torch.ones(2))  # the mended code run eagerly raises exactly as before


def test_trap_torch_equal_guard(mended):
    report = mended(s.guard_equal, torch.ones(3), torch.ones(3))
    assert (report.before.breaks, report.after.breaks) == (1, 0)
    f = compiled_eager(s.guard_equal)
    with pytest.raises(ValueError, match="mask must be all ones"):
        f(torch.tensor([1.0, 0.0, 1.0]), torch.ones(3))


@pytest.mark.parametrize("fn,args,why", [
    (s.guard_in_try, (), "inside try"),
    (s.guard_dynamic_message, (), "constant"),
    (s.guard_short_circuit, (torch.ones(2),), "short-circuited operand"),  # `extra` is not proven a tensor
])
def test_trap_near_misses_left_alone(mended, fn, args, why):
    report = mended(fn, torch.ones(2), *args)
    assert report.decisions and report.decisions[0].rule is None and why in report.decisions[0].reason
    assert report.after.breaks == report.before.breaks


def test_detect_counts_graphs_not_just_explain():
    det = detect(s.mixed, (torch.arange(4.0),))
    assert det.graphs == 3 and det.breaks == 2
    assert {site.category for site in det.sites} == {SIDE_EFFECT, DATA_DEPENDENT}


def test_patch_applies_cumulatively_and_keeps_decorated_first_line():
    x = torch.ones(2)
    expected = s.decorated_two_sites(x)
    first_line = s.decorated_two_sites.__code__.co_firstlineno
    decisions = plan(detect(s.decorated_two_sites, (x,), explain=False).sites)
    assert [d.rule for d in decisions] == ["where", "defer"]
    patch = Patch()
    try:
        patch.apply(decisions[:1])
        patch.apply(decisions[1:])  # second round: both rewrites must survive
        assert s.decorated_two_sites.__code__.co_firstlineno == first_line
        lines = {line for _, line in dis.findlinestarts(s.decorated_two_sites.__code__) if line}
        source_lines, start = inspect.getsourcelines(s.decorated_two_sites)
        assert lines <= set(range(start, start + len(source_lines)))  # original line numbers kept
        after = detect(s.decorated_two_sites, (x,), explain=False)
        assert after.breaks == 0 and torch.equal(after.output, expected)
    finally:
        patch.undo()
    assert detect(s.decorated_two_sites, (x,), explain=False).breaks == 2  # undo restores the original


def test_break_in_loop_is_counted_and_fixed(mended):
    """Dynamo skips the whole frame (0 graphs, explain says -1); the logged break still counts."""
    before = detect(s.loop_break, (torch.ones(2),))
    assert (before.graphs, before.explain_breaks, before.breaks) == (0, -1, 1)
    report = mended(s.loop_break, torch.ones(2))
    assert (report.after.graphs, report.after.breaks) == (1, 0) and report.outputs_equal


def test_print_to_a_stream_read_back_is_left_alone(mended):
    report = mended(s.print_to_buffer, torch.ones(2), io.StringIO())
    assert report.decisions[0].rule is None and "file=" in report.decisions[0].reason


def test_changed_outputs_undo_every_rewrite(monkeypatch):
    """The last line of defence: if outputs differed, nothing stays rewritten."""
    import eqsat_torch.mend.mender as mender

    monkeypatch.setattr(mender, "compare", lambda ref, out: (False, "forced difference"))
    original_code = s.where_if_else.__code__
    report = mender.mend(s.where_if_else, (torch.ones(3),), explain=False)
    assert s.where_if_else.__code__ is original_code
    assert not report.applied and "undone: outputs changed" in report.decisions[0].reason
    assert report.after.breaks == report.before.breaks == 1


def _counting_backend(graphs):
    def counting(gm, example_inputs):
        graphs.append(gm)
        return gm.forward
    return counting


def test_bare_torch_compile_prints_every_call_in_order_with_one_compile(mended):
    """No boundary: each deferred print is an in-graph op, so the buffer Dynamo would guard on is gone."""
    report = mended(s.print_each_call, torch.ones(2))
    assert (report.before.breaks, report.after.breaks) == (1, 0)
    graphs = []
    torch._dynamo.reset()
    f = torch.compile(s.print_each_call, backend=_counting_backend(graphs))
    inputs = [torch.full((2,), float(i)) for i in range(10)]
    with contextlib.redirect_stdout(io.StringIO()) as out:
        results = [f(x) for x in inputs]
    assert len(graphs) == 1
    assert out.getvalue().splitlines() == [f"call {x * 2}" for x in inputs]
    for x, result in zip(inputs, results):
        assert torch.equal(result, x * 2 + 1)


def test_in_graph_effects_survive_aot_and_keep_pre_mutation_values(mended):
    """AOTAutograd functionalizes and dead-code-eliminates; the side-effecting op must stay, in order."""
    mended(s.side_effects, torch.ones(2))
    torch._dynamo.reset()
    f = torch.compile(s.side_effects, backend="aot_eager")
    events = []
    handler = logging.Handler()
    handler.emit = lambda record: events.append(record.getMessage())
    s.log.addHandler(handler)
    try:
        with contextlib.redirect_stdout(io.StringIO()) as out, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i in range(3):
                assert torch.equal(f(torch.full((2,), float(i))), (torch.full((2,), 2.0 * i) + 100) * 3)
    finally:
        s.log.removeHandler(handler)
    assert out.getvalue().splitlines() == [f"y is {torch.full((2,), 2.0 * i)} torch.Size([2])" for i in range(3)]
    assert events == ["sum " + str(torch.tensor(4.0 * i)) for i in range(3)]


def test_deferred_effects_under_dynamic_shapes_keep_shape_arguments(mended):
    """A shape printed under dynamic shapes is symbolic at trace time; it travels as an op argument."""
    mended(s.side_effects, torch.ones(2))
    graphs = []
    torch._dynamo.reset()
    f = torch.compile(s.side_effects, backend=_counting_backend(graphs), dynamic=True)
    with contextlib.redirect_stdout(io.StringIO()) as out, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in (2, 3, 4):
            f(torch.ones(n))
    assert len(graphs) == 1
    assert [line.split(" torch.Size")[1] for line in out.getvalue().splitlines()] == ["([2])", "([3])", "([4])"]


def test_arith_branch_admitted_by_observed_float_facts(mended):
    """`y - 1` raises on bool tensors, so only the observed float class makes it safe to speculate."""
    pos, neg = torch.tensor([1.0, 2.0, -0.5]), torch.tensor([-1.0, 0.5, -3.0])
    expected = {"pos": s.arith_branch(pos), "neg": s.arith_branch(neg)}
    report = mended(s.arith_branch, pos)
    assert (report.before.breaks, report.after.breaks) == (1, 0) and report.outputs_equal
    assert [d.rule for d in report.decisions] == ["where"]
    graphs = []
    torch._dynamo.reset()
    f = torch.compile(s.arith_branch, backend=_counting_backend(graphs))
    assert torch.equal(f(pos), expected["pos"]) and torch.equal(f(neg), expected["neg"])
    assert len(graphs) == 1  # both branches from one graph: the guard is static


def test_arith_branch_with_bool_tensor_takes_original_branch(mended):
    some, none = torch.tensor([True, False]), torch.tensor([False, False])
    expected = s.arith_branch(some)
    with pytest.raises(RuntimeError, match="Subtraction"):
        s.arith_branch(none)
    mended(s.arith_branch, torch.ones(2))
    assert torch.equal(s.arith_branch(some), expected)  # mended code, eager
    torch._dynamo.reset()
    before = detect(s.arith_branch, (some,), explain=False)
    assert before.breaks == 1 and before.sites[0].category == DATA_DEPENDENT  # the original `if`, still breaking
    assert torch.equal(before.output, expected)
    f = torch.compile(s.arith_branch, backend="eager")
    with pytest.raises(RuntimeError, match="Subtraction"):
        f(none)


def test_facts_refuse_what_the_observed_class_does_not_make_total():
    """Integer floor-division by zero raises: not admitted for int tensors, admitted for float."""
    import ast

    from eqsat_torch.mend.facts import Typing

    def cls(expr, observed):
        return Typing(observed, lambda n: n == "torch").tensor_class(ast.parse(expr, mode="eval").body)

    assert cls("y // 2", {"y": "int"}) is None and cls("y // 2", {"y": "float"}) == "float"
    assert cls("y - 1", {"y": "bool"}) is None and cls("(y - 1).float()", {"y": "int"}) == "float"
    assert cls("torch.exp(y) > w", {"y": "float", "w": "int"}) == "bool"
    assert cls("y.exp()", {"y": "int"}) is None and cls("y & 1", {"y": "float"}) is None


def test_static_prefix_false_runs_the_else_branch(mended):
    x = torch.ones(2)
    expected = {flag: s.static_prefix_else(x, flag) for flag in (True, False)}
    report = mended(s.static_prefix_else, x, True)
    assert (report.before.breaks, report.after.breaks) == (1, 0)
    f = compiled_eager(s.static_prefix_else)
    for flag, value in expected.items():
        assert torch.equal(f(x, flag), value)


def test_item_branch_keeps_the_flag_a_tensor_and_predicates_the_if(mended):
    mixed, positive = torch.tensor([1.0, -2.0, 3.0]), torch.tensor([1.0, 2.0, 3.0])
    expected = {"mixed": s.item_branch(mixed), "positive": s.item_branch(positive)}
    report = mended(s.item_branch, mixed)
    assert report.before.sites[0].category == SCALAR_READ and report.before.sites[0].gb_code == "GB0124"
    assert (report.before.breaks, report.after.breaks) == (1, 0) and report.outputs_equal
    assert [d.rule for d in report.decisions] == ["item", "where"]
    assert not report.suggestion  # nothing of that kind is left
    graphs = []
    torch._dynamo.reset()
    f = torch.compile(s.item_branch, backend=_counting_backend(graphs))
    assert torch.equal(f(mixed), expected["mixed"]) and torch.equal(f(positive), expected["positive"])
    assert len(graphs) == 1
    assert torch.equal(s.item_branch(positive), expected["positive"])  # eagerly still `.item()`


def test_item_used_as_a_value_is_left_alone(mended):
    report = mended(s.item_escapes, torch.tensor([1.0, -2.0]))
    assert report.decisions[0].rule is None and "used as a value" in report.decisions[0].reason
    assert report.after.breaks == report.before.breaks == 1
    assert report.suggestion.endswith("breaks 1 -> 1, outputs bit-identical")  # branching on it still breaks


def test_count_used_as_a_size_gets_a_measured_config_suggestion(mended):
    report = mended(s.count_as_size, torch.tensor([1.0, -2.0, 3.0]))
    assert report.after.breaks == report.before.breaks == 1
    assert report.suggestion.startswith("torch._dynamo.config.capture_scalar_outputs")
    assert report.suggestion.endswith("breaks 1 -> 0, outputs bit-identical")


def test_in_graph_print_reproduces_every_argument_kind(mended):
    """Enums, bools, None, numbers, sizes and nested containers print exactly as eagerly."""
    x = torch.arange(3.0)
    with contextlib.redirect_stdout(io.StringIO()) as eager:
        s.print_mixed_args(x)
    report = mended(s.print_mixed_args, x)
    assert (report.before.breaks, report.after.breaks) == (1, 0)
    torch._dynamo.reset()
    f = torch.compile(s.print_mixed_args, backend="eager")
    with contextlib.redirect_stdout(io.StringIO()) as compiled:
        f(x)
    assert compiled.getvalue() == eager.getvalue()


def test_item_rewrite_falls_with_the_if_it_feeds(mended):
    """The if's values differ in shape, so its select falls back at trace time; the [Item] rewrite goes too."""
    report = mended(s.item_shapes, torch.ones(3))
    assert [d.rule for d in report.decisions] == [None, None]
    assert "stands or falls" in report.decisions[0].reason and "fell back" in report.decisions[1].reason
    assert report.after.breaks == report.before.breaks == 1 and report.outputs_equal


def _graphs_of(fn, *args):
    graphs = []
    torch._dynamo.reset()
    out = torch.compile(fn, backend=_counting_backend(graphs))(*args)
    return len(graphs), out


def test_rows_loop_over_int_table_iterates_the_list_ints(mended):
    """Grounding-DINO's proposal loop: slice bounds, view and linspace sizes from a table's values."""
    x = torch.randn(2, 30)
    small, other = ((4, 4), (2, 2)), ((3, 3), (2, 2), (1, 1))
    expected = {levels: s.rows_proposals(x, levels) for levels in (small, other)}
    report = mended(s.rows_proposals, x, small)
    assert report.before.breaks >= 1 and report.after.breaks == 0 and report.outputs_equal
    assert [d.rule for d in report.decisions] == ["rows", "rows"]  # the loop and the table's maker
    for levels, value in expected.items():
        graphs, out = _graphs_of(s.rows_proposals, x, levels)
        assert graphs == 1 and torch.equal(out, value)
    assert torch.equal(s.rows_proposals(x, other), expected[other])  # eagerly the loop still sees tensors


def test_rows_table_made_up_the_call_stack(mended):
    x = torch.rand(2, 4) + 0.5
    expected = s.rows_made_by_caller(x)
    report = mended(s.rows_made_by_caller, x)
    assert (report.before.breaks, report.after.breaks) == (2, 0) and report.outputs_equal
    assert {d.filename for d in report.applied} == {s.__file__}
    graphs, out = _graphs_of(s.rows_made_by_caller, x)
    assert graphs == 1 and torch.equal(out, expected)


def test_rows_table_written_in_place_fails_loudly_not_silently(mended):
    x = torch.rand(2, 4) + 0.5
    eager = s.rows_written_in_place(x, True)
    report = mended(s.rows_written_in_place, x, False)
    assert report.after.breaks == 0 and [d.rule for d in report.applied] == ["rows", "rows"]
    assert torch.equal(s.rows_written_in_place(x, True), eager)  # uncompiled: exactly as before
    torch._dynamo.reset()
    with pytest.raises(RuntimeError, match="int table was written in place"):
        torch.compile(s.rows_written_in_place, backend="eager")(x, True)


@pytest.mark.parametrize("fn, why", [
    (s.rows_value_escapes, "`h` would be a Python int instead of a 0-d tensor in `sizes.append(h)`"),
    (s.rows_int32_table, "no `shapes = torch.as_tensor(<list>, dtype=torch.long)` up the call stack"),
    (s.rows_divides_a_tensor, "`h` would be a Python int instead of a 0-d tensor in `h / x[:, None, :w]`"),
])
def test_rows_near_misses_left_alone(mended, fn, why):
    report = mended(fn, torch.randn(2, 30))
    assert not report.applied and report.decisions[0].reason == why
    assert report.after.breaks == report.before.breaks >= 1


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int8, torch.int32, torch.int64, torch.float16,
                                   torch.bfloat16, torch.float32, torch.float64, torch.complex64])
def test_rows_factor_of_an_at_least_1d_tensor_promotes_like_a_python_int(dtype):
    """What [Rows] relies on for `t[:, None] * v`, `v * t[...]`, `t[...] / v` with |v| <= 256: a 0-d int64
    tensor and a Python int give the same dtype and the same values (NaN where the other has NaN)."""
    t = (torch.arange(12).reshape(4, 3) * 37 % 11 - 3).to(dtype)[:, None]
    for v in (0, 1, 3, -2, 7, 255, 256, -256):
        for op in (lambda a, b: a * b, lambda a, b: b * a, lambda a, b: a / b):
            a, b = op(t, torch.tensor(v)), op(t, v)
            assert a.dtype == b.dtype and torch.equal(a.isnan(), b.isnan())
            assert torch.equal(torch.where(a.isnan(), 0, a), torch.where(b.isnan(), 0, b)), (v, a, b)


def test_rows_int_over_a_tensor_differs_so_it_is_refused():
    """Why [Rows] refuses `v / t`: the 0-d tensor is cast to t's dtype first, a Python numerator is not."""
    t = torch.tensor([2.0], dtype=torch.float16)
    assert (torch.tensor(65535) / t).isinf().all() and (65535 / t == 32768).all()


def test_rows_dropped_when_the_table_arrives_without_ints(mended):
    report = mended(s.rows_table_of_floats, torch.rand(2, 4) + 0.5)
    assert not report.applied and report.after.breaks == report.before.breaks >= 1 and report.outputs_equal
    assert "arrived without the list's ints" in report.decisions[0].reason


def test_branch_that_memoises_module_state_is_refused_with_the_writes_named(mended):
    model = s.MemoRope()
    report = mended(model, torch.ones(3))
    assert not report.applied and report.after.breaks == report.before.breaks == 1
    assert report.decisions[0].reason.startswith(
        "the branch writes object state (self.long_inv_freq, self.register_buffer('inv_freq', ...), "
        "self.original_inv_freq)")
    assert not hasattr(model, "long_inv_freq")  # a short call never builds the long table
