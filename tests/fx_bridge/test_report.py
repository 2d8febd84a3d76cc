"""The report says which fired rules the extracted program relies on."""
import torch

from eqsat_torch import eqsat_backend


def test_rules_used_names_the_rewrite_the_program_relies_on():
    def f(x):
        return torch.cat(torch.split(x, 2, dim=1), dim=1).sigmoid()

    backend = eqsat_backend(inner="eager", horizontal=False)
    x = torch.randn(4, 8)
    torch.testing.assert_close(torch.compile(f, backend=backend)(x), f(x))
    (report,) = backend.reports
    assert report.changed and "cat_split_all" in report.rules_used
    assert set(report.rules_used) <= set(report.rules_fired)


def test_rules_used_is_empty_when_the_input_is_kept():
    def g(x):
        return (x.relu() * 2).sum(-1)

    backend = eqsat_backend(inner="eager")
    x = torch.randn(4, 8)
    torch.testing.assert_close(torch.compile(g, backend=backend)(x), g(x))
    (report,) = backend.reports
    assert not report.changed and report.rules_used == {}
