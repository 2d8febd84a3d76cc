"""Rules end to end: through fx_bridge on real FX graphs, outputs compared with eager."""
import torch

import eqsat_rules
from eqsat_torch import eqsat_backend, last_reports, optimize
from bench import inductor_metrics
from eqsat_torch.inductor import compat
from optimized import assert_optimized
from eqsat_rules.dsl import add, ints, mm, narrow, relu, rewrite, tensor


class OptimusPatterns(torch.nn.Module):
    """One split-cat pattern per output, with a relu between split and cat in one of them."""

    def forward(self, x):
        a, b, c, d = torch.split(x, [2, 3, 3, 4], dim=1)
        through_relu = torch.cat([torch.relu(a), torch.relu(b), torch.relu(c), torch.relu(d)], 1)
        unbind_stack = torch.stack(torch.unbind(x, 0), 1)
        chunk_cat_other_dim = torch.cat(torch.chunk(x, 4, 1), 0)
        return through_relu, unbind_stack, chunk_cat_other_dim


def _ops(gm):
    return [n.target for n in gm.graph.nodes if n.op in ("call_function", "call_method")]


def test_optimus_patterns_rewrite_and_match_eager():
    x = torch.randn(4, 12)
    gm = torch.fx.symbolic_trace(OptimusPatterns())
    new, report = optimize(gm, [x])
    for got, want in zip(new(x), OptimusPatterns()(x)):
        torch.testing.assert_close(got, want)
    assert_optimized(report, "cat_unary", "cat_split_all", "unbind_stack", "cat_split_other_dim")
    assert report.cost_after < report.cost_before
    assert torch.cat not in _ops(new) and torch.stack not in _ops(new)


def test_disabled_family_does_not_fire():
    x = torch.randn(4, 12)
    split_cat = {r.name for r in eqsat_rules.builtin_rules() if r.family == "split_cat"}
    new, report = optimize(torch.fx.symbolic_trace(OptimusPatterns()), [x], {"disabled": ["split_cat"]})
    assert not split_cat & set(report.rules_fired) and not split_cat & set(report.rules_used), report.summary()
    assert torch.stack in _ops(new), "the unbind-stack only split_cat removes is still there"
    for got, want in zip(new(x), OptimusPatterns()(x)):
        torch.testing.assert_close(got, want)


def test_dsl_rule_through_backend_configuration():
    x, d, a, n = tensor("x"), *ints("d a n")
    narrow_relu = rewrite("narrow_of_relu", narrow(relu(x), d, a, n), relu(narrow(x, d, a, n)))
    backend = eqsat_backend(inner="eager", validate=True, extra_rules=[narrow_relu], disabled=["algebra"])
    model = lambda t: torch.relu(t)[:, 1:3].sum(1)  # noqa: E731
    t = torch.randn(4, 6)
    torch.testing.assert_close(torch.compile(model, backend=backend)(t), model(t))
    assert_optimized(backend.reports[0], "narrow_of_relu")


class ThreeProjections(torch.nn.Module):
    def forward(self, x, w1, w2, w3):
        return torch.mm(x, w1) + torch.mm(x, w2) + torch.mm(x, w3)


def test_user_rule_fires_with_backend_eqsat_and_changes_kernel_count():
    # The user's rule, registered in one call:
    a, b, c = tensor("a b c")
    eqsat_rules.register(rewrite("mm_distribute", add(mm(a, b), mm(a, c)), mm(a, add(b, c)), when=[b.shape == c.shape]))
    # ...and a model compiled with the eqsat backend, its program taken as the rules make it (on the
    # CPU Inductor's decision puts loop nests first, and b + c is one more: test_cpu_decides).
    # (inner dim 64: decompose_mm, which needs inner and output dims < 32, stays out of the way)
    args = [torch.randn(8, 64)] + [torch.randn(64, 4) for _ in range(3)]
    try:
        kernels = {}
        for backend in ("inductor", "eqsat"):
            compat.reset_dynamo()
            inductor_metrics.reset()
            options = {"verify": False} if backend == "eqsat" else None
            out = torch.compile(ThreeProjections(), backend=backend, options=options)(*args)
            torch.testing.assert_close(out, ThreeProjections()(*args), rtol=1e-4, atol=1e-4)
            kernels[backend] = inductor_metrics.kernel_counts()["total"]
    finally:
        eqsat_rules.unregister("mm_distribute")
    assert_optimized(last_reports()[-1], "mm_distribute")
    assert kernels["eqsat"] < kernels["inductor"], kernels
