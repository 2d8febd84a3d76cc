"""Batch (horizontal) fusions: which groups are offered, and that the chosen fused forms match eager
in the forward pass and in every weight's gradient.

Group discovery is tested on lowered graphs (fast, no compile). End-to-end tests compile with the
eqsat backend and ``inner="eager"``; where the default CPU cost model would (rightly) keep a linear
unfused because stacking parameters copies them in training, the test prices parameters as frozen
(``frozen_params=True``) so the fused form is chosen and its gradients can be checked. Every
end-to-end test asserts the batched form was really chosen (``uses``: the rules the program relies on,
no fallback): with ``validate=True`` a wrong batched graph falls back to the original, which matches
eager too.
"""
import operator

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from eqsat.cost import CostModel
from eqsat_torch import eqsat_backend
from eqsat_torch.inductor import compat
from eqsat_torch.lowering.lower import lower
from optimized import assert_no_fallback, assert_optimized
from eqsat_rules.batch_groups import batch_unions, find_groups

FROZEN = CostModel.for_device("cpu", frozen_params=True)


def capture(fn, *args):
    """The Dynamo graph of ``fn`` and its example inputs."""
    got = []

    def backend(gm, example_inputs):
        got.append((gm, example_inputs))
        return gm.forward

    torch.compile(fn, backend=backend)(*args)
    return got[0]


def counts(fn, *args, disabled=()):
    gm, ex = capture(fn, *args)
    return batch_unions(lower(gm, ex), disabled).counts


def total(out):
    """A scalar to differentiate, from one output tensor or a tuple of them."""
    return sum(t.sum() for t in out) if isinstance(out, tuple) else out.sum()


def compiled(model, *args, cost=None, **options):
    """Run ``model`` compiled with our backend (eager inner) in training; return (outputs, grads, gm)."""
    graphs = []

    class Keep:  # the optimized graph, to check which fused form was chosen
        def __init__(self):
            self.backend = eqsat_backend(inner="eager", validate=True, cost=cost, **options)

        def __call__(self, gm, ex, **kw):
            fn = self.backend(gm, ex, **kw)
            graphs.append(fn.__self__ if hasattr(fn, "__self__") else gm)
            return fn

    keep = Keep()
    out = torch.compile(model, backend=keep)(*args)
    total(out).backward()
    assert not keep.backend.reports[0].skipped, keep.backend.reports[0].skipped
    return out, {n: p.grad.clone() for n, p in model.named_parameters()}, graphs[0], keep.backend.reports[0]


def check_against_eager(model, *args, uses, cost=None, **options):
    """Eager's outputs and gradients, and the optimized graph relies on each rule in ``uses`` (None:
    only that the optimizer ran to the end, for tests of what it must not choose)."""
    out, grads, gm, report = compiled(model, *args, cost=cost, **options)
    if uses is None:
        assert_no_fallback(report)
    else:
        assert_optimized(report, *uses)
    model.zero_grad()
    want = model(*args)
    total(want).backward()
    torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-5)
    for name, p in model.named_parameters():
        torch.testing.assert_close(grads[name], p.grad, rtol=1e-4, atol=1e-5, msg=lambda m: f"{name}: {m}")
    return gm, report


def targets(gm):
    return [n.target for n in gm.graph.nodes if n.op in ("call_function", "call_method")]


def muls(gm):
    """Multiplications however the graph spells them (Dynamo: ``operator.mul``; raised: ``torch.mul``)."""
    return sum(t in (operator.mul, torch.mul, "mul") for t in targets(gm))


# -- models -------------------------------------------------------------------------------------------
class SplitLinears(nn.Module):
    """DHEN's per-feature linears: split, n same-shaped linears, tanh, stack."""

    def __init__(self, n=6, d=8, bias=True):
        super().__init__()
        self.d = d
        self.lins = nn.ModuleList(nn.Linear(d, d, bias=bias) for _ in range(n))

    def forward(self, x):
        pieces = torch.split(x, self.d, dim=1)
        return torch.stack([torch.tanh(lin(p)) for lin, p in zip(self.lins, pieces)], dim=1)


