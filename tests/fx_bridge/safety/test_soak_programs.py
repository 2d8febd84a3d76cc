"""The soak generates and checks what issue 28's R1–R3 needed: inputs with layouts, in-place writes
to inputs and their views, grad-mode regions; and its checks catch each of those wrong answers
(a backend made to give them is flagged, by kind), while eqsat passes them.
"""
import collections
import json
import random

import pytest
import torch

from bench.scripts.soak import main
from bench.soak.cases import Case, make_case
from bench.soak.check import check, run_case
from bench.graphgen import copy_with_layout, random_graph
from bench.graphgen_ops import Features
from tests.fx_bridge.safety.issue28_programs import (cat_of_split, channels_last, mutated_view_then_cat, no_grad_cat,
                                          setitem_then_stack, stack_of_unbind, transposed, zero_then_cat)


# -- the generator ------------------------------------------------------------------------------------
def test_the_generator_draws_every_feature_and_eager_runs_all_of_it():
    layouts, regions, writes, modes = collections.Counter(), collections.Counter(), collections.Counter(), set()
    to_inputs = 0
    for seed in range(120):
        case = make_case(seed, train=seed % 2 == 1)  # only programs eager runs, forward and backward
        modes.add(case.mode)
        layouts.update(case.features["layouts"])
        regions[case.features["grad_region"]] += 1
        writes.update(w.split()[0] for w in case.features["inplace"])
        to_inputs += any("input" in w for w in case.features["inplace"])
    assert modes == {"infer", "train", "no_grad"}
    assert set(layouts) == {"transposed", "channels_last", "expanded", "sliced"}, layouts
    assert {"no_grad", "enable_grad", "inference_mode"} <= set(regions), regions
    assert set(writes) == {"zero_", "mul_", "add_", "copy_", "fill_", "setitem"}, writes
    assert to_inputs >= 10


@pytest.mark.parametrize("seed", range(40))
def test_inputs_have_the_layout_drawn_and_copies_keep_it(seed):
    rng = random.Random(seed)
    gm, inputs = random_graph(rng, n_ops=3, dtype=torch.float32, features=Features(layouts=1.0, rank4=0.5))
    layouts = gm.meta["features"]["layouts"]
    assert len(layouts) == len(inputs), (layouts, len(inputs))  # layouts=1.0: every input has one drawn
    for x, kind in zip(inputs, layouts):
        if kind == "transposed":
            assert not x.is_contiguous()
        elif kind == "channels_last":
            assert x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()
        elif kind == "expanded":
            assert 0 in x.stride()
        else:
            assert x.storage_offset() > 0
        y = copy_with_layout(x)
        assert (y.stride(), y.storage_offset()) == (x.stride(), x.storage_offset()) and torch.equal(x, y)
        assert y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr() and y.is_leaf


def test_without_features_the_generator_draws_what_it_always_drew():
    gm, _ = random_graph(random.Random(7), n_ops=8)
    assert "features" not in gm.meta
    assert not any(n.target in (torch._C._set_grad_enabled,) for n in gm.graph.nodes)


# -- issue 28's programs ------------------------------------------------------------------------------
def _enable_grad_cat(w):
    with torch.enable_grad():
        s = torch.cat(torch.split(w, 2, 1), 1)
    return s, s * 2            # s carries autograd history, s * 2 (made under no_grad) does not


PROGRAMS = {  # name: (function, inputs, mode)
    "R1_transposed": (cat_of_split, lambda: [transposed()], "infer"),
    "R1_channels_last": (stack_of_unbind, lambda: [channels_last()], "infer"),
    "R2_zero_then_cat": (zero_then_cat, lambda: [torch.randn(4, 3)], "infer"),
    "R2_setitem_then_stack": (setitem_then_stack, lambda: [torch.randn(4, 3)], "infer"),
    "R2_mutated_view_then_cat": (mutated_view_then_cat, lambda: [torch.randn(4, 3)], "infer"),
    "R3_no_grad": (no_grad_cat, lambda: [torch.randn(3, 4)], "train"),
    "R3_enable_grad_under_no_grad": (_enable_grad_cat, lambda: [torch.randn(3, 4)], "no_grad"),
}


