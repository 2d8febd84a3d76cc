"""Inductor decides (issue 29): on a GPU compile the optimizer's program goes on only when Inductor's
own lowering and scheduler count fewer launches for it than for the input program."""
import pytest
import torch

from eqsat.cost import CostModel
from eqsat_torch import eqsat_backend
from eqsat_torch.inductor import decide
from eqsat_torch.scale import plan
from eqsat_torch.inductor import probe
from eqsat_torch.inductor.launches import Launches
from eqsat_torch.options import Options

GPU = CostModel.for_device("cuda")


def two_stage(x):
    """split → sigmoid·2 → cat, then split (4-wide) → tanh+1 → cat: 16 + 4 launches for Inductor alone."""
    first = torch.cat([torch.sigmoid(p) * 2 for p in torch.split(x, 1, dim=1)], dim=1)
    return torch.cat([torch.tanh(q) + 1 for q in torch.split(first, 4, dim=1)], dim=1)


def _compile(**options):
    backend = eqsat_backend(cost=GPU, inner="eager", post_grad=False, **options)
    x = torch.randn(64, 16)
    out = torch.compile(two_stage, backend=backend)(x)
    torch.testing.assert_close(out, two_stage(x))
    return backend.reports[0]


def test_inductor_counts_both_programs_and_ours_wins():
    report = _compile(verify=True)
    assert report.changed and report.rules_used, report.summary()
    # Inductor alone: a kernel per piece of each stage (16 pointwise inputs; 4 ≤ 8 is one kernel);
    # ours: tanh(sigmoid(x)·2)+1, one kernel
    assert report.inductor_launches == {"input": 17, "optimized": 1}, report.summary()
    assert "verify" in report.phase_seconds


def test_the_input_wins_when_inductor_counts_fewer_launches_for_it(monkeypatch):
    """Whatever the model predicted: the graph handed on never launches more than the input."""
    counts = iter([Launches(3, 0, 100), Launches(5, 0, 50)])
    monkeypatch.setattr(probe, "count_launches", lambda *args, **kwargs: next(counts))
    report = _compile(verify=True)
    assert not report.changed and not report.rules_used, report.summary()
    assert report.inductor_launches == {"input": 3, "optimized": 5}
    assert report.kernels_after == report.kernels_before
    assert any("kept the input program" in n for n in report.notes), report.notes


def test_a_cpu_compile_is_not_measured_unless_asked(monkeypatch):
    monkeypatch.setattr(probe, "count_launches", lambda *a, **k: (_ for _ in ()).throw(AssertionError))
    report = _compile()  # verify=None: a CPU graph priced for the GPU is not counted on the fake GPU
    assert report.changed and not report.inductor_launches


def test_verification_that_the_budget_cannot_pay_for_is_skipped(monkeypatch):
    from eqsat import budget

    monkeypatch.setitem(budget.SECONDS_PER_NODE, "probe", 1e6)
    report = _compile(verify=True)
    assert report.changed and not report.inductor_launches, report.summary()
    assert any("not measured by Inductor" in n for n in report.notes), report.notes


def test_verify_option_is_checked():
    with pytest.raises(TypeError, match="verify"):
        Options(verify="yes")


def _rotate_half(t):
    a, b = t.chunk(2, dim=-1)
    return torch.cat([-b, a], dim=-1)


