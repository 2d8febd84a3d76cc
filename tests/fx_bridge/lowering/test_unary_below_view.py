"""A unary op on a reshape of a computed tensor is emitted before the reshape: the same values, in
the producer's iteration space, where Inductor fuses it into a norm's or reduction's kernel (H200:
batched layer norms + tanh, 4 forward kernels with the tanh after the reshape, 3 before)."""
import torch

from bench.models.parity import BatchedLayerNorms
from eqsat.cost import CostModel
from eqsat_torch.backend import optimize_or_keep
from eqsat_torch.pipeline import Options
from tests.optimized import assert_no_fallback, assert_optimized


def _is_reshape(node) -> bool:
    return node.target in (torch.reshape, "reshape", "view")


def _compile_capturing(model, train: bool, **options):
    graphs, reports = [], []

    def backend(gm, example_inputs):
        new, report = optimize_or_keep(gm, example_inputs, Options.of({"cost": CostModel.for_device("cuda"), **options}),
                                       False, train)
        graphs.append(new)
        reports.append(report)
        return new.forward

    return torch.compile(model, backend=backend), graphs, reports


def test_tanh_of_batched_layer_norms_runs_before_the_reshape_and_matches_eager():
    torch.manual_seed(0)
    model = BatchedLayerNorms()
    x = torch.randn(64, 128, requires_grad=True)
    compiled, graphs, reports = _compile_capturing(model, train=True)
    out = compiled(x)
    assert_optimized(reports[0], "batch_layernorm", "cat_unary")
    (tanh,) = [n for n in graphs[0].graph.nodes if n.target is torch.tanh]
    assert not _is_reshape(tanh.args[0]), graphs[0].code
    assert [_is_reshape(u) for u in tanh.users] == [True]

    x_ref = x.detach().clone().requires_grad_()
    expected = model(x_ref)
    torch.testing.assert_close(out, expected)
    out.sum().backward()
    grads = [x.grad] + [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    expected.sum().backward()
    torch.testing.assert_close(grads, [x_ref.grad] + [p.grad for p in model.parameters()])


def test_a_unary_on_a_reshaped_input_stays_where_it_is():
    """Nothing to fuse into: the reshape of a graph input is a view of the caller's tensor."""
    def f(x):
        return torch.tanh(x.reshape(4, 32)) + torch.sigmoid(x.reshape(8, 4, 4).reshape(2, 64)).sum()

    compiled, graphs, reports = _compile_capturing(f, train=False, always_raise=True)
    x = torch.randn(8, 16)
    torch.testing.assert_close(compiled(x), f(x))
    assert_no_fallback(reports[0])
    unary = [n for n in graphs[0].graph.nodes if n.target in (torch.tanh, torch.sigmoid)]
    assert len(unary) == 2 and all(_is_reshape(n.args[0]) for n in unary), graphs[0].code