def _case(name):
    fn, inputs, mode = PROGRAMS[name]
    torch.manual_seed(0)
    return Case(0, mode, fn, inputs())


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_issue_28_programs_pass_the_soaks_checks(name):
    result = check(_case(name))
    assert result["problems"] == [], result


# A backend that gives each wrong answer, to show the checks see it.
def _eager_then(change):
    def backend(gm, example_inputs):
        def run(*args):
            return tuple(change(gm, args))
        return run
    return backend


def _returns_the_input(gm, args):          # the R1/R2 bug: cat(split(x)) became x itself
    gm(*args)
    return (args[0],)


def _transposed_layout(gm, args):           # same values, another layout
    return [o.t().contiguous().t() if o.dim() == 2 else o.contiguous(memory_format=torch.channels_last)
            if o.dim() == 4 else o for o in gm(*args)]


def _mutation_lost(gm, args):               # the input is never written
    return gm(*[a.clone() for a in args])


def _grad_mode_ignored(gm, args):           # the no_grad / enable_grad region dropped
    for n in list(gm.graph.nodes):
        if n.target is torch._C._set_grad_enabled:
            gm.graph.erase_node(n)
    gm.recompile()
    return gm(*args)


@pytest.mark.parametrize("name, change, kinds", [
    ("R1_transposed", _returns_the_input, {"aliasing", "strides"}),
    ("R1_transposed", _transposed_layout, {"strides"}),
    ("R1_channels_last", _transposed_layout, {"strides"}),
    ("R2_zero_then_cat", _returns_the_input, {"aliasing"}),
    ("R2_setitem_then_stack", _mutation_lost, {"inputs"}),
    ("R2_mutated_view_then_cat", _mutation_lost, {"inputs"}),
    ("R3_no_grad", _grad_mode_ignored, {"gradients"}),
    ("R3_enable_grad_under_no_grad", _grad_mode_ignored, {"requires_grad"}),
], ids=lambda v: getattr(v, "__name__", None) if callable(v) else None)
def test_the_soak_flags_each_wrong_answer(name, change, kinds):
    result = check(_case(name), backend=_eager_then(change))
    assert {k for k, _ in result["problems"]} == kinds, result["problems"]


# -- what the soak found: gradients and requires_grad around a no_grad region (R3's kind) --------------
def _no_grad_after_a_rewrite(x):
    c = torch.cat([x], 0)      # outside the region: cat_single makes it x
    with torch.no_grad():
        s = c.sin()            # inside: lowered as sin(detach(c)); its copy must read detach(x), not x
    return x * s


def _no_grad_next_to_an_inplace_op(x):
    d = x.clone()
    d.mul_(2)                                     # an in-place op on an intermediate, made functional first
    with torch.no_grad():
        s = torch.cat(torch.split(x, 2, 1), 1)    # R3's region
    return x.sigmoid() * s, d


def _no_grad_opaque_after_a_rewrite(x):
    c = torch.cat([x, x, x], 0)
    with torch.no_grad():
        y = torch.cumsum(c, 1)  # an opaque op: the same, through its argument list
    return x, y


@pytest.mark.parametrize("fn, shape", [(_no_grad_after_a_rewrite, (2, 8)), (_no_grad_opaque_after_a_rewrite, (6, 8, 2))],
                         ids=["unary", "opaque"])
def test_a_no_grad_read_of_a_rewritten_value_stays_cut_from_autograd(fn, shape):
    """Soak seeds 5, 137, 197, 1019, 1063, 1111, 1351: raising copied the region's node with its FX
    inputs, past the detach lowering read them through (``Lowered.read`` keeps the cut read)."""
    result = check(Case(0, "train", fn, [torch.randn(shape)]))
    assert result["problems"] == [], result["problems"]
    assert result["changed"], result


