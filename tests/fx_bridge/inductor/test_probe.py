"""Inductor's own count of GPU launches (eqsat_torch.inductor.probe), asked on this CPU-only machine:
fake cuda tensors, and an H200's properties where Inductor asks for the device's. Each count asserted
here is what a real compile on an H200 launched (torch 2.11, read from its wrapper code)."""
import torch
import torch._functorch.config as functorch_config
import torch._inductor.config as inductor_config
import pytest
from torch._dynamo.utils import counters
from torch._inductor import metrics
from torch._inductor.decomposition import select_decomp_table
from torch.fx.experimental.proxy_tensor import make_fx

from captured import dynamo_graph
from eqsat_torch.inductor.fake_graph import _getitem, _setitem
from eqsat_torch.inductor.launches import ProbeError
from eqsat_torch.inductor.probe import available, count_launches

F = torch.nn.functional

pytestmark = pytest.mark.skipif(not available("cuda"), reason="no way to probe Inductor's CUDA path here")


def aten_graph(fn, *inputs):
    """The functional Aten graph AOTAutograd hands Inductor (its decompositions applied)."""
    return make_fx(fn, select_decomp_table())(*inputs)


def both(fn, *inputs):
    """Launches of ``fn`` measured from its Aten graph and from its Dynamo graph; they must agree."""
    aten = count_launches(aten_graph(fn, *inputs), inputs, dialect="aten")
    torch_ir = count_launches(*dynamo_graph(fn, *inputs), dialect="torch")
    assert aten == torch_ir
    return aten


def cat_sin(*xs):
    return torch.cat([x.sin() for x in xs])


def test_a_pointwise_cat_of_three_is_one_kernel():
    a, b, c = (torch.randn(64, 32) for _ in range(3))
    got = both(lambda a, b, c: torch.cat([a.sin(), b.cos(), c.exp()]), a, b, c)
    assert (got.generated, got.extern) == (1, 0)
    assert got.bytes == 2 * 3 * 64 * 32 * 4  # each input read once, the cat written once


def test_linear_relu_is_a_matmul_and_one_kernel():
    """On a GPU the bias is not kept in ``addmm``: Inductor's post-grad passes unfuse it into the
    pointwise epilogue, so ``mm`` is the extern call and bias + relu are one Triton kernel."""
    x, w, b = torch.randn(32, 64), torch.randn(128, 64), torch.randn(128)
    got = both(lambda x, w, b: torch.relu(F.linear(x, w, b)), x, w, b)
    assert (got.generated, got.extern) == (1, 1)


def test_a_pointwise_cat_of_more_than_eight_inputs_is_a_kernel_per_input():
    """Up to ``max_pointwise_cat_inputs`` (8) inputs, the cat and its pointwise producers are one
    kernel; past it the cat becomes a buffer each producer writes its slice of: a launch per input."""
    assert inductor_config.max_pointwise_cat_inputs == 8
    eight, ten = [torch.randn(16, 16) for _ in range(8)], [torch.randn(16, 16) for _ in range(10)]
    assert both(cat_sin, *eight).total == 1
    assert both(cat_sin, *ten).total == 10
    with inductor_config.patch(max_pointwise_cat_inputs=10):  # the probe follows the user's config
        assert count_launches(aten_graph(cat_sin, *ten), ten).total == 1
    assert inductor_config.max_pointwise_cat_inputs == 8


def test_softmax_is_one_kernel():
    got = both(lambda x: torch.softmax(x, -1), torch.randn(32, 1000))
    assert (got.generated, got.extern) == (1, 0)


def test_bmm_tanh_is_a_bmm_and_one_kernel():
    got = both(lambda a, b: torch.tanh(torch.bmm(a, b)), torch.randn(4, 8, 16), torch.randn(4, 16, 8))
    assert (got.generated, got.extern) == (1, 1)


def test_a_contiguous_copy_of_attention_heads_is_one_kernel():
    """``x.transpose(1, 2).contiguous()``, as every attention layer makes its heads (a CPU-only
    build's binding of ``contiguous`` opens a CUDA device guard: the probe makes it the clone it is)."""
    got = both(lambda x: x.transpose(1, 2).contiguous() * 2, torch.randn(2, 8, 4, 16))
    assert (got.generated, got.extern) == (1, 0)


