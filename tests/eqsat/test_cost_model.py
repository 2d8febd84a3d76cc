"""The cost model predicts Inductor's kernels: fusion, extern matmuls, cat written in place."""
import pytest

from eqsat.cost import CostModel
from eqsat.terms import IVec, Ref, Term
from eqsat_graphs import Program, input_choice, roots_of, view_of

M = CostModel()


def predict(prog: Program, outs: list[str], model: CostModel = M):
    view = view_of(prog)
    roots = roots_of(view, outs)
    return model.program_cost(view, input_choice(view, roots), roots)


def test_pointwise_chain_is_one_kernel():
    p = Program()
    x = p.input((64, 128))
    y = p.unary("exp", p.unary("relu", x))
    z = p.binary("add", y, x)
    cost = predict(p, [z])
    assert (cost.generated, cost.extern) == (1, 0)
    assert cost.bytes == 2 * 64 * 128 * 4  # read x once, write z once


def test_views_are_free():
    p = Program()
    x = p.input((64, 128))
    a, b = p.split(x, [64, 64], 1)
    assert predict(p, [a, b]).kernels == 0


def test_pointwise_fuses_into_reduction_and_its_epilogue():
    p = Program()
    x = p.input((64, 128))
    e = p.unary("exp", x)
    s = p.sum(e, 1)
    cost = predict(p, [p.binary("div", e, s)])
    assert cost.kernels == 1


def test_matmul_is_extern_and_splits_pointwise_groups():
    p = Program()
    x = p.input((64, 128))
    w, b = p.param((128, 128)), p.param((128,))
    h = p.unary("relu", x)
    y = p.unary("relu", p.linear(h, w, b))
    cost = predict(p, [y])
    assert (cost.generated, cost.extern) == (2, 1)


def test_cat_of_computed_inputs_is_written_in_place():
    p = Program()
    x, y = p.input((64, 128)), p.input((64, 128))
    c = p.cat([p.unary("relu", x), p.unary("relu", y)], 1)
    cost = predict(p, [c], CostModel.for_device("cpu"))
    assert (cost.kernels, cost.loops) == (2, 2)  # the two relus, no copy


def test_gpu_cat_of_pointwise_inputs_is_one_pointwise_kernel():
    """Triton lowers a cat of at most 8 inputs that would each need a kernel anyway (single-use
    pointwise ops, views, inputs) as one pointwise kernel (Inductor's horizontal cat)."""
    p = Program()
    x, y = p.input((64, 128)), p.input((64, 128))
    z = p.unary("relu", x)
    assert predict(p, [p.cat([z, p.unary("relu", y)], 1)]).kernels == 1
    assert predict(p, [p.cat([z, p.unary("relu", y)], 1), z]).kernels == 2  # z is read elsewhere: in place


def test_gpu_cat_of_reduction_epilogues_is_written_in_place():
    """Inductor keeps a ConcatKernel when an input would fuse into a reduction (H200: 8 layer norms,
    tanh, cat: 8 launches), so each norm's kernel writes its slice."""
    p = Program()
    xs = p.split(p.input((64, 128)), [16] * 8, 1)
    outs = [p.unary("tanh", p.layer_norm(x, p.param((16,)), p.param((16,)))) for x in xs]
    assert predict(p, [p.cat(outs, 1)]).kernels == 8


def test_cat_of_inputs_copies_them_in_one_kernel():
    p = Program()
    x, y = p.input((64, 128)), p.input((64, 32))
    cost = predict(p, [p.cat([x, y], 1)])
    assert (cost.kernels, cost.loops) == (1, 1)  # Triton: one pointwise kernel
    cost = predict(p, [p.cat([x, y], 1)], CostModel.for_device("cpu"))
    assert (cost.kernels, cost.loops) == (1, 2)  # C++: one function, two loops


