"""Compose with Inductor's combo kernels (issue 42): counted by Inductor's own scheduler and partitioner
on the fake GPU, decided per Dynamo graph with the program, the user's setting honoured."""
import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from eqsat.cost import CostModel
from eqsat_torch import eqsat_backend
from eqsat_torch.inductor import probe, compat
from eqsat_torch.inductor.launches import Launches
from eqsat_torch.inductor.verify import choose

GPU = CostModel.for_device("cuda")

pytestmark = pytest.mark.skipif(not probe.available("cuda"), reason="no GPU or fake-GPU probe")


def independent(a, b, c, d):
    """Four independent kernels (3 pointwise, 1 row sum) and a matmul."""
    return a.sin() + 1, b.cos() * 2, c.relu(), d.sum(1), a @ b


def _count(fn, *inputs):
    return probe.count_launches(make_fx(fn)(*inputs), inputs, "cuda", "aten", combo=True)


def test_combo_kernels_group_independent_kernels_but_never_the_matmul():
    # (Inductor's memory gate, 2.13: a combo may not raise the graph's peak by 5 %; off here to see the
    # grouping rules alone)
    gate = {k: None for k in ("combo_kernel_peak_memory_pct_threshold",) if hasattr(torch._inductor.config, k)}
    with torch._inductor.config.patch(gate):
        counted = _count(independent, *[torch.randn(64, 64) for _ in range(4)])
    assert (counted.generated, counted.extern) == (4, 1)
    # Inductor partitions one combo node by tiling: the pointwise kernels in one, the reduction alone
    assert (counted.combined.generated, counted.combined.extern) == (2, 1)
    assert counted.combined.bytes == counted.bytes


def test_at_most_eight_kernels_join_one_combo():
    def ten(*xs):
        return tuple(x.sin() * 2 for x in xs)

    counted = _count(ten, *[torch.randn(32, 32) for _ in range(10)])
    assert (counted.total, counted.combined.total) == (10, 2)  # 8 + 2


def test_dependent_kernels_never_join():
    def chain(x):
        y = x.sum(1, keepdim=True) + x   # reduction, then a pointwise kernel that reads it
        return (y.exp() * 3).sum(0)

    counted = _count(chain, torch.randn(64, 64))
    assert counted.combined.total == counted.total


def test_without_combo_nothing_more_is_counted():
    x = torch.randn(8, 8)
    assert probe.count_launches(make_fx(lambda t: t.sin())(x), [x], "cuda", "aten").combined is None


# -- the decision (pure) -------------------------------------------------------------------------
class _Prog:
    def __init__(self, code):
        self.code = code


def _with(total, combined_total):
    return Launches(total, 0, 100, combined=Launches(combined_total, 0, 100))


def test_undecided_combo_goes_on_with_the_program_that_launches_fewest_with_it():
    table = {"in": _with(10, 6), "opt": _with(8, 7)}
    c = choose([("input", _Prog("in")), ("optimized", _Prog("opt"))], lambda g: table[g.code], combo=None)
    assert (c.name, c.combo, c.launches.total) == ("input", True, 6)


def test_a_tie_keeps_combo_kernels_off():
    table = {"in": _with(10, 10), "opt": _with(8, 8)}
    c = choose([("input", _Prog("in")), ("optimized", _Prog("opt"))], lambda g: table[g.code], combo=None)
    assert (c.name, c.combo) == ("optimized", False)


def test_a_fixed_setting_counts_each_program_as_it_will_be_compiled():
    table = {"in": _with(10, 6), "opt": _with(8, 7)}
    on = choose([("input", _Prog("in")), ("optimized", _Prog("opt"))], lambda g: table[g.code], combo=True)
    off = choose([("input", _Prog("in")), ("optimized", _Prog("opt"))], lambda g: table[g.code], combo=False)
    assert (on.name, on.combo, off.name, off.combo) == ("input", True, "optimized", False)


# -- the backend -----------------------------------------------------------------------------------
def split_pointwise(x, y, z):
    """eqsat's kind of win (a split → pointwise → cat: 16 launches → 1) next to combo's (two
    independent pointwise kernels of other inputs)."""
    first = torch.cat([torch.sigmoid(p) * 2 for p in torch.split(x, 1, dim=1)], dim=1)
    return first, y.sin() + 1, z.cos() * 2


def two_independent(y, z):
    return y.sin() + 1, z.cos() * 2


def _compile(fn, *inputs, options=None, **backend_options):
    """The backend with Inductor decides forced on this CPU (GPU model, verify=True); the inner
    compile is captured instead of run (its config is what is checked)."""
    configs = []

    def capture(make_pass, config=None):
        configs.append(dict(config or {}))
        return lambda gm, example_inputs: gm.forward

    backend = eqsat_backend(**{"cost": GPU, "verify": True, "post_grad": False, "cache": False, **backend_options})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(compat, "compile_fx_with_post_grad_pass", capture)
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend=backend, options=options)
        out = compiled(*inputs)
    torch.testing.assert_close(out, fn(*inputs))
    return backend.reports[0], configs[0]


def test_the_default_compile_turns_combo_kernels_on_where_they_launch_fewer():
    report, config = _compile(split_pointwise, torch.randn(64, 16), torch.randn(64, 64), torch.randn(64, 64))
    assert report.changed and report.combo_kernels is True, report.summary()
    assert report.inductor_launches == {"input": 18, "optimized": 3}, report.summary()
    assert report.combo_launches == {"without": 3, "with": 1}, report.summary()
    assert config.get("combo_kernels") is True