def rotary_attention(x, wq, wk, wv, cos, sin):
    """Llama's attention in small: q, k, v linears of one input (``batch_linear_lhs`` fuses them),
    the rotary embedding on q and k (``batch_add`` stacks their sums, which Inductor had fused into
    their producers: one launch more), SDPA."""
    B, S, D = x.shape
    q, k, v = (torch.nn.functional.linear(x, w).view(B, S, 4, D // 4).transpose(1, 2) for w in (wq, wk, wv))
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    q = q * cos + _rotate_half(q) * sin
    k = k * cos + _rotate_half(k) * sin
    o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    return o.transpose(1, 2).reshape(B, S, D)


def _rotary_args():
    torch.manual_seed(0)
    return [torch.randn(2, 32, 64), *(torch.randn(64, 64) for _ in range(3)), torch.randn(2, 32, 16),
            torch.randn(2, 32, 16)]


# The GPU model with the pointwise batches on: it prices a stack of the rotary sums as a gain, which
# Inductor does not make one (zoo Llama, fake H200: 31 launches as written, 38 ours, 27 without it).
MISPRICED = CostModel.for_device("cuda", batch_pointwise=True)


def _compile_rotary(**options):
    backend = eqsat_backend(cost=MISPRICED, inner="eager", post_grad=False, cache=False, seconds=600, **options)
    args = _rotary_args()
    torch.testing.assert_close(torch.compile(rotary_attention, backend=backend)(*args), rotary_attention(*args))
    return backend.reports[0]


def test_the_program_without_the_mispriced_rule_wins():
    """Ours (fused q/k/v and the stacked rotary sums) launches no fewer than the input; ours without
    the ``batch_add`` rewrites launches fewer than both, and is what is compiled (values: eager's)."""
    report = _compile_rotary(verify=True)
    counted = report.inductor_launches
    assert report.inductor_winner == "no batch_add", report.summary()
    assert counted["optimized"] >= counted["input"] > counted["no batch_add"], counted
    assert report.changed and report.rules_used == {"batch_linear_lhs": 1}, report.summary()
    assert report.kernels_after < report.kernels_before  # the model's price of the program compiled
    assert "→ no batch_add" in report.details(), report.details()  # the summary line is short (issue 43)


def test_programs_between_are_measured_where_ours_lost_else_within_the_share(monkeypatch):
    """Where ours launches fewer than the input, a measuring share of 0 leaves the programs between
    unmeasured; where it launches more, they are measured all the same."""
    monkeypatch.setattr(decide, "VERIFY_SHARE", 0.0)
    calls: list = []

    def count(counts):
        def measure(gm, *args, **kwargs):
            calls.append(gm)
            return Launches(next(counts), 0, 100)
        return measure

    monkeypatch.setattr(probe, "count_launches", count(iter([5, 3])))
    won = _compile_rotary(verify=True)
    assert won.inductor_winner == "optimized" and len(calls) == 2, won.inductor_launches
    assert all(str(v).startswith("not measured") for k, v in won.inductor_launches.items()
               if k not in ("input", "optimized")) and len(won.inductor_launches) > 2

    calls.clear()
    monkeypatch.setattr(probe, "count_launches", count(iter([5, 6, 4, 7, 9, 9])))
    lost = _compile_rotary(verify=True)
    assert len(calls) == len(lost.inductor_launches) > 2, lost.inductor_launches
    assert lost.inductor_winner not in ("input", "optimized") and lost.inductor_launches[lost.inductor_winner] == 4


@pytest.mark.slow
def test_zoo_llama_of_current_transformers_compiles_the_program_inductor_counts_fewest():
    """Issue 29's case: a whole 2-layer LlamaModel of transformers 5.x under a mispriced cost model.
    Whatever extraction proposes, the program compiled is the candidate Inductor counts the fewest
    launches for, and it computes what eager does. (Measured on transformers 5.x in issue 29: 31 as
    written, 38 ours, 27 without ``batch_add``: a candidate between won. With 5.25 and this round's
    pricing ours is 28 against the input's 31 and wins outright.)"""
    transformers = pytest.importorskip("transformers")
    if int(transformers.__version__.split(".")[0]) < 5:
        pytest.skip(f"transformers {transformers.__version__}: the case needs 5.x")
    from bench.models import ZOO

    model, inputs = ZOO["llama"]("small", "cpu", torch.float32)
    backend = eqsat_backend(cost=MISPRICED, inner="eager", post_grad=False, cache=False, seconds=600, verify=True)
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(model, backend=backend)(*inputs), model(*inputs))
    report = backend.reports[0]
    counted = report.inductor_launches
    assert {"input", "optimized"} <= set(counted) and report.inductor_winner in counted, report.details()
    measured = {name: n for name, n in counted.items() if isinstance(n, int)}  # a failed count is its reason
    assert counted[report.inductor_winner] == min(measured.values()), counted
    assert counted[report.inductor_winner] < counted["input"], counted  # the rewrite that pays is kept


def test_units_decided_on_their_own_are_all_in_the_graphs_report(monkeypatch):
    """A graph cut into split/cat units (here: any graph over 30 nodes): Inductor decides each unit,
    and the graph's report carries every unit's counts and winner."""
    monkeypatch.setattr(plan, "REGION_NODES", 30)

    def two_units(x, y):
        a = torch.cat([torch.sigmoid(p) * 2 for p in torch.split(x, 1, dim=1)], dim=1)
        b = torch.cat([torch.tanh(p) + 1 for p in torch.split(y, 1, dim=1)], dim=1)
        return a @ b.T

    backend = eqsat_backend(cost=GPU, inner="eager", post_grad=False, cache=False, seconds=600, verify=True)
    x, y = torch.randn(64, 16), torch.randn(64, 16)
    torch.testing.assert_close(torch.compile(two_units, backend=backend)(x, y), two_units(x, y))
    report = backend.reports[0]
    assert report.inductor_launches == {"0/input": 16, "0/optimized": 1, "1/input": 16, "1/optimized": 1}, report.notes
    assert report.inductor_winner == "optimized, optimized"


def test_programs_between_stop_when_seconds_run_out(monkeypatch):
    """Ours lost, so the share does not stop the programs between; the clock, run out after the two
    programs every decision measures, does."""
    from eqsat.deadline import Deadline

    spent = []
    left = Deadline.left
    monkeypatch.setattr(Deadline, "left", lambda self: 0.0 if spent else left(self))

    def count(gm, *args, **kwargs):
        spent.append(gm)
        return Launches(4 + len(spent), 0, 100)  # the input 5, ours 6

    monkeypatch.setattr(probe, "count_launches", count)
    report = _compile_rotary(verify=True)
    assert len(spent) == 2 and report.inductor_winner == "input", report.inductor_launches
    assert len(report.inductor_launches) > 2 and all(
        v.startswith("not measured: seconds=") for k, v in report.inductor_launches.items() if k not in ("input", "optimized"))
    assert "verify" not in report.stop_reason
