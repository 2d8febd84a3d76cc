"""The backend never breaks a compile: failures of ours fall back to the original graph."""
import pytest
import torch

from eqsat.rule import Rule
from eqsat.rulelang import TENSOR, Call, Var, rule, union
from eqsat_torch import eqsat_backend
from eqsat_rules import RuleError


def _f(x):
    return torch.cat(torch.split(x.relu(), 2, dim=1), dim=1) * 3


_e, _x = Var("e", TENSOR), Var("x", TENSOR)
BROKEN = Rule("broken", "algebra", "refers to a constructor that does not exist",
              (rule(_e == Call("NoSuchOp", (_x,), TENSOR)).then(union(_e, _x)),))


def test_broken_rule_is_refused_when_the_backend_is_built():
    with pytest.raises(RuleError, match="broken"):
        eqsat_backend(extra_rules=[BROKEN], inner="eager")


def test_internal_error_falls_back_with_a_warning(eqsat_log, monkeypatch):
    from eqsat import driver

    def broken(*args, **kwargs):
        raise RuntimeError("broken extractor")

    monkeypatch.setattr(driver, "extract", broken)
    x = torch.randn(4, 8)
    backend = eqsat_backend(inner="eager")
    out = torch.compile(_f, backend=backend)(x)
    torch.testing.assert_close(out, _f(x))
    assert "internal error" in backend.reports[0].skipped and "broken" in backend.reports[0].skipped
    assert backend.reports[0].fallback == "internal error"
    assert any("keeping the original graph" in r.message for r in eqsat_log.records)


def test_mutation_is_skipped_with_a_reason(eqsat_log):
    def g(x):
        x.add_(1)  # the caller's tensor: this write must stay
        return x.relu()

    x = torch.randn(3, 4)
    backend = eqsat_backend(inner="eager")
    torch.testing.assert_close(torch.compile(g, backend=backend)(x.clone()), g(x.clone()))
    assert "mutation" in backend.reports[0].skipped
    assert any("skipped" in r.message for r in eqsat_log.records)


def test_sizes_beyond_the_symbolic_encoding_are_skipped_not_broken():
    """Four distinct symbolic dims: more atoms than ``eqsat.sizes`` encodes; the graph is kept."""
    def g(x, y):
        return _f(x).sum() + y.relu().sum()

    x, y = torch.randn(5, 8), torch.randn(6, 7)
    backend = eqsat_backend(inner="eager")
    compiled = torch.compile(g, backend=backend, dynamic=True)
    torch.testing.assert_close(compiled(x, y), g(x, y))
    assert backend.reports[0].skipped.startswith("symbolic size: more than 3"), backend.reports[0].skipped


def test_validation_mode_reports_ok():
    x = torch.randn(4, 8)
    backend = eqsat_backend(inner="eager", validate=True, always_raise=True)
    torch.testing.assert_close(torch.compile(_f, backend=backend)(x), _f(x))
    assert backend.reports[0].validated == "ok"


def _inner_failing(calls: list, failures: int):
    """An inner compiler that raises on its first ``failures`` graphs (soak seeds 4001067 and 4001539
    on the H200: torch 2.11's AOTAutograd rejects the optimized graph and the original alike)."""
    def inner(self, opts, allowance, inductor, gm, combo_decides=False):
        def compile_(gm, example_inputs):
            calls.append(gm)
            if len(calls) <= failures:
                raise RuntimeError("element 1 of tensors does not require grad and does not have a grad_fn")
            return gm.forward
        return compile_
    return inner


def test_inductor_failing_on_the_optimized_graph_alone_is_ours(monkeypatch):
    from eqsat_torch.backend import EqsatBackend

    calls: list = []
    monkeypatch.setattr(EqsatBackend, "_inner", _inner_failing(calls, failures=1))
    x = torch.randn(4, 8)
    backend = eqsat_backend(inner="eager")
    torch.testing.assert_close(torch.compile(_f, backend=backend)(x), _f(x))
    assert len(calls) == 2 and calls[0] is not calls[1]  # the optimized graph, then the original
    assert backend.reports[0].fallback == "internal error", backend.reports[0].skipped
    assert not backend.reports[0].changed


def test_inductor_failing_on_the_original_too_is_not_an_internal_error(monkeypatch):
    """The user's graph fails the same compile: the error is the compiler's, raised as Inductor
    alone would raise it, and the report does not charge it to eqsat."""
    from eqsat_torch.backend import EqsatBackend

    calls: list = []
    monkeypatch.setattr(EqsatBackend, "_inner", _inner_failing(calls, failures=2))
    backend = eqsat_backend(inner="eager")
    with pytest.raises(Exception, match="does not require grad"):
        torch.compile(_f, backend=backend)(torch.randn(4, 8))
    assert len(calls) == 2
    report = backend.reports[0]
    assert report.fallback == "skipped" and report.skipped.startswith("inductor fails on the original graph too")