class SharedInput(nn.Module):
    """q/k/v-style projections of one input, different widths."""

    def __init__(self, d=8, widths=(4, 8, 12)):
        super().__init__()
        self.lins = nn.ModuleList(nn.Linear(d, w) for w in widths)

    def forward(self, x):
        return torch.cat([torch.relu(lin(x)) for lin in self.lins], dim=1)


class PerFeatureNorms(nn.Module):
    """Interformer's per-feature preprocessing: unbind, detach/nan_to_num/clamp, linear, layer_norm."""

    def __init__(self, n=5, d=8, eps=(1e-5,) * 5):
        super().__init__()
        self.lins = nn.ModuleList(nn.Linear(d, d) for _ in range(n))
        self.norms = nn.ModuleList(nn.LayerNorm(d, eps=e) for e in eps)

    def forward(self, x):
        feats = [torch.clamp(torch.nan_to_num(f.detach(), 7.0), -1.0, 1.0) for f in torch.unbind(x, 1)]
        return torch.stack([norm(lin(f)) for lin, norm, f in zip(self.lins, self.norms, feats)], 1)


# -- discovery ----------------------------------------------------------------------------------------
def test_groups_found_at_any_depth_and_of_every_kind():
    x = torch.randn(4, 5, 8)
    got = counts(PerFeatureNorms(), x)
    assert got == {"batch_detach": 1, "batch_nan_to_num": 1, "batch_clamp": 1, "batch_linear": 1,
                   "batch_layernorm": 1}, got
    # relu widths differ; the biased linears feed only relus: with per-piece bias adds and with one bias
    assert counts(SharedInput(), torch.randn(4, 8)) == {"batch_linear_lhs": 2}


def test_dependent_candidates_are_not_grouped():
    lin = nn.Linear(8, 8)
    assert counts(lambda x: torch.tanh(torch.tanh(torch.tanh(x))), torch.randn(4, 8)) == {}
    assert "batch_linear" not in counts(lambda x: lin(lin(x)), torch.randn(4, 8))


def test_chains_split_into_independent_layers():
    """Two layers of 3 independent tanh: two groups, never one mixing the layers."""
    def f(a, b, c):
        first = [torch.tanh(t) for t in (a, b, c)]
        return [torch.tanh(t * 2) for t in first]

    gm, ex = capture(f, *(torch.randn(4, 8) for _ in range(3)))
    tanh_groups = [g.members for g in find_groups(lower(gm, ex)) if g.rule == "batch_tanh"]
    assert sorted(map(len, tanh_groups)) == [3, 3]
    assert not set(tanh_groups[0]) & set(tanh_groups[1])


def test_batch_linear_members_read_distinct_inputs():
    """q/k/v of one input next to a same-shaped linear of another: the three are batch_linear_lhs's;
    batch_linear stacks each input once (a stack of [x, y, y, y] is what Inductor miscompiled in BART)."""
    lins = [nn.Linear(8, 8) for _ in range(4)]

    def f(x, y):
        return lins[0](x), lins[1](y), lins[2](y), lins[3](y)

    gm, ex = capture(f, torch.randn(4, 8), torch.randn(4, 8))
    low = lower(gm, ex)
    groups = {g.rule: g.members for g in find_groups(low)}
    assert len(groups["batch_linear_lhs"]) == 3
    inputs = [low.originals[m].args[0] for m in groups["batch_linear"]]
    assert len(inputs) == 2 and len(set(inputs)) == 2


def test_batch_mm_members_stack_distinct_operands():
    """Weight gradients g_i.T @ x of one activation x: a stack of [x, x, x] copies it three times."""
    def f(g1, g2, g3, x, y):
        return torch.mm(g1, x), torch.mm(g2, x), torch.mm(g3, y)

    gm, ex = capture(f, *(torch.randn(8, 8) for _ in range(5)))
    low = lower(gm, ex)
    (members,) = [g.members for g in find_groups(low) if g.rule == "batch_mm"]
    assert len(members) == 2 and len({low.originals[m].args[1] for m in members}) == 2


