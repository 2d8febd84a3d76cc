"""``torch.compile(m, backend="eqsat", mode=..., options=...)``: the mode and Inductor's options reach
the inner Inductor, our options reach the optimizer, an unknown name fails loudly."""
import pytest
import torch

import torch._inductor.config as inductor_config
from eqsat_torch.inductor import compat
from eqsat_torch.backend import eqsat_backend
from eqsat_torch.options import OptionError
from eqsat_torch.inductor.post_grad import EqsatPostGradPass


def split_sigmoid_cat(x):
    return torch.cat([torch.sigmoid(p) for p in torch.split(x, 4, dim=1)], dim=1)


@pytest.fixture
def inner_config(monkeypatch):
    """What ``compile_fx`` is asked to run under (its ``config_patches``), applied as Inductor does."""
    seen = {}

    def fake_compile_fx(gm, example_inputs, config_patches=None):
        with inductor_config.patch(config_patches or {}):
            seen.update(max_autotune=inductor_config.max_autotune, cudagraphs=inductor_config.triton.cudagraphs,
                        epilogue_fusion=inductor_config.epilogue_fusion,
                        post_grad=inductor_config.post_grad_custom_pre_pass)
        return gm.forward

    monkeypatch.setattr(compat, "compile_fx", lambda: fake_compile_fx)
    return seen


@pytest.mark.parametrize("mode, autotune, cudagraphs", [("reduce-overhead", False, True), ("max-autotune", True, True),
                                                        ("max-autotune-no-cudagraphs", True, False)])
def test_the_mode_reaches_inductor(inner_config, mode, autotune, cudagraphs):
    x = torch.randn(8, 16)
    torch.testing.assert_close(torch.compile(split_sigmoid_cat, backend="eqsat", mode=mode)(x), split_sigmoid_cat(x))
    assert inner_config["max_autotune"] is autotune and inner_config["cudagraphs"] is cudagraphs
    assert isinstance(inner_config["post_grad"], EqsatPostGradPass)  # our pass is still installed


def test_options_split_between_inductor_and_us(inner_config):
    x = torch.randn(8, 16)
    b = eqsat_backend()
    f = torch.compile(split_sigmoid_cat, backend=b, options={"epilogue-fusion": False, "max_autotune": True,
                                                             "disabled": ["split_cat", "algebra", "batch"]})
    torch.testing.assert_close(f(x), split_sigmoid_cat(x))
    assert inner_config["max_autotune"] is True and inner_config["epilogue_fusion"] is False
    assert not b.reports[0].rules_fired  # every family off: our option took effect


def test_no_mode_changes_nothing(inner_config):
    torch.compile(split_sigmoid_cat, backend="eqsat")(torch.randn(8, 16))
    assert inner_config["max_autotune"] is inductor_config.max_autotune
    assert inner_config["cudagraphs"] is inductor_config.triton.cudagraphs


def test_an_unknown_option_fails_loudly(inner_config):
    with pytest.raises(Exception, match="max_autotunes"):
        torch.compile(split_sigmoid_cat, backend="eqsat", options={"max_autotunes": True})(torch.randn(8, 16))
    with pytest.raises(Exception, match="unknown eqsat option 'iteratons'.*did you mean 'iterations'"):
        torch.compile(split_sigmoid_cat, backend="eqsat", options={"iteratons": 3})(torch.randn(8, 16))


@pytest.mark.slow
def test_inductor_itself_sees_the_mode(uncached_inductor):
    """The real ``compile_fx``: a user post-grad pass, run inside Inductor, reads its config."""
    seen = []

    def user_pass(graph):
        seen.append((inductor_config.max_autotune, inductor_config.coordinate_descent_tuning))

    x = torch.randn(8, 16)
    with inductor_config.patch(post_grad_custom_pre_pass=user_pass):
        f = torch.compile(split_sigmoid_cat, backend="eqsat", mode="max-autotune-no-cudagraphs")
        torch.testing.assert_close(f(x), split_sigmoid_cat(x))
    assert seen == [(True, True)]


def test_the_harness_eqsat_cg_mode_asks_for_cuda_graphs(inner_config):
    """``bench.modes``' eqsat_cg compiles as a user would, ``mode="reduce-overhead"`` (the GPU effect
    is measured on the H200); on CPU Inductor's config is what can be checked."""
    from bench.modes import compile_model

    x = torch.randn(8, 16)
    compiled = compile_model("eqsat_cg", torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU()))
    compiled.fn(x)
    assert inner_config["cudagraphs"] is True and isinstance(inner_config["post_grad"], EqsatPostGradPass)
    assert compiled.collect_reports() and compiled.collect_reports()[0]["cache"] == "off"  # tests: EQSAT_CACHE=0


@pytest.mark.slow
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_reduce_overhead_runs_cuda_graphs_on_a_gpu():
    """The mode takes effect, not only the config: an output of a CUDA-graph tree is overwritten by
    the next replay, and reading it then is an error (Inductor without CUDA graphs returns fresh tensors)."""
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU()).cuda()
    x = torch.randn(8, 64, device="cuda")
    f = torch.compile(model, backend="eqsat", mode="reduce-overhead")
    with torch.no_grad():
        for _ in range(3):  # warm-up, record, replay
            f(x)
        first = f(x)
        torch.testing.assert_close(first, model(x))
        f(x)
        with pytest.raises(RuntimeError, match="overwritten by a subsequent run"):
            print(first)


def test_freezing_through_options_is_known_to_the_optimizer(inner_config, monkeypatch):
    """``options={"freezing": True}`` makes Inductor fold the weights: the optimizer must know (it
    prices a cat of weights as free, and keeps GPU batched layer norms off then)."""
    from eqsat_torch import backend

    seen = []
    real = backend.optimize_or_keep

    def spy(gm, example_inputs, opts, frozen, *rest):
        seen.append(frozen)
        return real(gm, example_inputs, opts, frozen, *rest)

    monkeypatch.setattr(backend, "optimize_or_keep", spy)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU())
    with torch.no_grad():
        torch.compile(model, backend="eqsat", options={"freezing": True})(torch.randn(8, 16))
    assert seen == [True]