def test_a_no_grad_region_next_to_a_functionalized_inplace_op_keeps_its_gradient():
    """Soak seeds 13, 100177: functionalize.py re-propagated fake values, which FakeTensorProp records
    detached, so lowering saw no value carrying autograd history and cut none of the region's reads."""
    result = check(Case(0, "train", _no_grad_next_to_an_inplace_op, [torch.randn(3, 4)]))
    assert result["problems"] == [], result["problems"]
    assert result["changed"], result


def _view_made_under_no_grad(x):
    with torch.no_grad():
        p = x.unbind(0)                          # views of x: in eager they keep requires_grad=True
        s = torch.split(p[2], 1, dim=-2)
        st = torch.stack([s[0], s[1], s[0]], dim=1)
    return st, p[0]


def test_a_view_made_under_no_grad_keeps_requires_grad():
    """Soak seeds 100159, 100183, 1343, 1395: a view of ``detach(x)`` does not require grad, eager's view
    made under no_grad does; it is now raised as a view of ``x`` inside a no_grad region."""
    result = check(Case(0, "train", _view_made_under_no_grad, [torch.randn(4, 3, 4)]))
    assert result["problems"] == [], result["problems"]
    assert result["changed"], result


def _no_grad_view_read_after_the_region(x0, w1):
    with torch.no_grad():
        chunk = x0.chunk(5, 1)
        g0, g3 = chunk[0], chunk[3]
        cat = torch.cat([g0, chunk[1], chunk[2], g3], dim=1)  # cat_single, batch_detach: joined with x0's pieces
        amax = cat.amax(-2, keepdim=False)
        torch.nn.functional.linear(cat, w1)
        torch.cat([x0], 0)
        head = g0[:, 0:2]
    soft = torch.softmax(head.sigmoid().unbind(0)[0], -1)
    return amax, g3.narrow(1, 1, 1), g0, soft, x0, w1.flatten()

def test_a_node_reading_a_no_grad_view_after_the_region_is_copied_reading_its_remake():
    """Soak seed 159t: ``g3.narrow`` (outside the region) read the view remade of ``x0``
    (``lower._Lowerer.escaped``), but raising copied the node with the region's piece of
    ``detach(x0)``, so it came back with requires_grad False (``Lowered.read`` keeps the remade read)."""
    inputs = [torch.randn(1, 8, dtype=torch.float16), torch.randn(2, 8, dtype=torch.float16)]
    result = check(Case(0, "train", _no_grad_view_read_after_the_region, inputs))
    assert result["problems"] == [], result["problems"]
    assert result["changed"], result


def _linear_read_only_under_no_grad(x, w1, w2, w3):
    a = torch.nn.functional.linear(x, w1)     # its only path to an output is cut by the region
    b = torch.nn.functional.linear(x, w2)
    c = torch.nn.functional.linear(x, w3)
    m = a.mean(0, keepdim=True)
    with torch.no_grad():
        s = torch.cat(torch.split(m, 2, 1), 1)
    return b.sigmoid(), c.tanh(), s


def test_a_weight_whose_gradient_no_grad_cuts_keeps_grad_none():
    """Soak seeds 2002447, 2001807: the three linears of ``x`` were fused into one on the concatenated
    weights, whose gradient reaches ``w1`` too (zeros; eager leaves ``w1.grad`` None). Values passing
    no gradient to an output are grouped apart from those that do (``Lowered.grad_dead``)."""
    ws = [torch.randn(8, 6) for _ in range(3)]
    result = check(Case(0, "train", _linear_read_only_under_no_grad, [torch.randn(4, 6), *ws]))
    assert result["problems"] == [], result["problems"]
    assert result["changed"], result


def test_only_linears_passing_gradient_are_fused_together():
    from eqsat_torch.lowering.lower import lower
    from eqsat_rules.batch_groups import find_groups
    from tests.captured import dynamo_graph

    gm, ex = dynamo_graph(_linear_read_only_under_no_grad,
                          *(torch.randn(s, requires_grad=True) for s in [(4, 6), (8, 6), (8, 6), (8, 6)]))
    low = lower(gm, ex)
    (members,) = [g.members for g in find_groups(low) if g.rule == "batch_linear_lhs"]
    weights = {low.node_of_let[low.originals[m].args[1].let].name for m in members}
    assert weights == {"l_w2_", "l_w3_"}, weights