@pytest.mark.parametrize("case", [
    lambda a, b: (torch.relu(a), torch.relu(b[:, :4])),                       # shapes differ
    lambda a, b: (torch.relu(a), torch.relu(b.double())),                      # dtypes differ
    lambda a, b: (torch.clamp(a, -1, 1), torch.clamp(b, -2, 1)),               # attributes differ
    lambda a, b: (F.layer_norm(a, (8,), eps=1e-5), F.layer_norm(b, (8,), eps=1e-6)),  # eps differs
    lambda a, b: (a + 1.0, b + 2.0),                                           # scalar operand differs
])
def test_mismatched_candidates_are_not_grouped(case):
    assert counts(case, torch.randn(4, 8), torch.randn(4, 8)) == {}


def test_disabled_by_rule_or_family():
    x = torch.randn(4, 5, 8)
    assert "batch_linear" not in counts(PerFeatureNorms(), x, disabled=["batch_linear"])
    assert counts(PerFeatureNorms(), x, disabled=["batch"]) == {}


# -- end to end: chosen forms, forward and gradients ---------------------------------------------------
def test_batch_linear_and_tanh_training_cancel_against_split_and_stack():
    torch.manual_seed(0)
    gm, report = check_against_eager(SplitLinears(), torch.randn(16, 48), cost=FROZEN,
                                     uses=["batch_linear", "batch_tanh"])
    ts = targets(gm)
    assert torch.baddbmm in ts and ts.count(torch.tanh) == 1, ts
    # the stacks of split pieces and the unbind feeding the stack cancelled: only weights are stacked
    assert torch.split not in ts and "split" not in ts
    stacks = [n for n in gm.graph.nodes if n.target is torch.stack]
    assert all(a.op == "placeholder" for s in stacks for a in s.args[0]), [s.args for s in stacks]


def test_batch_linear_without_bias_uses_bmm():
    torch.manual_seed(0)
    gm, _ = check_against_eager(SplitLinears(n=3, bias=False), torch.randn(16, 24), cost=FROZEN,
                                uses=["batch_linear"], disabled=["decompose"])  # 8-wide: decomposed otherwise
    assert torch.bmm in targets(gm)


def test_batch_linear_adds_each_bias_where_weights_are_runtime_values():
    """Not frozen, a stack of n biases is n copies: each product of the bmm plus its own bias (fused
    with the relu and the sum) is cheaper than the baddbmm (parity_ten_linears, Inductor's CPU counter
    22 -> 12 in inference, 27 -> 16 a training step; Optimus 21 and 67)."""
    from bench.models.parity import TenLinears
    torch.manual_seed(0)
    gm, _ = check_against_eager(TenLinears(n=4, dim=32), torch.randn(4, 16, 32), uses=["batch_linear"],
                                cost=CostModel.for_device("cpu"))
    ts = targets(gm)
    assert torch.bmm in ts and torch.baddbmm not in ts, ts
    stacked = [a.target for s in gm.graph.nodes if s.target is torch.stack for a in s.args[0]]
    assert not any("bias" in str(t) for t in stacked), stacked


def test_batch_linear_lhs_training():
    torch.manual_seed(0)
    gm, _ = check_against_eager(SharedInput(), torch.randn(16, 8), cost=FROZEN, uses=["batch_linear_lhs"],
                                disabled=["decompose"])  # 8-wide linears would rather be decomposed
    assert targets(gm).count(F.linear) == 1, targets(gm)


def test_per_feature_chain_training():
    torch.manual_seed(0)
    x = torch.randn(16, 5, 8)
    x[0, 0, 0] = float("nan")
    gm, report = check_against_eager(PerFeatureNorms(), x, cost=FROZEN, uses=["batch_linear"],
                                     disabled=["decompose"])  # 8-wide linears would rather be decomposed
    ts = targets(gm)
    assert ts.count(torch.nan_to_num) == 1 and ts.count(torch.clamp) == 1, ts
    assert report.kernels_after < report.kernels_before
    # the layer_norms all read the one bmm output: Inductor fuses them already, batching gains nothing


