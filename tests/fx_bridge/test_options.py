"""eqsat's search option is ``search`` (``"saturate"`` / ``"greedy"``), so it never collides with
``torch.compile(mode=...)``, which stays Inductor's; the old spelling ``mode`` is refused by name."""
import pytest
import torch

from eqsat_torch.inductor import compat
from eqsat_torch.backend import eqsat_backend
from eqsat_torch.options import OptionError


def split_relu_cat(x):
    return torch.cat([p.relu() for p in torch.split(x, 4, 1)], 1)


def _greedy_fired(report) -> bool:
    """Greedy search runs one family at a time: split-cat's whole-program rule never sees the
    pointwise ops commuted out of the cat, so only the algebra rule fires (see test_backend)."""
    return "cat_unary" in report.rules_fired and "cat_split_all" not in report.rules_fired


def test_search_greedy_through_torch_compile_options():
    compat.reset_dynamo()
    backend = eqsat_backend(inner="eager")
    x = torch.randn(8, 16)
    f = torch.compile(split_relu_cat, backend=backend, options={"search": "greedy"})
    torch.testing.assert_close(f(x), split_relu_cat(x))
    (report,) = backend.reports
    assert _greedy_fired(report), report.summary()


@pytest.mark.parametrize("spell", [
    lambda: eqsat_backend(mode="greedy"),
    lambda: torch.compile(split_relu_cat, backend="eqsat", options={"mode": "greedy"})(torch.randn(8, 16)),
    lambda: torch.compile(split_relu_cat, backend="eqsat", mode="greedy")(torch.randn(8, 16)),
], ids=["eqsat_backend(mode=)", "options={'mode': ...}", "torch.compile(mode='greedy')"])
def test_the_old_spelling_names_the_new_one(spell):
    compat.reset_dynamo()
    with pytest.raises(Exception) as info:
        spell()
    assert "search" in str(info.value) and "'greedy'" in str(info.value), str(info.value)
    assert "Unrecognized mode" not in str(info.value)
    assert isinstance(info.value, OptionError) or isinstance(info.value.__cause__, OptionError) or \
        "OptionError" in str(info.value)


@pytest.mark.slow
def test_reduce_overhead_goes_to_inductor_with_greedy_search():
    """Both at once, as a user writes them: Inductor compiles (its mode), eqsat searches greedily."""
    compat.reset_dynamo()
    backend = eqsat_backend(search="greedy", post_grad=False)
    x = torch.randn(8, 16)
    f = torch.compile(split_relu_cat, backend=backend, mode="reduce-overhead")
    torch.testing.assert_close(f(x), split_relu_cat(x))
    (report,) = backend.reports
    assert _greedy_fired(report), report.summary()