# -- values in half precision: a rounding fewer than eager is no mismatch --------------------------------
def _square_of_a_copy(x, w):
    c = x * 3
    s = torch.stack(c.unbind(0), 0)         # a copy: a rounding point in Inductor (a buffer), none in eager
    return torch.nn.functional.linear(torch.cat([s * s, c], 0), w)


def _fused(x, w):
    """What Inductor computes for ``_square_of_a_copy`` once the stack of the unbind is rewritten away
    (soak seed 1001189): the square fuses with ``x * 3``, kept in float32, a bf16 rounding fewer."""
    c = x.float() * 3
    return torch.nn.functional.linear(torch.cat([(c * c).bfloat16(), c.bfloat16()], 0), w)


def _half_precision_case():
    torch.manual_seed(1)  # an input where the linear's cancellation takes the rounding past assert_close's rtol
    return Case(0, "infer", _square_of_a_copy, [torch.randn(6, 8, dtype=torch.bfloat16),
                                                      torch.randn(1, 8, dtype=torch.bfloat16)])


def test_a_rounding_fewer_than_eager_is_no_values_mismatch():
    """Soak seed 1001189 (--inductor, bf16): 0.25 off eager (one ulp through the cancellation), 0.18 off
    float64 where eager is 0.21 off; with emulate_precision_casts Inductor gives eager's bits exactly."""
    case = _half_precision_case()
    with pytest.raises(AssertionError):
        torch.testing.assert_close(_fused(*case.inputs), _square_of_a_copy(*case.inputs))
    result = check(case, backend=lambda gm, ex: lambda *xs: (_fused(*xs),))
    assert result["problems"] == [], result["problems"]
    assert result["values_as_close_as_eager"] == 1, result


def test_values_farther_from_float64_than_eager_are_a_mismatch():
    def pieces_swapped(x, w):  # a wrong answer the rounding's slack must not hide
        c = x.float() * 3
        return (torch.nn.functional.linear(torch.cat([c.bfloat16(), (c * c).bfloat16()], 0), w),)

    result = check(_half_precision_case(), backend=lambda gm, ex: pieces_swapped)
    assert [k for k, _ in result["problems"]] == ["values"], result


# -- the soak's compile without eqsat keeps Inductor's output layouts too ---------------------------------
@torch.library.custom_op("eqsat_soak_test::column_major", mutates_args=())
def _column_major(x: torch.Tensor) -> torch.Tensor:
    return x.t().contiguous().t()


@_column_major.register_fake
def _(x):
    return torch.empty_like(x, memory_format=torch.contiguous_format)  # meta strides: row-major


def test_meta_strides_that_differ_from_run_time_strides_are_not_charged_to_eqsat():
    """Soak seed 2000792 (torch 2.11, graph unchanged): Inductor gives an output the strides of its meta
    value, so the soak's eqsat path does too (``_keep_layouts``); the compile without eqsat did not, and
    where an op's meta strides are not its run-time strides (2.11's ``aten.zero`` of a transposed view;
    here a custom op) the difference was charged to eqsat."""
    result = check(Case(0, "infer", lambda x: torch.ops.eqsat_soak_test.column_major(x), [torch.randn(4, 6)]))
    assert result["problems"] == [], result["problems"]
    assert result["without_eqsat_too"] == ["strides"], result


def test_strides_eqsat_changes_are_still_charged_to_it(monkeypatch):
    monkeypatch.setattr("bench.soak.check._backend", lambda reports: _eager_then(_transposed_layout))
    result = check(Case(0, "infer", lambda x: x * 2, [torch.randn(4, 6)]))
    assert [k for k, _ in result["problems"]] == ["strides"], result


@torch.library.custom_op("eqsat_soak_test::row_major_said_column_major", mutates_args=())
def _said_column_major(x: torch.Tensor) -> torch.Tensor:
    return x.clone()                                    # run time: row-major, like x


