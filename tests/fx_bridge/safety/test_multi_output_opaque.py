"""An opaque op whose tuple holds Nones or ints next to tensors (``native_layer_norm_backward``
with a masked gradient, SDPA's seeds) stays one opaque term read with ``getitem``; the rest of the
graph is optimized instead of the whole graph being skipped."""
import torch

from eqsat_torch import optimize


def test_tuple_with_none_entries_is_read_piecewise_and_the_rest_optimized():
    def f(g, x, w, b):
        grads = torch.ops.aten.native_layer_norm_backward.default(
            g, x, [8], x.mean(-1, keepdim=True), x.std(-1, keepdim=True), w, b, [True, False, True])
        pieces = grads[0].split(2, 1)
        return torch.cat([pieces[i].relu() for i in range(4)], 1), grads[2]

    args = [torch.randn(4, 8), torch.randn(4, 8), torch.randn(8), torch.randn(8)]
    gm = torch.fx.symbolic_trace(f)
    new, report = optimize(gm, args)
    assert report.changed and not report.skipped and report.rules_used, report.summary()
    torch.testing.assert_close(new(*args), f(*args))