@pytest.mark.parametrize("mask", [None, "causal", "bool"])
def test_attention_is_one_fused_call_as_on_an_h200(mask):
    """SDPA in float32 is memory-efficient attention on an H200: one extern call, and one kernel to
    make a boolean mask additive. A CPU-only build decomposes it (matmuls and a softmax) unless the
    probe picks the kernel the GPU would."""
    q, k, v = (torch.randn(2, 4, 128, 64) for _ in range(3))
    bool_mask = torch.ones(128, 128, dtype=torch.bool).tril()
    fn = {None: lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
          "causal": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
          "bool": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=bool_mask)}[mask]
    got = count_launches(*dynamo_graph(fn, q, k, v), dialect="torch")
    assert (got.generated, got.extern) == ((1, 1) if mask == "bool" else (0, 1))


def test_attention_with_a_mask_broadcast_along_its_last_dim_is_matmuls_and_a_softmax():
    """CUDA's fused attention kernels need a mask whose last dim has stride 1; transformers 5 expands
    BERT's and BART's padding masks with stride 0 there, and the H200 ran their attention as two
    ``bmm`` and a softmax (33 launches for the zoo's BERT, the probe said 23 when it fused them)."""
    q, k, v = (torch.randn(2, 4, 128, 64) for _ in range(3))
    keep = torch.ones(2, 128, dtype=torch.bool)

    def fn(q, k, v, keep):
        mask = keep[:, None, :, None].expand(2, 1, 128, 128)  # strides (128, 128, 1, 0)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    got = count_launches(*dynamo_graph(fn, q, k, v, keep), dialect="torch")
    calls = [d for d in got.described if d.startswith("0+1 ")]
    assert len(calls) == 2 and all("bmm" in d.split() for d in calls)
    assert not any("efficient_attention" in d for d in got.described)


def test_a_post_grad_body_with_nested_outputs():
    """The pipeline's post-grad pass hands over ``(outputs, [copied values])``; sibling pointwise
    ops over the same range are one kernel."""
    x, y = torch.randn(64), torch.randn(64)
    body = aten_graph(lambda x, y: ((x.sin(), y.cos()), [x + y]), x, y)
    assert count_launches(body, [x, y]).total == 1


def test_the_reduction_split_follows_the_h200s_132_multiprocessors():
    """A row sum over few long rows is split in two kernels to fill the GPU's multiprocessors."""
    got = count_launches(aten_graph(lambda x: x.sum(-1), torch.randn(64, 65536)), [torch.randn(64, 65536)])
    assert (got.generated, got.extern) == (2, 0)


def test_a_mix_order_reduction_is_one_kernel_and_a_torch_reduction_per_outer_sum():
    """Sums over both dims of one input are one kernel; it leaves the column sums as partial sums the
    wrapper finishes with a torch ``sum`` each (their final-stage nodes are not codegened). The relu
    of a column sum is a kernel of its own."""
    x = torch.empty(8192, 1024)
    both_ways = aten_graph(lambda x: (x.sum(0), x.sum(1)), x)
    with_epilogue = aten_graph(lambda x: ((x * 2).sum(0), (x * 2).sum(1), torch.relu(x.sum(0))), x)
    assert [(g.generated, g.extern) for g in (count_launches(both_ways, [x]), count_launches(with_epilogue, [x]))] \
        == [(1, 1), (2, 2)]


def test_dynamo_graphs_index_construct_and_fold_constants():
    """Indexing, factories without a device and uniform constants (folded by the joint-graph passes
    on the CPU) all reach Inductor's lowering; the whole graph is one kernel."""
    def fn(x):
        y = x[:, :8].sin() + x[0, 8:] * torch.ones(8) + torch.zeros_like(x[1:2, ::2])
        y[0] = 1.0
        return y
    got = count_launches(*dynamo_graph(fn, torch.randn(16, 16)), dialect="torch")
    assert (got.generated, got.extern) == (1, 0)