@_said_column_major.register_fake
def _(x):
    return torch.empty_strided(x.shape, (1, x.shape[0]), dtype=x.dtype, device=x.device)  # meta: column-major


def _cat_of_one_piece_of_a_value_meta_says_is_column_major(x):
    y = torch.ops.eqsat_soak_test.row_major_said_column_major(x)  # (2, 8): strides (8, 1), meta (1, 2)
    return torch.cat([y[:, 5:6]], 1)  # eager: fresh, (1, 1); the piece itself: (8, 1), meta (1, 2)


def test_a_cat_of_one_input_is_that_input_in_the_compile_without_eqsat_too():
    """Soak seed 2002268 (torch 2.11, whose meta strides of ``aten.zero`` of a transposed view are not
    its run-time ones; here a custom op): ``cat_single`` made the output the piece it concatenates, a
    view whose meta strides agree with eager's where its run-time ones do not. Inductor alone does the
    same (its decomposition makes a cat of one input a clone, and ``remove_noop_ops`` drops a clone
    whose meta value is its input's), so the soak's compile without eqsat now imitates both."""
    result = check(Case(0, "infer", _cat_of_one_piece_of_a_value_meta_says_is_column_major,
                                  [torch.randn(2, 8)]))
    assert result["problems"] == [], result["problems"]
    assert result["without_eqsat_too"] == ["strides"], result


def _cat_of_one_slice(x):
    return torch.cat([(x * 2)[:, 1:3]], 1)  # a slice is not dense: Inductor's clone of it is fresh, eager's layout


def _cat_of_one_is_its_input(gm, args):      # cat_single with no copy: the slice itself, a view
    for n in gm.graph.find_nodes(op="call_function", target=torch.cat):
        if len(n.args[0]) == 1:
            n.replace_all_uses_with(n.args[0][0])
            gm.graph.erase_node(n)
    gm.recompile()
    return gm(*args)


def test_a_cat_of_one_input_that_inductor_keeps_fresh_is_still_charged_as_a_view(monkeypatch):
    monkeypatch.setattr("bench.soak.check._backend", lambda reports: _eager_then(_cat_of_one_is_its_input))
    result = check(Case(0, "infer", _cat_of_one_slice, [torch.randn(6, 4)]))
    assert [k for k, _ in result["problems"]] == ["strides"], result
    assert not result.get("without_eqsat_too"), result


def test_a_view_of_an_output_given_its_old_strides_back_is_no_crash():
    """Soak seed 971 (training): the post-grad pass made an output (a slice, then an add) contiguous, so
    ``remove_noop_ops`` dropped the clone its linear's ``_unsafe_view`` read, and the soak's imitation of
    Inductor restrided the output to the slice's strides for that view too, which eager cannot view; Inductor
    indexes a buffer in any layout. The view reads it as a reshape there."""
    result = run_case(971, train=True, contexts=False)
    assert result["problems"] == [], result["problems"]
    assert result["changed"], result



@pytest.mark.parametrize("seed, train", [(3002621, True)])
def test_an_output_given_an_expands_strides_back_is_no_crash(seed, train):
    """Soak seed 3002621 (training; 3005076 too, until the expand it returns was pinned,
    ``view_outputs_pinned``): the post-grad pass made an output that eager
    computes as an expand a fresh tensor, and the imitation of Inductor gave it the expand's zero
    strides back by ``copy_`` into ``empty_strided``, which eager refuses (one memory location, many
    elements); Inductor's kernel writes each element. The imitation copies one slice per zero stride."""
    result = run_case(seed, train=train, contexts=False)
    assert result["problems"] == [], result["problems"]
    assert result["changed"], result


@pytest.mark.parametrize("seed", [3001295, 3010073])
def test_a_copied_node_whose_input_is_its_own_class_is_rebuilt_from_its_term(seed):
    """Soak seeds 3001295 and 3010073 (training): ``narrow(p, 1, 0, 1)`` of the one-wide piece ``p`` of
    ``split(x, 1, 1)`` is ``p``; both are one e-node, so raising copied the narrow reading its own
    class and failed (``KeyError``, graph kept as an internal error)."""
    result = run_case(seed, train=True, contexts=False)
    assert not result.get("internal_errors"), result["internal_errors"]
    assert result["problems"] == [] and result["changed"], result