def test_a_graph_eqsat_keeps_is_still_decided():
    report, config = _compile(two_independent, torch.randn(64, 64), torch.randn(64, 64))
    assert not report.changed and report.combo_kernels is True, report.summary()
    assert report.combo_launches == {"without": 2, "with": 1}
    assert config.get("combo_kernels") is True


def test_a_graph_with_nothing_to_combine_keeps_them_off():
    report, config = _compile(lambda y: (y.sin() + 1).sum(0), torch.randn(64, 64))
    assert report.combo_kernels is False and config.get("combo_kernels") is False, report.summary()


def test_the_users_option_is_honoured():
    report, config = _compile(split_pointwise, torch.randn(64, 16), torch.randn(64, 64), torch.randn(64, 64),
                              options={"combo_kernels": False})
    assert report.combo_kernels is False and config.get("combo_kernels") is False, report.summary()
    assert not report.combo_launches  # not decided: nothing counted with them


def test_the_users_config_patch_is_honoured():
    with torch._inductor.config.patch(combo_kernels=True):
        report, config = _compile(two_independent, torch.randn(64, 64), torch.randn(64, 64))
    assert report.combo_kernels is None and "combo_kernels" not in config, report.summary()  # theirs, as set
    assert not report.combo_launches


def test_a_restored_config_patch_leaves_the_decision_to_inductor():
    """compile_fx's own config_patches (ours: combo_kernels=True) put the default back by setting it."""
    with torch._inductor.config.patch(combo_kernels=True):
        pass
    report, config = _compile(two_independent, torch.randn(64, 64), torch.randn(64, 64))
    assert report.combo_kernels is True and config.get("combo_kernels") is True, report.summary()


def test_a_cpu_compile_leaves_combo_kernels_alone(monkeypatch):
    monkeypatch.setattr(probe, "count_launches", lambda *a, **k: pytest.fail("counted"))
    report, config = _compile(two_independent, torch.randn(64, 64), torch.randn(64, 64), verify=None)
    assert report.combo_kernels is None and "combo_kernels" not in config


@pytest.mark.slow  # a training step through Inductor's CPU compile
def test_each_aten_graph_of_a_training_step_is_decided_for_its_own_compile():
    """The forward's decision came from the Dynamo graph; the backward's kernels are others. The
    post-grad pass decides each Aten graph's combo kernels from Inductor's count of its own program,
    for that graph's code generation only (the user's pass after ours sees it), and the compile's
    patch puts the default back after."""
    import torch._inductor.config as inductor_config

    seen = []

    class Spy(compat.CustomGraphPass):
        def __call__(self, graph):
            seen.append(inductor_config.combo_kernels)

        def uuid(self):
            return None

    w = torch.randn(16, 16, requires_grad=True)

    def step(x):
        pieces = [torch.sigmoid(p) * 2 for p in torch.split(x @ w, 2, dim=1)]
        return torch.cat(pieces, dim=1).tanh(), (x * 3).sum()

    backend = eqsat_backend(cost=GPU, verify=True, cache=False)
    x = torch.randn(8, 16, requires_grad=True)
    with inductor_config.patch(post_grad_custom_pre_pass=Spy()):
        torch._dynamo.reset()
        out, total = torch.compile(step, backend=backend)(x)
        (out.sum() + total).backward()
    decided = [r.combo_kernels for r in backend.post_grad_reports]
    # the Dynamo graph's count said off; the forward's own program combines 2 kernels into 1, the
    # backward's nothing: each graph's code generation saw its own decision
    assert backend.reports[0].combo_kernels is False, backend.reports[0].summary()
    assert seen == decided == [True, False], [r.combo_launches for r in backend.post_grad_reports]
    assert inductor_config.combo_kernels is False  # the default, back


# -- the cost model prices them ------------------------------------------------------------------
def tanh_then_matmuls(a, b, c, d, w1, w2, w3, w4):
    """Four independent tanh kernels, each read by a matmul of its own width (nothing to batch there)."""
    return torch.tanh(a) @ w1, torch.tanh(b) @ w2, torch.tanh(c) @ w3, torch.tanh(d) @ w4


def test_extraction_stops_buying_launches_combo_kernels_give_for_free():
    """With the pointwise batches offered on the GPU model: without combo kernels, one tanh of the
    stacked inputs saves 3 launches (8 → 5); with them, Inductor already launches the four tanh as one
    combo kernel, so the batch saves nothing and the input program stays."""
    import dataclasses

    from eqsat_torch.options import Options
    from eqsat_torch.pipeline import optimize

    gm = torch.fx.symbolic_trace(tanh_then_matmuls)
    inputs = [torch.randn(64, 64) for _ in range(4)] + [torch.randn(64, n) for n in (16, 24, 32, 40)]
    cost = dataclasses.replace(GPU, batch_pointwise=True)
    reports = {}
    for combo in (False, True):
        new_gm, reports[combo] = optimize(gm, inputs, Options(cost=cost, verify=False, post_grad=False), combo=combo)
        torch.testing.assert_close(new_gm(*inputs), gm(*inputs))
    assert reports[False].changed and "batch_tanh" in reports[False].rules_used, reports[False].summary()
    assert (reports[False].kernels_before, reports[False].kernels_after) == (8, 5)
    assert not reports[True].changed and reports[True].kernels_before == 5, reports[True].summary()
