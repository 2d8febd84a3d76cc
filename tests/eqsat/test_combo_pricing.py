"""The GPU model prices Inductor's combo kernels (issue 42): independent generated kernels of one
dependency level launch once per kind, 8 at a time; extern calls and dependent kernels never join."""
import dataclasses

from eqsat.cost import CostModel
from eqsat_graphs import Program, input_choice, roots_of, view_of

GPU = CostModel.for_device("cuda")
COMBO = dataclasses.replace(GPU, combo_kernels=True)


def predict(prog: Program, outs: list[str], model: CostModel):
    view = view_of(prog)
    roots = roots_of(view, outs)
    return model.program_cost(view, input_choice(view, roots), roots)


def test_independent_pointwise_kernels_launch_once_with_combo():
    p = Program()
    outs = [p.unary("exp", p.input((64, 128))) for _ in range(5)]
    plain, combined = predict(p, outs, GPU), predict(p, outs, COMBO)
    assert (plain.generated, combined.generated) == (5, 1)
    assert combined.cost < plain.cost and combined.bytes == plain.bytes


def test_at_most_eight_join_one_combo():
    p = Program()
    outs = [p.unary("exp", p.input((64, 128))) for _ in range(10)]
    assert predict(p, outs, COMBO).generated == 2


def test_reductions_and_pointwise_kernels_launch_apart():
    p = Program()
    outs = [p.unary("exp", p.input((64, 128))) for _ in range(3)] + [p.sum(p.input((64, 128)), 1) for _ in range(2)]
    assert (predict(p, outs, GPU).generated, predict(p, outs, COMBO).generated) == (5, 2)


def test_dependent_kernels_and_matmuls_never_join():
    p = Program()
    x = p.input((64, 128))
    s = p.sum(p.unary("exp", x), 1)               # a reduction ...
    y = p.binary("mul", p.unary("relu", x), s)    # ... whose reader waits for it (could fuse: it does)
    m = p.linear(p.input((64, 128)), p.param((64, 128)), p.param((64,)))
    plain, combined = predict(p, [y, m], GPU), predict(p, [y, m], COMBO)
    assert combined.extern == plain.extern == 1
    assert combined.generated == plain.generated


def test_the_cpu_model_ignores_the_flag():
    p = Program()
    outs = [p.unary("exp", p.input((64, 128))) for _ in range(5)]
    cpu = CostModel.for_device("cpu")
    assert predict(p, outs, cpu) == predict(p, outs, dataclasses.replace(cpu, combo_kernels=True))
