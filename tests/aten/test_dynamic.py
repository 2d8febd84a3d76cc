"""Dynamic shapes: ``dynamic=True`` and automatic-dynamic recompiles never raise and never give a wrong
result. Graphs with symbolic sizes are skipped with a log line naming the symbolic node."""
import torch

from fx_bridge import eqsat_backend

from aten_harness import compare_training, pass_backend


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x):
        a, b = x.split(8, 1)
        return self.fc(torch.cat([a.relu(), b], 1)).sigmoid()


def _net():
    torch.manual_seed(0)
    return Net()


def test_dynamic_true_is_skipped_with_a_reason(eqsat_log):
    net = _net()
    backend = eqsat_backend(inner="eager")
    x = torch.randn(5, 16)
    torch.testing.assert_close(torch.compile(net, backend=backend, dynamic=True)(x), net(x))
    (report,) = backend.reports
    assert report.skipped.startswith("symbolic shape")
    assert "symbolic shape" in eqsat_log.text


def test_automatic_dynamic_recompile():
    net = _net()
    backend = eqsat_backend(inner="eager")
    compiled = torch.compile(net, backend=backend)
    for batch in (4, 6, 9):
        x = torch.randn(batch, 16)
        torch.testing.assert_close(compiled(x), net(x))
    assert len(backend.reports) == 2
    assert not backend.reports[0].skipped and backend.reports[1].skipped.startswith("symbolic shape")


def test_post_grad_dynamic_training():
    backend, p = pass_backend()
    compare_training(_net(), (torch.randn(7, 16),), backend, dynamic=True)
    assert p.reports and all(r.skipped.startswith("symbolic shape") for r in p.reports)