# -- what the soak found: outputs in other layouts (R1's kind) through the post-grad pass -------------
def _split_cat_of_a_slice_after_a_write(x):
    y = x.clone()
    y.fill_(1.0)                   # the pre-grad pass keeps this graph (a write); the post-grad pass sees it
    piece = y.chunk(4, 3)[3]       # a view, strides (32, 16, 8, 1)
    return torch.cat(torch.split(piece, 1, 0), 0)   # eager: a fresh, contiguous tensor


def _two_linears_of_one_input(x, w1, w2):
    return torch.nn.functional.linear(x, w1), torch.nn.functional.linear(x, w2)


@pytest.mark.parametrize("fn, shapes, rewritten", [(_split_cat_of_a_slice_after_a_write, [(2, 2, 2, 8)], 1),
                                                   (_two_linears_of_one_input, [(4, 6), (3, 6), (8, 6)], 0)],
                         ids=["split_cat_of_a_slice", "batched_linears"])
def test_post_grad_outputs_keep_eagers_strides_through_inductor(fn, shapes, rewritten):
    """Soak seeds 308, 325: the post-grad pass made an output a view (a piece of the batched linears'
    buffer, the slice itself), and Inductor keeps only the stride order of a view output; aliasing.py
    now gives such an output a clone, whose exact (eager's) strides Inductor sets."""
    torch.manual_seed(0)
    with torch._inductor.config.patch(fx_graph_cache=False):  # a cache hit would not run the pass
        result = check(Case(0, "infer", fn, [torch.randn(s) for s in shapes]), inductor=True)
    assert result["problems"] == [], result["problems"]
    assert result["changed"] == rewritten, result  # the batched linears with a copy are no cheaper: kept


# -- what the soak found: a kept view of a value a rewrite gave another layout --------------------------
def _view_of_a_cat_of_one(x):
    return torch.cat([x], 0).view(-1)          # cat_single makes it x, which a view cannot flatten


def _reshape_of_a_clone(x):
    c = x.clone()                              # preserve format: channels_last, like x
    return c, c.clone().reshape(-1, 6)         # Aten: clone(contiguous) + _unsafe_view, one class with c


@pytest.mark.parametrize("fn, make", [
    (_view_of_a_cat_of_one, lambda: torch.randn(2, 5)[:, 1:3]),
    (_view_of_a_cat_of_one, lambda: torch.randn(6, 4).t()),
    (_reshape_of_a_clone, lambda: torch.randn(4, 6, 3, 6).to(memory_format=torch.channels_last)),
], ids=["sliced", "transposed", "channels_last_clone"])
@pytest.mark.parametrize("mode", ["infer", "train"])
def test_a_kept_view_of_a_value_in_another_layout_becomes_a_reshape(fn, make, mode):
    """Soak seeds 462, 629, 740: a rule true as values dropped the copy that made a view's operand
    contiguous; raising kept the original ``view`` / ``aten.view`` / ``aten._unsafe_view``, which
    cannot view the new layout, and both passes kept their graphs as internal errors."""
    torch.manual_seed(0)
    result = check(Case(0, mode, fn, [make()]))
    assert result["problems"] == [], result["problems"]
    assert not result.get("internal_errors"), result["internal_errors"]
    assert result["changed"], result


@pytest.mark.slow
def test_the_reshape_a_kept_view_becomes_compiles_through_inductor():
    """The same through the real backend: Inductor lowers the post-grad graph's ``aten.reshape``."""
    torch.manual_seed(0)
    with torch._inductor.config.patch(fx_graph_cache=False):  # a cache hit would not run the pass
        result = check(Case(0, "infer", _view_of_a_cat_of_one, [torch.randn(6, 4).t()]), inductor=True)
    assert result["problems"] == [], result["problems"]
    assert not result.get("internal_errors"), result["internal_errors"]
    assert result["changed"], result


