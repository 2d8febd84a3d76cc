"""Issue 18's batch-fusion and glue programs (bench/models/parity.py) through eqsat: never skipped or
fallen back, forward and gradients equal to eager (the split-cat ones are in
tests/rules/test_split_cat_parity.py), the named rule used where eqsat has one, and (slow) no more
CPU launches than Inductor alone and no more CPU kernels (Inductor's counter) than Optimus, inference and
training."""
import copy

import pytest
import torch

from bench.models import REGISTRY
from eqsat.cost import CostModel
from eqsat_torch import eqsat_backend
from bench import inductor_metrics
from eqsat_torch.inductor import compat

from optimized import assert_no_fallback

# model → rules the chosen program must use (empty: eqsat may keep the input, it must not fail)
CASES = {
    "parity_linear_on_split_pieces": ("batch_linear",),
    "parity_ten_linears": ("batch_linear",),
    "parity_group_linear": (),
    "parity_linear_batchnorm_branches": (),
    "parity_batched_layernorms": ("batch_layernorm",),
    "parity_bmm_accumulate": (),
    "parity_uneven_split_then_split": ("merge_splits", "merge_splits_before", "merge_splits_after"),
    "parity_split_getitems_out_of_order": (),
    "parity_math_chain": ("cat_unary",),
}
# … under the GPU cost model, forced on CPU (the H200 makes these decisions; CI checks them here)
GPU_CASES = {
    "parity_group_linear": ("group_linear",),
}


def _outputs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


# … in the backward graph, through Inductor's post-grad pass (slow: Inductor compiles both graphs)
POST_GRAD_CASES = {
    "parity_split_getitems_out_of_order": ("cat_repeat_run",),
}


def _train_step_matches_eager(name, backend):
    """One forward and backward through ``backend`` equal to eager (outputs, input and parameter
    gradients); every graph optimized without fallback. Returns the rules its reports used."""
    model, inputs = REGISTRY[name]("tiny")
    model.train()
    ref = copy.deepcopy(model)
    xs = [x.detach().clone().requires_grad_() for x in inputs]
    ref_xs = [x.detach().clone().requires_grad_() for x in inputs]
    compat.reset_dynamo()
    out, want = _outputs(torch.compile(model, backend=backend)(*xs)), _outputs(ref(*ref_xs))
    torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-5)
    sum(o.sum() for o in out).backward()
    sum(o.sum() for o in want).backward()
    torch.testing.assert_close([x.grad for x in xs], [x.grad for x in ref_xs], rtol=1e-4, atol=1e-5)
    for (pname, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=pname)
    reports = backend.reports + getattr(backend, "post_grad_reports", [])
    assert backend.reports
    for report in reports:
        assert_no_fallback(report)
    return {r for report in reports for r in report.rules_used}


@pytest.mark.parametrize("name,device", [(n, "cpu") for n in sorted(CASES)] + [(n, "cuda") for n in sorted(GPU_CASES)])
def test_forward_and_gradients_match_eager(name, device):
    used = _train_step_matches_eager(name, eqsat_backend(inner="eager", cost=CostModel.for_device(device)))
    assert set({"cpu": CASES, "cuda": GPU_CASES}[device][name]) <= used, (name, used)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(POST_GRAD_CASES))
def test_training_step_through_inductor_matches_eager(name):
    with inductor_metrics.inductor_config_patch("eqsat"):  # cold caches: a cached graph skips the pass
        used = _train_step_matches_eager(name, eqsat_backend())
    assert set(POST_GRAD_CASES[name]) <= used, (name, used)


def test_dropouts_run_once_each_and_keep_their_randomness():
    """Dropout is random and effectful: eqsat keeps every one (a batched copy would add a draw)."""
    model, (x,) = REGISTRY["parity_dropouts"]("tiny")
    compat.reset_dynamo()
    backend = eqsat_backend(inner="eager")
    out = torch.compile(model, backend=backend)(x)
    assert out.shape == x.shape
    kept = (out != 0)
    torch.testing.assert_close(out[kept], x[kept] / 0.9)  # survivors scaled by 1/(1-p)
    assert 0.8 < kept.float().mean().item() < 0.97
    assert_no_fallback(backend.reports[0])


def _launches(mode, name):
    model, inputs = REGISTRY[name]("tiny")
    compat.reset_dynamo()
    with inductor_metrics.inductor_config_patch(mode), inductor_metrics.capture_output_code() as codes:
        from bench.modes import compile_model
        compile_model(mode, model.train()).fn(*inputs)
    return inductor_metrics.launch_counts(codes)["total"]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES) + ["parity_dropouts"])
def test_no_more_launches_than_inductor_alone(name):
    assert _launches("eqsat", name) <= _launches("inductor", name)


def _counter(mode, name, phase):
    """Inductor's CPU kernel counter (loop nests plus extern calls) for one inference call or one
    training step (forward and backward), built and run as ``python -m bench run`` does."""
    from bench.modes import compile_model
    from bench.runner import make_step, training_inputs
    model, inputs = REGISTRY[name]("small")
    if phase == "train":
        inputs = training_inputs(inputs)
    compat.reset_dynamo()
    inductor_metrics.reset()
    with inductor_metrics.inductor_config_patch(mode):
        make_step(compile_model(mode, model).fn, model, inputs, phase)()
    return inductor_metrics.kernel_counts()["total"]


@pytest.mark.slow
@pytest.mark.parametrize("name,phase", [(n, p) for n in sorted(CASES) + ["parity_dropouts"]
                                        for p in ("infer", "train")])
def test_cpu_kernels_no_more_than_optimus(name, phase, monkeypatch):
    import eqsat_torch.backend as backend

    # the optimizer's program against Optimus's: Inductor's CPU decision (loop nests first) may keep
    # the input where the program has fewer extern calls and more nests (test_cpu_decides)
    real = backend.eqsat_backend
    monkeypatch.setattr(backend, "eqsat_backend", lambda **options: real(verify=False, **options))
    optimus, ours = (_counter(m, name, phase) for m in ("inductor_optimus", "eqsat"))
    assert ours <= optimus, {"optimus": optimus, "eqsat": ours}


def test_batched_layernorms_batch_in_inference_on_cpu():
    """The CPU model prices a layer norm under 1024 elements as the C++ backend lowers it (two-step
    variance: three loop nests before the output) and α once per C++ function, so eight norms on the
    pieces of a split are one batched norm in inference too (Inductor's counter 64 -> 23, Optimus 24)."""
    model, (x,) = REGISTRY["parity_batched_layernorms"]("tiny")
    compat.reset_dynamo()
    backend = eqsat_backend(inner="eager", cost=CostModel.for_device("cpu"))
    with torch.no_grad():
        out = torch.compile(model, backend=backend)(x)
        torch.testing.assert_close(out, model(x), rtol=1e-5, atol=1e-6)
    assert_no_fallback(backend.reports[0])
    assert "batch_layernorm" in backend.reports[0].rules_used, backend.reports[0].summary()