@pytest.mark.parametrize("index", [
    0, -1, slice(1, 3), (slice(None), 2), (Ellipsis, 1), (None, 0), (0, None, slice(None, None, 2)),
    torch.tensor([0, 2]), (slice(None), torch.tensor([1, 3])), (torch.tensor([[1], [3]]), torch.tensor([0, 2])),
    (Ellipsis, torch.tensor([4])), (slice(1, 3), None, torch.tensor([0]), Ellipsis), [0, 3],
    (torch.tensor([0, 1]), 1, torch.tensor([2, 3])), (0, 0, 0), (torch.tensor([0, 1]), None, torch.tensor([2, 3])),
], ids=repr)
def test_indexing_through_aten_is_cpythons_indexing(index):
    x = torch.randn(4, 5, 6)
    assert torch.equal(_getitem(x, index), x[index])
    expected, got = x.clone(), x.clone()
    value = torch.randn(x[index].shape)
    expected[index] = value
    _setitem(got, index, value)
    assert torch.equal(got, expected)
    expected[index] = 3.0
    _setitem(got, index, 3.0)
    assert torch.equal(got, expected)


def test_probes_from_inside_a_compile():
    """The pipeline probes from a Dynamo backend (Torch IR, under Dynamo's tracing context) and from
    AOTAutograd's graphs (Aten IR, their inputs fakes of the compile's own mode)."""
    from torch._dynamo.backends.common import aot_autograd

    def fn(x, w):
        return torch.relu(x @ w)[:, :4].sin()

    got = []

    def probe_torch(gm, example_inputs):
        got.append(count_launches(gm, example_inputs, dialect="torch"))
        return gm.forward

    def probe_aten(gm, example_inputs):
        got.append(count_launches(gm, example_inputs, dialect="aten"))
        return gm.forward

    x, w = torch.randn(8, 8), torch.randn(8, 8)
    torch.compile(fn, backend=probe_torch)(x, w)
    torch._dynamo.reset()
    torch.compile(fn, backend=aot_autograd(fw_compiler=probe_aten))(x, w)
    assert [(g.generated, g.extern) for g in got] == [(1, 1), (1, 1)]


def test_failures_are_probe_errors():
    x = torch.randn(4, 4)
    undecomposed = make_fx(lambda x: torch.zeros_like(x) + x)(x)  # Inductor lowers no raw zeros_like
    with pytest.raises(ProbeError, match="zeros_like"):
        count_launches(undecomposed, [x])
    with pytest.raises(ProbeError, match="dialect"):
        count_launches(aten_graph(torch.sin, x), [x], dialect="python")
    with pytest.raises(ProbeError, match="device"):
        count_launches(aten_graph(torch.sin, x), [x], device="mps")
    assert not available("mps") and available("cpu")  # the CPU probe generates C++ source: always here


def _global_state():
    return (inductor_config.save_config_portable(), functorch_config.save_config_portable(),
            {k: dict(v) for k, v in counters.items()},
            {k: v for k, v in vars(metrics).items() if isinstance(v, (int, float))},
            len(metrics.nodes_num_elem), torch._guards.TracingContext.try_get())


def test_a_probe_changes_nothing_global_nor_its_graph():
    """Counters, metrics and settings are as they were; so are the graph, its inputs and Dynamo's cache."""
    seen = []

    def counting_backend(gm, example_inputs):
        seen.append(gm)
        return gm.forward

    compiled = torch.compile(lambda x: x.cos() + 1, backend=counting_backend)
    compiled(torch.randn(8))
    x = torch.randn(32, 64)
    fn = lambda x: torch.relu(x @ x.t()).sum(0) + torch.zeros_like(x[0, :32])  # noqa: E731
    gm, inputs = dynamo_graph(fn, x)
    aten = aten_graph(fn, x)
    code, aten_code = gm.code, aten.code
    counters["inductor"]["marker"] += 1
    before = _global_state()
    count_launches(gm, inputs, dialect="torch")
    count_launches(aten, [x])
    assert _global_state() == before
    assert (gm.code, aten.code) == (code, aten_code)
    assert inputs[0].device.type == "cpu" and not isinstance(inputs[0], torch._subclasses.FakeTensor)
    compiled(torch.randn(8))  # Dynamo's cache still holds the graph compiled before
    assert len(seen) == 1


_REGISTRY_CHECK = """
import torch
from torch._inductor.fx_passes import joint_graph, post_grad
from eqsat_torch.inductor.probe import count_launches
def registered():
    return [sum(len(v) for v in p.patterns.values()) for p in (joint_graph.patterns, *post_grad.pass_patterns)]
joint_graph.lazy_init(None)  # what any compile on this machine registers
post_grad.lazy_init()
before = registered()
got = []
torch.compile(torch.sin, backend=lambda gm, ex: got.append((gm, ex)) or gm.forward)(torch.randn(4))
count_launches(*got[0], dialect="torch")
assert registered() == before, (before, registered())
"""