def test_cat_of_views_of_an_input_copies_each_view_on_gpu_past_eight_inputs():
    """H200: a cat of 3 split pieces of an input is one launch (parity_split_getitems_out_of_order);
    past 8 inputs Triton copies views of inputs one kernel each (split_stack_unbind, 67 launches); the
    C++ backend puts every copy of one cat in one function."""
    p = Program()
    x = p.input((64, 128))
    a, b, c = p.split(x, [32, 32, 64], 1)
    shuffled = p.cat([c, a, b], 1)
    assert predict(p, [shuffled]).kernels == 1
    assert predict(p, [shuffled], CostModel.for_device("cpu")).kernels == 1
    pieces = p.split(x, [8] * 16, 1)
    assert predict(p, [p.cat(pieces[::-1], 1)]).kernels == 16


def test_gpu_cat_past_eight_slices_of_one_pointwise_op_is_a_kernel_per_slice():
    """H200 (issue 29): sigmoid(x) split into 16 four-wide pieces, tanh each, cat: Inductor writes
    each slice in a kernel of its own (16 launches). The pieces read the inlined sigmoid at other
    indices each, so Triton fuses none of them horizontally; the whole tanh(sigmoid(x)) is one."""
    p = Program()
    x = p.input((256, 64))
    m = p.unary("sigmoid", x)
    pieces = [p.unary("tanh", q) for q in p.split(m, [4] * 16, 1)]
    assert predict(p, [p.cat(pieces, 1)]).kernels == 16
    assert predict(p, [p.unary("tanh", m)]).kernels == 1


def test_copies_of_the_pieces_of_one_input_read_all_of_them():
    """One fused kernel copying every piece of a split reads the whole input (distinct slices add up),
    not one piece's bytes: so a run of pieces is never priced cheaper than its one narrow."""
    p = Program()
    x, y = p.input((64, 128)), p.input((64, 32))
    pieces = p.split(x, [32] * 4, 1)
    cost = predict(p, [p.cat([y, *pieces], 1)], CostModel.for_device("cpu"))
    read = (64 * 32 + 64 * 128) * 4
    assert cost.bytes == read + read  # every byte of x and y read once, the output written once


def test_cat_of_matmul_outputs_is_written_in_place():
    p = Program()
    x = p.input((64, 128))
    ws, bs = [p.param((16, 128)) for _ in range(3)], [p.param((16,)) for _ in range(3)]
    cost = predict(p, [p.cat([p.linear(x, w, b) for w, b in zip(ws, bs)], 1)])
    assert (cost.generated, cost.extern) == (0, 3)  # addmm(..., out=slice): no copy kernels


def test_cat_of_params_is_a_kernel_unless_frozen():
    p = Program()
    x = p.input((64, 128))
    w1, w2 = p.param((32, 128)), p.param((32, 128))
    b = p.param((64,))
    y = p.linear(x, p.cat([w1, w2], 0), b)
    assert predict(p, [y]).kernels == 2  # one kernel copying both params + the linear
    assert predict(p, [y], CostModel(frozen_params=True)).kernels == 1


def test_fusion_never_creates_a_cycle_through_a_matmul():
    p = Program()
    x = p.input((64, 128))
    w, b = p.param((128, 128)), p.param((128,))
    h = p.unary("relu", x)
    y = p.binary("add", p.linear(h, w, b), h)  # same shape as h, but depends on it through the linear
    assert predict(p, [y, h]).generated == 2


def test_node_cost_charges_extern_fully_and_pointwise_a_share():
    p = Program()
    x = p.input((64, 128))
    w, b = p.param((128, 128)), p.param((128,))
    r, lin = p.unary("relu", x), p.linear(x, w, b)
    view = view_of(p)
    cost = {view.nodes[n].ctor: M.node_cost(view.nodes[n], view) for c in roots_of(view, [r, lin])
            for n in view.classes[c]}
    assert 0 < cost["Unary"] < M.alpha < cost["Linear"]


CPU = CostModel.for_device("cpu")


def _cpu_relus(with_matmul: bool) -> float:
    """Two relu groups that share nothing, with or without an extern call between them."""
    p = Program()
    x, y = p.input((64, 128)), p.input((32, 128))
    w, b = p.param((128, 128)), p.param((128,))
    a = p.unary("relu", x)
    c = p.unary("relu", p.linear(a, w, b) if with_matmul else y)
    return predict(p, [a, c], CPU)


