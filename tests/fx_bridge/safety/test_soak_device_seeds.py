"""Mismatches of the device soaks (torch 2.11, H100 and its CPU), rerun here on CPU through the real
backend (Inductor and the post-grad pass)."""
import os

import pytest
import torch

from bench.soak.check import run_case


@pytest.fixture
def every_compile_runs_the_pass(monkeypatch):
    import torch._inductor.config as inductor_config

    monkeypatch.setitem(os.environ, "EQSAT_CACHE", "0")
    with inductor_config.patch(fx_graph_cache=False):  # monkeypatch's undo would delete the config's name
        yield


@pytest.mark.slow  # two Inductor compiles of a training step, eqsat's and the plain one
def test_a_user_output_sliced_from_a_computed_buffer_keeps_eager_strides(every_compile_runs_the_pass):
    """Seed 4000485t: output 1, a slice of a ``sum`` the post-grad graph computes, came back with
    strides (16, 4, 1) where eager's are (8, 2, 1): Inductor laid the sum out as it chose, and a user
    output that is a view only gets its strides' order."""
    result = run_case(4000485, train=True, device="cpu", inductor=True)
    assert result["problems"] == [], result["problems"]
    assert result["changed"] >= 2, "the post-grad pass must have rewritten the forward graph"


# -- gradients under reduced float32 matmul precision -----------------------------------------------------
def _tf32(t: torch.Tensor) -> torch.Tensor:
    """``t`` rounded to TF32's 10-bit mantissa, as a CUDA matmul reads it under precision "high"; the
    gradient passes straight through."""
    if t.dtype != torch.float32:
        return t
    rounded = ((t.detach().view(torch.int32) + 0x1000) & ~0x1FFF).view(torch.float32)
    return t + (rounded - t).detach()


def _bf16(t: torch.Tensor) -> torch.Tensor:
    return t + (t.detach().bfloat16().float() - t).detach() if t.dtype == torch.float32 else t


class _Linear(torch.nn.Module):
    def __init__(self, rounding=None):
        super().__init__()
        self.rounding = rounding
        self.weight = torch.nn.Parameter(torch.randn(32, 64) / 8)

    def forward(self, x):
        r = self.rounding or (lambda t: t)
        return (torch.nn.functional.linear(r(x), r(self.weight)),)


def _compare_linear(ours_rounding):
    """Eager rounds its matmul's operands as TF32 does; ours as ``ours_rounding`` (None: not at all,
    as a matmul eqsat computes as a product and a sum, or one in a kernel that keeps float32)."""
    import collections
    import copy

    from bench.soak.cases import Case
    from bench.soak.compare import compare

    torch.manual_seed(0)
    case = Case(0, "train", _Linear(), [torch.randn(16, 64)], context={"matmul_precision": "high"})
    eager, ours = copy.deepcopy(case.gm), copy.deepcopy(case.gm)
    eager.rounding, ours.rounding = _tf32, ours_rounding
    a, b = [case.inputs[0].clone().requires_grad_()], [case.inputs[0].clone().requires_grad_()]
    stats = collections.Counter()
    problems = compare(case, ours(*a), eager(*b), a, b, "cpu", stats,
                       (list(ours.named_parameters()), list(eager.named_parameters())), ref={})
    return problems, stats


def test_gradients_off_eager_under_tf32_but_nearer_float64_are_no_mismatch():
    """GPU soak (torch 2.11, H100), module steps under matmul precision high/medium: 8 cases with
    gradients ~1e-3 off eager's where the compile without eqsat is 1e-7 off (4000027t, ...). Eager's
    matmuls round to TF32; a compile running other matmuls rounds elsewhere or not at all (emulated
    on CPU, seeds 4000027t/4000047t/4000415t/4000425t: eager 7e-4 to 2e-2 off float64, eqsat 1e-7 to
    5e-6). Judged against float64, as output values already are."""
    problems, stats = _compare_linear(None)
    assert problems == [], problems
    assert stats["gradients_as_close_as_eager"] >= 1, stats


def test_gradients_farther_from_float64_than_eager_under_tf32_are_a_mismatch():
    problems, _ = _compare_linear(_bf16)
    assert "gradients" in [k for k, _ in problems], problems


# -- a view of an output given a dense layout -------------------------------------------------------------
def _outputs_of(x: torch.Tensor, dense: bool):
    base = torch.relu(x).unbind(2)[2]  # (2, 2), strides (6, 3): no dense layout
    base = base.contiguous() if dense else base
    return (base, base.narrow(1, 1, 1))


def _compare_outputs(got):
    import collections

    from bench.soak.cases import Case
    from bench.soak.compare import compare

    x = torch.randn(2, 2, 3)
    case = Case(0, "infer", lambda x: _outputs_of(x, False), [x])
    stats = collections.Counter()
    return compare(case, got(x), _outputs_of(x, False), [x], [x.clone()], "cpu", stats), stats


def test_a_view_of_an_output_made_dense_is_no_strides_mismatch():
    """CPU soak seed 3005246 (torch 2.11; 2.13 with --inductor): output 0, eager's a non-dense select
    of a relu, came back dense (as aliasing.py allows), and output 1, a narrow of it, in that layout:
    (2, 1) with strides (2, 1) where eager's are (6, 3), still a view of output 0."""
    problems, stats = _compare_outputs(lambda x: _outputs_of(x, True))
    assert problems == [], problems
    assert stats["views_of_dense_outputs"] == 1, stats


def test_an_output_in_another_layout_that_views_no_dense_output_is_a_strides_mismatch():
    def second_of_another_buffer(x):
        base, _ = _outputs_of(x, True)
        return base, torch.relu(x)[:, :, 2].contiguous().narrow(1, 1, 1)  # eager's values, not base's view
    problems, _ = _compare_outputs(second_of_another_buffer)
    assert "strides" in [k for k, _ in problems], problems


@pytest.mark.slow  # an Inductor compile, eqsat's and the plain one
def test_soak_seed_3005246_through_inductor(every_compile_runs_the_pass):
    result = run_case(3005246, train=False, device="cpu", inductor=True)
    assert result["problems"] == [], result["problems"]


def test_a_view_of_an_input_returned_twice_is_two_tensors_in_the_aot_path(every_compile_runs_the_pass):
    """CPU soak seed 3008771t (torch 2.11; 2.13 too, not with --inductor): the soak's eager run of the
    AOT graphs returned ``x.unbind(0)[0]`` and its ``view_as`` as one tensor; Inductor returns two."""
    result = run_case(3008771, train=True, device="cpu")
    assert result["problems"] == [], result["problems"]


@pytest.mark.parametrize("seed", [3001193, 3003839])
def test_a_float32_gradient_through_a_two_wide_layernorm_is_judged_against_float64(seed):
    """CPU soak seeds 3001193t, 3003839t (float32 module steps, no context): eqsat's gradient of a
    Linear feeding a LayerNorm over two elements is 2.4e-5 (6e-5) off eager's, above the rounding
    tolerance (1.6e-5), where eager is itself 2.4e-5 off float64 (0.1 % of the gradient: the
    LayerNorm divides rounding by a tiny deviation). Judged against float64 as torch's benchmark
    harness judges training (``compare._as_close_as_eager``), no mismatch."""
    result = run_case(seed, train=True, device="cpu")
    assert result["problem"] is None, result["problems"]
    assert result.get("gradients_as_close_as_eager", 0) >= 1, result