@pytest.mark.slow  # a fresh process: about 8 s
def test_a_probe_registers_no_cuda_only_pattern():
    """Inductor registers its patterns once per process and device; registered for cuda, the
    cuda-only ones would join every later compile. Checked in a fresh process: registration is once."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _REGISTRY_CHECK], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_installed_custom_passes_do_not_run_in_a_probe():
    """eqsat's post-grad pass calls the probe: a probe that ran it would recurse."""
    ran = []
    x = torch.randn(8, 8)
    gm, inputs = dynamo_graph(torch.sin, x)
    passes = {name: (lambda graph, name=name: ran.append(name)) for name in
              ("post_grad_custom_pre_pass", "post_grad_custom_post_pass", "joint_custom_pre_pass",
               "joint_custom_post_pass", "pre_grad_custom_pass")}
    with inductor_config.patch(passes):
        count_launches(gm, inputs, dialect="torch")
    assert ran == []


def test_under_freezing_what_only_parameters_feed_launches_nothing():
    """q/k/v as one matmul of a weight cat: the cat is a kernel, unless Inductor's ``freezing`` folds
    it into a constant (an H200 compile with freezing launched the matmul and the bias add only)."""
    x = torch.randn(16, 32)
    wq, wk, bq, bk = (torch.nn.Parameter(torch.randn(*s)) for s in ((24, 32), (24, 32), (24,), (24,)))

    def fused(x, wq, wk, bq, bk):
        return torch.relu(F.linear(x, torch.cat([wq, wk]), torch.cat([bq, bk])))

    gm, inputs = dynamo_graph(fused, x, wq, wk, bq, bk)
    live = count_launches(gm, inputs, dialect="torch")
    folded = count_launches(gm, inputs, dialect="torch", frozen=True)
    assert (folded.generated, folded.extern) == (1, 1)          # relu(mm + bias): the mm and one kernel
    assert live.total > folded.total                              # the weight cat is launched when live
    plain = [t.detach() for t in inputs]                          # activations, not parameters: nothing folds
    assert count_launches(gm, plain, dialect="torch", frozen=True) == live


def test_under_freezing_inductor_concatenates_linears_of_one_input_itself():
    """Issue 42 (Llama with freezing: eqsat 27 launches, Inductor 25 on an H100): Inductor's freezing
    patterns turn 2 or 3 matmuls of one input and constant weights into one matmul of the concatenated
    weights (after ``freeze``'s CSE of the inputs' views). The probe did not run them, so it counted
    Inductor alone 3 matmuls (q/k/v) where it makes 1, and eqsat's batched q/k/v looked 2 launches
    better than the input in every Llama layer."""
    x = torch.randn(2, 16, 32)
    wq, wk, wv = (torch.nn.Parameter(torch.randn(32, 32)) for _ in range(3))

    def qkv(x, wq, wk, wv):
        return F.linear(x, wq).relu(), F.linear(x, wk).sigmoid(), F.linear(x, wv).tanh()

    gm, inputs = dynamo_graph(qkv, x, wq, wk, wv)
    assert count_launches(gm, inputs, dialect="torch").extern == 3
    assert count_launches(gm, inputs, dialect="torch", frozen=True).extern == 1


@pytest.mark.parametrize("shape", [(), (4,)])
def test_under_freezing_a_small_constant_is_inlined_as_inductor_inlines_it(shape):
    """Gemma-2 scales its embeddings by a 0-d tensor: under freezing Inductor reads a 0-d (or short
    1-d) constant's values and inlines them (``GraphLowering.get_attr``); the probe's constants are
    fake, so every frozen Gemma-2 probe failed and the combo-kernel decision fell back to off
    (27 launches against Inductor + combo's 26 on an H100)."""
    x = torch.randn(16, 4)
    scale = torch.nn.Parameter(torch.full(shape, 2.0))

    def scaled(x, scale):
        return (x * scale).relu()

    gm, inputs = dynamo_graph(scaled, x, scale)
    folded = count_launches(gm, inputs, dialect="torch", frozen=True)
    assert (folded.generated, folded.extern) == (1, 0)              # one kernel, the scale inlined
    assert folded.total == count_launches(gm, inputs, dialect="torch").total