def _backward_the_analysis_never_finishes(x):
    c = x.clone()
    c.select(0, 5).mul_(-1)
    a = torch.stack(c.unbind(0), 0).amax(0)
    return torch.where(a > 0, a, a)


# The backward graph's post-grad pass under a budget the clock cannot end: before the fix one analysis
# command of it grew past 3 GB with no end (rules/listpat.py: a row per combination of the elements'
# matches), so it runs in a process of its own, its memory capped, and must finish to pass.
_LONG_BUDGET = """
import torch
from functorch.compile import make_boxed_func
from eqsat_torch.inductor import compat
from eqsat_torch.options import Options
from eqsat_torch.inductor.post_grad import EqsatPostGradPass
from tests.fx_bridge.safety.test_soak_programs import _backward_the_analysis_never_finishes as f

p = EqsatPostGradPass(Options(seconds=600))
def compiler(gm, example_inputs):
    p(gm.graph)
    gm.recompile()
    return make_boxed_func(gm.forward)

x = torch.randn(6, 3, 2, 2, requires_grad=True)
torch.compile(f, backend=compat.aot_backend(compiler))(x).sum().backward()
y = x.detach().clone().requires_grad_()
f(y).sum().backward()
torch.testing.assert_close(x.grad, y.grad)
print("STOP", [r.stop_reason for r in p.reports])
"""


def _capped(limit: int):
    def cap():
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return cap


@pytest.mark.slow  # a process of its own: torch's import and a training compile, ~15 s
def test_the_analysis_of_a_backward_graph_terminates():
    """Soak seed 100055: the AOT backward graph's analysis reaches its fixpoint with Options(seconds=600)
    (the work budgets end it, not the clock; before: > 3 GB inside one egglog command, no end)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "EQSAT_CACHE": "0", "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", _LONG_BUDGET], env=env, capture_output=True, text=True,
                          timeout=300, preexec_fn=_capped(4 << 30))
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = [ln for ln in done.stdout.splitlines() if ln.startswith("STOP")]
    assert line.count("'") >= 4 and "time budget" not in line, line  # forward and backward, neither clock-stopped
    result = check(Case(0, "train", _backward_the_analysis_never_finishes, [torch.randn(6, 3, 2, 2)]))
    assert result["problems"] == [], result["problems"]
    assert not result.get("internal_errors"), result


def test_a_graph_with_nothing_to_choose_is_no_internal_error():
    """Soak seeds 47, 59, 61, …: a backward graph whose gradients are all None; eqsat/extract.py calls
    the ILP with no columns, where SciPy raised (the graph was kept, but as an internal error)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from eqsat_torch.options import Options
    from eqsat_torch.inductor.post_grad import optimize_graph_in_place

    g = torch.fx.Graph()
    t = g.placeholder("tangents_1")
    with FakeTensorMode():
        t.meta["val"] = torch.empty(3, 4)
    g.output((None, None))
    report = optimize_graph_in_place(g, Options())
    assert report.fallback in ("", "skipped"), report.skipped


# -- the real compile ---------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("seed, train", [(68, False), (17, True), (180, False), (1001189, True)])
def test_soak_cases_through_inductor(seed, train):
    """``--inductor``: the backend as users get it (inner Inductor, post-grad pass), a C++ compile per graph."""
    result = run_case(seed, train, inductor=True, contexts=False)
    assert result["features"]["layouts"] or result["features"]["inplace"] or result["features"]["grad_region"]
    assert result["problems"] == [], result


@pytest.mark.slow  # a spawned worker process and a training compile: ~30 s
def test_seeds_reruns_the_cases_named(tmp_path):
    """``--seeds``: the cases a report names, here soak seed 2002447 (training; gradients before the fix)."""
    summary = tmp_path / "summary.json"
    assert main(["--seeds", "2002447t", "--workers", "1", "--no-contexts", "--summary", str(summary)]) == 0
    totals = json.loads(summary.read_text())
    assert (totals["cases"], totals["training"], totals["mismatches"]) == (1, 1, 0), totals