def test_cpu_groups_between_two_extern_calls_share_one_cpp_function():
    """The C++ backend emits every generated group between extern calls into one function, so a
    second group costs its loop nest and bytes, not a second call (α); an addmm between them
    splits the function, and each of its two sides pays a call."""
    apart, together = _cpu_relus(with_matmul=True), _cpu_relus(with_matmul=False)
    assert (together.generated, together.extern) == (2, 0)  # two loop-nest groups (different outer loops)
    bytes_ = together.bytes * CPU.beta
    assert together.cost == pytest.approx(CPU.alpha + 2 * CPU.loop_cost + bytes_)
    assert (apart.generated, apart.extern) == (2, 1)
    assert apart.cost == pytest.approx(3 * CPU.alpha + 2 * CPU.loop_cost + apart.bytes * CPU.beta)


def _layer_norm_cost(width: int) -> float:
    p = Program()
    x = p.input((8, width))
    return predict(p, [p.layer_norm(x, p.param((width,)), p.param((width,)))], CPU)


def test_cpu_layer_norm_under_1024_elements_is_two_step_variance():
    """Below config.cpp.use_two_step_variance_threshold (1024) the C++ backend lowers a layer norm's
    variance in two steps: a sum, a division, a sum of squared deviations, then the output loop, so
    two loop nests more than a (Welford) reduction."""
    small, large = _layer_norm_cost(512), _layer_norm_cost(1024)
    assert small.loops == large.loops == 1
    assert small.cost - small.bytes * CPU.beta == pytest.approx(CPU.alpha + 3 * CPU.loop_cost)
    assert large.cost - large.bytes * CPU.beta == pytest.approx(CPU.alpha + CPU.loop_cost)


def _head_copies(whole: bool):
    """q/k/v of one (B·T, 3C) = (16, 96) projection to (B, H, T, D) = (2, 4, 8, 8): three copies of the
    permuted pieces, or one copy of the whole permuted to (3, B, H, T, D) and three selects of it."""
    p = Program()
    y = p.linear(p.input((16, 32)), p.param((96, 32)), p.param((96,)))
    if whole:
        w = p.let(Term("Permute", (Ref(p.let(Term("View", (Ref(y), IVec((2, 8, 3, 4, 8)))), (2, 8, 3, 4, 8))),
                                   IVec((2, 0, 3, 1, 4)))), (3, 2, 4, 8, 8))
        c = p.let(Term("Contiguous", (Ref(w),)), (3, 2, 4, 8, 8))
        outs = [p.let(Term("Narrow", (Ref(c), 0, i, 1)), (1, 2, 4, 8, 8)) for i in range(3)]
    else:
        views = [p.let(Term("View", (Ref(piece), IVec((2, 8, 4, 8)))), (2, 8, 4, 8)) for piece in p.split(y, [32] * 3, 1)]
        perms = [p.let(Term("Permute", (Ref(v), IVec((0, 2, 1, 3)))), (2, 4, 8, 8)) for v in views]
        outs = [p.let(Term("Contiguous", (Ref(v),)), (2, 4, 8, 8)) for v in perms]
    return p, outs


@pytest.mark.parametrize("device, pieces, whole", [("cuda", 3, 1), ("cpu", 1, 1)])
def test_one_copy_of_the_whole_projection_is_one_launch_for_the_same_bytes(device, pieces, whole):
    """GPU: a copy is a kernel of its own, 3 → 1 (head_split_copy). CPU: Inductor already writes the three
    copies in one C++ function, as three loop nests; the whole copy is one."""
    model = CostModel.for_device(device)
    apart, together = (predict(*_head_copies(w), model) for w in (False, True))
    assert (apart.generated, together.generated) == (pieces, whole)
    assert apart.bytes == together.bytes
    assert (apart.loops, together.loops) == (3, 1)