def test_batch_layernorm_training():
    """Five affine layer_norms over separate inputs: five reductions, or one over the stack."""
    torch.manual_seed(0)

    class Norms(nn.Module):
        def __init__(self):
            super().__init__()
            self.norms = nn.ModuleList(nn.LayerNorm(8) for _ in range(5))
            for norm in self.norms:
                nn.init.normal_(norm.weight)
                nn.init.normal_(norm.bias)

        def forward(self, *xs):
            return torch.cat([norm(x) for norm, x in zip(self.norms, xs)], 1)

    gm, report = check_against_eager(Norms(), *(torch.randn(16, 8) for _ in range(5)), cost=FROZEN,
                                     uses=["batch_layernorm"])
    assert targets(gm).count(F.layer_norm) == 1, targets(gm)


def test_pointwise_batch_pays_under_the_default_cpu_model():
    """tanh over 6 linear outputs: stacked on dim 1 the copies, the tanh and the stack consumer are
    one CPU loop nest, so the default model picks it (the linears stay: their weights would be copied)."""
    torch.manual_seed(0)
    gm, report = check_against_eager(SplitLinears(), torch.randn(16, 48), disabled=["batch_linear", "decompose"],
                                     uses=["batch_tanh"])
    assert targets(gm).count(torch.tanh) == 1
    assert report.kernels_after < report.kernels_before


def test_binary_with_shared_operand_training():
    torch.manual_seed(0)

    class Gates(nn.Module):
        def __init__(self):
            super().__init__()
            self.lins = nn.ModuleList(nn.Linear(8, 8) for _ in range(4))
            self.scale = nn.Parameter(torch.randn(8))

        def forward(self, x):
            return torch.stack([lin(x[:, i]) * self.scale + x[:, i] for i, lin in enumerate(self.lins)], 1)

    gm, _ = check_against_eager(Gates(), torch.randn(16, 4, 8), cost=FROZEN,
                                uses=["batch_linear", "batch_mul", "batch_add"],
                                disabled=["decompose"])  # 8-wide linears would rather be decomposed
    assert muls(gm) == 1, targets(gm)


def test_binary_with_shared_full_rank_operand():
    """lin_i(x_i)·s with s of the operands' own rank: in the batched mul, s must broadcast over the new
    batch dim. The linears are batched too (frozen weights), which is what makes the batched mul pay."""
    torch.manual_seed(0)

    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.lins = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))

        def forward(self, a, b, c, s):
            return torch.cat([torch.sigmoid(lin(t)) * s for lin, t in zip(self.lins, (a, b, c))], 1)

    args = [torch.randn(4, 8) for _ in range(4)]
    gm, ex = capture(Scaled(), *args)
    assert batch_unions(lower(gm, ex)).counts.get("batch_mul") == 1
    # 8-wide linears would rather be decomposed; cat_repeat_run's s repeated along dim 1 (cat_binary_same's
    # cat of s) ties with batch_mul's broadcast (one mul either way), and this test is batch_mul's
    gm, _ = check_against_eager(Scaled(), *args, cost=FROZEN, uses=["batch_linear", "batch_mul"],
                                disabled=["decompose", "cat_repeat_run"])
    assert muls(gm) == 1, targets(gm)


