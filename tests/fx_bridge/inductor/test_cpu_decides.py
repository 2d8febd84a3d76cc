"""Inductor decides on the CPU too (issue 42): there it counts loop nests, the count that follows CPU
latency, by generating (never compiling) the C++ source, and the program with fewer goes on."""
import pytest
import torch
from torch._inductor import metrics

from captured import dynamo_graph
from eqsat.cost import CostModel
from eqsat_torch import eqsat_backend
from eqsat_torch.inductor import decide, probe, verify
from eqsat_torch.inductor.launches import Launches
from eqsat_torch.options import Options


def two_stage(x):
    first = torch.cat([torch.sigmoid(p) * 2 for p in torch.split(x, 1, dim=1)], dim=1)
    return torch.cat([torch.tanh(q) + 1 for q in torch.split(first, 4, dim=1)], dim=1)


def norms(x, w):
    return torch.softmax(x @ w, dim=-1), x.sum(0), torch.nn.functional.layer_norm(x, x.shape[-1:])


def test_a_cpu_compile_is_decided_on_the_cpu_and_a_gpu_model_on_the_fake_gpu():
    x, cpu = [torch.randn(4, 4)], CostModel.for_device("cpu")
    assert decide.probe_device(Options(cost=cpu), x) == "cpu"
    assert decide.probe_device(Options(verify=False, cost=cpu), x) is None
    assert decide.probe_device(Options(cost=cpu, inner="eager"), x) is None  # no Inductor to count for
    assert decide.probe_device(Options(verify=True, cost=CostModel.for_device("cuda")), x) == (
        "cuda" if probe.available("cuda") else None)


@pytest.mark.slow  # a real C++ compile
def test_the_cpu_probe_counts_the_loop_nests_inductor_generates():
    inputs = (torch.randn(32, 16), torch.randn(16, 16))
    gm, ex = dynamo_graph(norms, *inputs)
    counted = probe.count_launches(gm, ex, "cpu", "torch")
    metrics.reset()
    torch._dynamo.reset()
    torch.compile(norms, backend="inductor")(*inputs)
    assert counted.generated == metrics.generated_kernel_count > 1
    assert counted.extern == 1 and counted.cpu  # the matmul


def test_a_cpu_compile_goes_on_with_the_program_inductor_generates_fewer_loop_nests_for():
    backend = eqsat_backend(cache=False, post_grad=False)
    x = torch.randn(64, 16)
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(two_stage, backend=backend)(x), two_stage(x))
    (report,) = backend.reports
    counted = report.inductor_launches
    assert counted["optimized"] < counted["input"], report.summary()  # a loop nest per piece, against one
    assert report.inductor_winner == "optimized" and report.changed


def test_on_the_cpu_loop_nests_come_first():
    """DHEN's training step, 2 cores: eqsat's program had 21 more loop nests and 105 fewer extern
    calls and ran 1.9x slower than Inductor's; fewer launches in all, it would have gone on."""
    given, ours = torch.fx.symbolic_trace(lambda x: x + 1), torch.fx.symbolic_trace(lambda x: x * 2)
    counts = {given: Launches(86, 138, 25_240_000, cpu=True), ours: Launches(107, 33, 21_200_000, cpu=True)}
    choice = verify.choose([(verify.INPUT, given), ("optimized", ours)], counts.__getitem__)
    assert choice.name == verify.INPUT and "86 loop nests" in choice.note, choice.note
    fewer_nests = {given: counts[given], ours: Launches(80, 140, 26_000_000, cpu=True)}
    assert verify.choose([(verify.INPUT, given), ("optimized", ours)], fewer_nests.__getitem__).name == "optimized"
    assert Launches(107, 33, 0).key < Launches(86, 138, 0).key  # on a GPU a launch is a launch
