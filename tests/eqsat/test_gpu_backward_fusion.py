"""The GPU model groups a backward graph's reductions as Triton does (H200 ``calibrate_train``).

Triton fuses nodes into one kernel only when the fused node keeps one ``(numel, rnumel)``: a layer
norm backward's row sums of ``g·w`` (the input gradient) and its column sums of ``g·x̂`` and ``g``
(the weight and bias gradients) read the same ``n·r`` elements but are two kernels. A reduction with
few outputs and a long column is split into a partial reduction and a reduction of the partials.
"""
from eqsat.cost import CostModel
from eqsat.fusion import splits_reduction
from eqsat.terms import Ref, Term
from eqsat_graphs import Program, input_choice, roots_of, view_of

GPU = CostModel.for_device("cuda")


def predict(prog: Program, outs: list[str], model: CostModel = GPU):
    view = view_of(prog)
    roots = roots_of(view, outs)
    return model.program_cost(view, input_choice(view, roots), roots)


def layer_norm_backward(rows: int, width: int) -> tuple[Program, list[str]]:
    """``dx = g·w − mean(g·w) − x̂·mean(g·w·x̂)`` (row sums), ``dw = Σ_rows g·x̂``, ``db = Σ_rows g``."""
    p = Program()
    g, xhat, w = p.input((rows, width)), p.input((rows, width)), p.input((1, width))
    gw = p.binary("mul", g, w)
    row1 = p.sum(gw, 1)
    row2 = p.sum(p.binary("mul", gw, xhat), 1)
    dx = p.binary("sub", p.binary("sub", gw, row1), p.binary("mul", xhat, row2))
    dw = p.sum(p.binary("mul", g, xhat), 0)
    db = p.sum(g, 0)
    return p, [dx, dw, db]


def test_row_and_column_reductions_of_one_tensor_are_two_kernels():
    # the pointwise g·w has n·r elements: it fits both reductions' loops, but one kernel has one space
    p, outs = layer_norm_backward(64, 32)
    cost = predict(p, outs)
    assert (cost.generated, cost.extern) == (2, 0)


def test_reductions_over_one_space_still_share_a_kernel():
    p, (dx, dw, db) = layer_norm_backward(64, 32)
    assert predict(p, [dx]).generated == 1  # both row sums and the input gradient
    assert predict(p, [dw, db]).generated == 1  # both column sums


def test_a_column_sum_with_few_outputs_is_split_in_two_kernels():
    # wukong's LayerNorm(16) weight and bias gradients over 1024 rows: a triton_red and a triton_per
    p, (_, dw, db) = layer_norm_backward(1024, 16)
    assert predict(p, [dw, db]).generated == 2
    assert predict(p, [dw, db], CostModel.for_device("cpu")).generated == 1  # the C++ backend does not split


def test_row_sums_and_short_columns_are_not_split():
    p = Program()
    x = p.input((16, 1024))
    assert predict(p, [p.sum(x, 1)]).generated == 1  # 1024 in a row: one persistent reduction
    p2, (_, dw, db) = layer_norm_backward(64, 256)
    assert predict(p2, [dw, db]).generated == 1  # 64 rows: too short to share out


def test_split_rule_follows_inductor_thresholds():
    sms = 132
    assert splits_reduction(16, 1024, inner=False, num_sm=sms)
    assert not splits_reduction(16, 128, inner=False, num_sm=sms)        # 4 values × 32: one block
    assert not splits_reduction(64 * sms, 1024, inner=False, num_sm=sms)  # enough outputs
    assert splits_reduction(1, 16384, inner=True, num_sm=sms)
    assert not splits_reduction(1, 8192, inner=True, num_sm=sms)
    assert not splits_reduction(16, 1024, inner=False, num_sm=0)          # CPU


def test_an_add_of_a_matmul_is_an_addmm_unless_pointwise_ops_take_it():
    # Inductor's post-grad pattern add(mm(g, w), c) → addmm(c, g, w): recsys_tower's input gradients
    p = Program()
    g, w, c = p.input((64, 16)), p.input((16, 8)), p.input((64, 8))
    mm = p.let(Term("Mm", (Ref(g), Ref(w))), (64, 8))
    add = p.binary("add", c, mm)
    relu = p.unary("relu", add)
    assert (predict(p, [add]).generated, predict(p, [add]).extern) == (0, 1)
    gpu = predict(p, [relu])  # Triton keeps mm + add: the add fuses into the relu
    cpu = predict(p, [relu], CostModel.for_device("cpu"))  # the C++ backend always takes addmm
    assert (gpu.generated, gpu.extern) == (cpu.generated, cpu.extern) == (1, 1)
