"""Issue 41: the ambient context is part of a graph's meaning. Under ``torch.autocast`` a rewrite that
changes which ops run (a batched matmul decomposed into a product and a sum) changed the dtypes a user
sees (eqsat returned float32 where eager returns bfloat16); the context now switches such rules off,
the report says which, the cache key holds the context, and ``rules_used`` names every rule of the
chosen program (the decomposition was missing)."""
import pytest
import torch
import torch.nn.functional as F

from eqsat_torch import eqsat_backend
from eqsat_torch.cache.key import graph_key
from eqsat_torch.safety.context import Context
from eqsat_torch.options import Options
from eqsat_torch.pipeline import optimize
from tests.optimized import assert_kept, assert_optimized

DECOMPOSITIONS = {"decompose_linear", "decompose_mm", "decompose_bmm", "decompose_addmm"}


def split_linears(x, w):
    return torch.cat([F.linear(p, w[:, :8]) for p in torch.split(x, 8, 1)], 1)


def _inputs():
    torch.manual_seed(0)
    return torch.randn(6, 16, requires_grad=True), torch.randn(8, 16, requires_grad=True)


def _captured(fn, *inputs):
    """Dynamo's graph of ``fn`` and its example inputs."""
    seen = {}

    def keep(gm, example_inputs):
        seen["gm"], seen["inputs"] = gm, example_inputs
        return gm.forward

    torch.compile(fn, backend=keep)(*inputs)
    return seen["gm"], seen["inputs"]


def test_ambient_autocast_keeps_eagers_dtype():
    x, w = _inputs()
    backend = eqsat_backend(inner="eager", post_grad=False)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = torch.compile(split_linears, backend=backend)(x, w)
        want = split_linears(x, w)
    assert out.dtype == want.dtype == torch.bfloat16
    torch.testing.assert_close(out, want)
    report = backend.reports[0]
    assert_optimized(report, "batch_linear")
    assert DECOMPOSITIONS <= set(report.context_disabled), report.context_disabled
    assert "autocast" in report.context_disabled["decompose_bmm"]


def test_no_autocast_switches_nothing_off():
    x, w = _inputs()
    backend = eqsat_backend(inner="eager", post_grad=False)
    torch.compile(split_linears, backend=backend)(x, w)
    assert backend.reports[0].context_disabled == {}


def test_rules_used_names_the_decomposition_of_a_batched_matmul():
    gm, inputs = _captured(split_linears, *_inputs())
    new_gm, report = optimize(gm, inputs, {"verify": False}, train_step=True)  # the rules' program, named
    ran = {n.target for n in new_gm.graph.nodes if n.op == "call_function"}
    assert torch.bmm not in ran and torch.mul in ran, new_gm.code  # the bmm was decomposed
    assert_optimized(report, "batch_linear", "decompose_bmm")


def _max_error(got, want):
    return (got.float() - want.float()).abs().max().item()


@pytest.mark.slow
def test_ambient_autocast_gradients_as_close_as_inductors(uncached_inductor):
    results = {}
    for name, backend in (("eager", None), ("inductor", "inductor"), ("eqsat", eqsat_backend())):
        torch._dynamo.reset()
        x, w = _inputs()
        fn = split_linears if backend is None else torch.compile(split_linears, backend=backend)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = fn(x, w)
        out.float().square().sum().backward()
        results[name] = (out, x.grad, w.grad)
    (e_out, e_gx, e_gw), (i_out, i_gx, i_gw), (q_out, q_gx, q_gw) = (results[k] for k in ("eager", "inductor", "eqsat"))
    assert q_out.dtype == e_out.dtype == torch.bfloat16
    for ours, theirs, want in ((q_out, i_out, e_out), (q_gx, i_gx, e_gx), (q_gw, i_gw, e_gw)):
        assert ours.dtype == want.dtype
        assert _max_error(ours, want) <= 2 * _max_error(theirs, want) + 1e-6


class FourWidths(torch.nn.Module):
    """Four Linears of different widths, one on each split piece of the input."""

    def __init__(self):
        super().__init__()
        self.widths = [4, 8, 12, 8]
        self.layers = torch.nn.ModuleList(torch.nn.Linear(w, 16) for w in self.widths)

    def forward(self, x):
        pieces = torch.split(x, self.widths, 1)
        return torch.cat([layer(p).relu() for layer, p in zip(self.layers, pieces)], 1)


@pytest.mark.slow
def test_mixed_precision_training_step_matches_eager(uncached_inductor):
    runs = {}
    for name, backend in (("eager", None), ("inductor", "inductor"), ("eqsat", eqsat_backend())):
        torch._dynamo.reset()
        torch.manual_seed(0)
        model, x = FourWidths(), torch.randn(32, 32)
        step = model if backend is None else torch.compile(model, backend=backend)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = step(x)
        out.float().square().mean().backward()
        runs[name] = (out, [p.grad for p in model.parameters()], backend)
    eager, inductor, ours = runs["eager"], runs["inductor"], runs["eqsat"]
    assert ours[0].dtype == eager[0].dtype == torch.bfloat16
    assert _max_error(ours[0], eager[0]) <= 2 * _max_error(inductor[0], eager[0]) + 1e-6
    for g_ours, g_ind, g_eager in zip(ours[1], inductor[1], eager[1]):
        assert g_ours.dtype == g_eager.dtype
        assert _max_error(g_ours, g_eager) <= 2 * _max_error(g_ind, g_eager) + 1e-6
    backend = ours[2]
    assert backend.reports[0].context_disabled  # the pre-grad pass ran under autocast
    assert all(not r.refused for r in backend.reports + backend.post_grad_reports)
    assert all(r.context_disabled == {} for r in backend.post_grad_reports)  # Aten: casts are explicit


def test_autocast_region_inside_the_function_is_left_alone():
    def fn(x, w):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return split_linears(x, w)

    x, w = _inputs()
    backend = eqsat_backend(inner="eager", post_grad=False)
    out = torch.compile(fn, backend=backend)(x, w)
    assert out.dtype == fn(x, w).dtype == torch.bfloat16
    torch.testing.assert_close(out, fn(x, w))
    assert_kept(backend.reports[0], "_enter_autocast")


def test_cache_key_holds_the_context():
    gm, inputs = _captured(split_linears, *_inputs())

    def key():
        return graph_key("pre_grad", gm, inputs, Options(), "cpu", {})

    plain = key()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        cast = key()
    with torch.autocast("cpu", dtype=torch.float16):
        half = key()
    with torch.no_grad():
        no_grad = key()
    assert len({plain, cast, half, no_grad}) == 4
    assert key() == plain


def test_context_entered_restores_the_state():
    inside = Context.capture()
    with torch.autocast("cpu", dtype=torch.bfloat16), torch.no_grad():
        cast = Context.capture()
    assert cast.autocasting() and not cast.grad and not inside.autocasting()
    with cast.entered():
        assert torch.is_autocast_enabled("cpu") and not torch.is_grad_enabled()
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16
    assert Context.capture() == inside
    assert cast.for_aten().autocasting() == []