def test_batch_mm_and_addmm():
    """Three addmm of different inputs: baddbmm over stacked operands; three mm of one input are
    batch_linear_lhs's only (a bmm would stack that input three times)."""
    torch.manual_seed(0)

    class Mms(nn.Module):
        def __init__(self):
            super().__init__()
            self.ws = nn.ParameterList(torch.randn(8, 6) for _ in range(3))
            self.bs = nn.ParameterList(torch.randn(6) for _ in range(3))

        def forward(self, a, b, c):  # stacked: the baddbmm writes the output, no copy after it
            return (torch.stack([torch.addmm(bi, t, w) for t, w, bi in zip((a, b, c), self.ws, self.bs)]),
                    torch.cat([torch.mm(a, w) for w in self.ws], 1))

    args = [torch.randn(5, 8) for _ in range(3)]
    gm, ex = capture(Mms(), *args)
    got = batch_unions(lower(gm, ex)).counts
    assert got == {"batch_mm": 1, "batch_linear_lhs": 1}, got
    gm, _ = check_against_eager(Mms(), *args, cost=FROZEN, uses=["batch_mm"])
    assert torch.baddbmm in targets(gm) and torch.addmm not in targets(gm), targets(gm)


def test_two_tiny_linears_in_training_batch_for_their_backward():
    """Stacking two 4×4 weights costs a copy kernel, but in training each linear also has two
    gradient matmuls, which the batched form does as two bmms: the training-step price fuses."""
    torch.manual_seed(0)
    gm, report = check_against_eager(SplitLinears(n=2, d=4), torch.randn(4, 8), uses=["batch_linear"],
                                     disabled=["decompose"])  # batched against separate matmuls
    assert torch.baddbmm in targets(gm) or torch.bmm in targets(gm), targets(gm)


def test_forward_only_price_keeps_two_tiny_linears_unfused():
    """The same graph priced as inference (no backward follows): the copies outweigh one launch."""
    torch.manual_seed(0)
    model, x = SplitLinears(n=2, d=4), torch.randn(4, 8)
    backend = eqsat_backend(inner="eager", validate=True)
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(model, backend=backend)(x), model(x))
    (report,) = backend.reports
    assert_no_fallback(report)
    assert "batch_linear" in report.rules_fired and "batch_linear" not in report.rules_used, report.summary()


@pytest.mark.slow
def test_batched_tiny_linears_launch_fewer_kernels_per_training_step():
    """Inductor's wrapper code of the forward and backward graphs: fewer launches than Inductor alone
    (measured on CPU: 3 + 4 against 3 + 7)."""
    from bench import inductor_metrics as im

    def step(backend):
        compat.reset_dynamo()
        torch.manual_seed(0)
        model, x = SplitLinears(n=2, d=4), torch.randn(4, 8, requires_grad=True)
        with im.inductor_config_patch("inductor"):
            with im.capture_output_code() as fwd:
                y = torch.compile(model, backend=backend)(x)
            with im.capture_output_code() as bwd:
                y.sum().backward()
        return im.launch_counts(fwd)["total"] + im.launch_counts(bwd)["total"]

    backend = eqsat_backend(post_grad=False, disabled=["decompose"], verify=False)  # batched against separate matmuls
    ours, alone = step(backend), step("inductor")
    assert backend.reports[0].rules_used.get("batch_linear"), backend.reports[0].summary()
    assert ours < alone, (ours, alone)


def _launches(backend, model, x):
    from bench import inductor_metrics

    compat.reset_dynamo()
    with torch.no_grad(), inductor_metrics.inductor_config_patch("inductor"), \
            inductor_metrics.capture_output_code() as code:
        out = torch.compile(model, backend=backend)(x)
    return out, inductor_metrics.launch_counts(code)


def test_default_model_batches_per_feature_linears_and_inductor_launches_fewer_kernels():
    """Eight per-feature linears (+ tanh) compiled by Inductor: the default cost model picks the bmm
    over stacked weights, and Inductor's wrapper really launches fewer kernels than without us."""
    torch.manual_seed(0)
    model, x = SplitLinears(n=8, d=16).eval(), torch.randn(32, 128)
    backend = eqsat_backend(verify=False)  # the rule's program (Inductor's loop-nest count ties it with the input)
    out, ours = _launches(backend, model, x)
    _, alone = _launches("inductor", model, x)
    assert_optimized(backend.reports[0], "batch_linear")
    assert ours["extern"] == 1 and ours["total"] < alone["total"], (ours, alone)
    torch.testing.assert_close(out, model(x))
