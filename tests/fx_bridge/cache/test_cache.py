"""The persistent cache through the backend: a second compile reuses the stored graph, anything the
result depends on misses, and an entry that cannot be trusted is recomputed."""
import logging
import shutil

import pytest
import torch

from eqsat_torch import pipeline
from eqsat_torch.inductor import compat
from eqsat_torch.backend import eqsat_backend
from eqsat_rules.dsl import relu, rewrite, sigmoid, tensor


def split_sigmoid_cat(x):
    return torch.cat([torch.sigmoid(p) for p in torch.split(x, 4, dim=1)], dim=1)


def split_relu_cat(x):
    return torch.cat([torch.relu(p) for p in torch.split(x, 4, dim=1)], dim=1)


def compile_once(fn, x, **options):
    """One fresh compile (Dynamo forgets the last), the optimized graph run eagerly; the report."""
    compat.reset_dynamo()
    b = eqsat_backend(inner="eager", **options)
    torch.testing.assert_close(torch.compile(fn, backend=b)(x), fn(x))
    (report,) = b.reports
    return report


def entries(cache_dir):
    return sorted(cache_dir.glob("*.entry"))


def test_a_second_compile_hits_and_skips_the_optimizer(cache_dir, monkeypatch):
    x = torch.randn(8, 16)
    cold = compile_once(split_sigmoid_cat, x)
    assert cold.cache == "miss" and cold.changed and len(entries(cache_dir)) == 1

    def boom(*args, **kwargs):
        raise AssertionError("the optimizer ran on a cache hit")

    monkeypatch.setattr(pipeline, "optimize", boom)
    warm = compile_once(split_sigmoid_cat, x)  # same outputs as eager (checked inside)
    assert warm.cache == "hit" and warm.changed
    assert warm.rules_fired == cold.rules_fired and warm.kernels_after == cold.kernels_after
    assert set(warm.phase_seconds) == {"cache"}


def test_the_hit_is_the_optimized_graph(cache_dir):
    x = torch.randn(8, 16)
    graphs = []

    def keep(gm, example_inputs):
        graphs.append(gm.code)
        return gm.forward

    for _ in range(2):
        compat.reset_dynamo()
        b = eqsat_backend()
        b._inner = lambda *a, **k: keep
        torch.compile(split_sigmoid_cat, backend=b)(x)
    assert [r.cache for r in b.reports] == ["hit"]
    assert graphs[0] == graphs[1] and "split" not in graphs[1]  # the split is gone in both


U = tensor("u")
RULE_A = rewrite("relu_sigmoid_user", relu(sigmoid(U)), sigmoid(U))
RULE_B = rewrite("relu_sigmoid_user", relu(relu(U)), relu(U))  # same name, other content


@pytest.mark.parametrize("change", ["rule", "option", "strides", "dtype", "shape", "disabled rule", "requires_grad"])
def test_each_key_part_misses(cache_dir, change):
    x = torch.randn(8, 16)
    base = {"rule": {"extra_rules": [RULE_A]}}.get(change, {})
    assert compile_once(split_sigmoid_cat, x, **base).cache == "miss"
    assert compile_once(split_sigmoid_cat, x, **base).cache == "hit"
    variant = {
        "rule": ({"extra_rules": [RULE_B]}, x),
        "option": ({"iterations": 7}, x),
        "disabled rule": ({"disabled": ["algebra"]}, x),
        "strides": ({}, x.t().contiguous().t()),
        "dtype": ({}, x.double()),
        "shape": ({}, torch.randn(4, 16)),
        "requires_grad": ({}, x.clone().requires_grad_()),
    }[change]
    assert compile_once(split_sigmoid_cat, variant[1], **variant[0]).cache == "miss"
    assert len(entries(cache_dir)) == 2


def test_a_corrupt_entry_is_recomputed(cache_dir, caplog):
    x = torch.randn(8, 16)
    compile_once(split_sigmoid_cat, x)
    (path,) = entries(cache_dir)
    path.write_bytes(path.read_bytes()[:-50])  # truncated
    with caplog.at_level(logging.WARNING, logger="eqsat"):
        assert compile_once(split_sigmoid_cat, x).cache == "miss"
    assert "checksum" in caplog.text
    assert compile_once(split_sigmoid_cat, x).cache == "hit"  # overwritten with a whole entry


def test_a_foreign_entry_is_ignored(cache_dir, caplog):
    x = torch.randn(8, 16)
    compile_once(split_sigmoid_cat, x)
    (sigmoid_entry,) = entries(cache_dir)
    compile_once(split_relu_cat, x)
    (relu_entry,) = set(entries(cache_dir)) - {sigmoid_entry}
    shutil.copy(sigmoid_entry, relu_entry)  # a valid entry, under another key
    with caplog.at_level(logging.WARNING, logger="eqsat"):
        assert compile_once(split_relu_cat, x).cache == "miss"  # relu's outputs, not sigmoid's (checked)
    assert "another key" in caplog.text
    assert compile_once(split_relu_cat, x).cache == "hit"


def test_force_disable_caches_writes_nothing(cache_dir):
    import torch._inductor.config as inductor_config

    x = torch.randn(8, 16)
    with inductor_config.patch(force_disable_caches=True):
        assert compile_once(split_sigmoid_cat, x).cache == "off"
        assert compile_once(split_sigmoid_cat, x).cache == "off"
    assert not cache_dir.exists() or not entries(cache_dir)


def test_the_option_switches_it_off(cache_dir):
    x = torch.randn(8, 16)
    assert compile_once(split_sigmoid_cat, x, cache=False).cache == "off"
    assert not cache_dir.exists() or not entries(cache_dir)


def test_torchinductor_cache_dir_is_respected(tmp_path, monkeypatch):
    monkeypatch.setenv("EQSAT_CACHE", "1")
    for name in ("one", "two"):
        monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / name))
        assert compile_once(split_sigmoid_cat, torch.randn(8, 16)).cache == "miss"  # nothing in the new dir
        assert len(list((tmp_path / name / "eqsat").glob("*.entry"))) == 1


def test_a_symbolic_graph_hits_and_serves_every_size(cache_dir):
    reports = []
    for _ in range(2):
        compat.reset_dynamo()
        b = eqsat_backend(inner="eager")
        f = torch.compile(split_sigmoid_cat, backend=b, dynamic=True)
        for rows in (8, 5, 11):  # one graph, symbolic in the rows
            x = torch.randn(rows, 16)
            torch.testing.assert_close(f(x), split_sigmoid_cat(x))
        reports += b.reports
    assert [r.cache for r in reports] == ["miss", "hit"] and reports[1].changed


def test_a_broken_cache_never_breaks_a_compile(cache_dir, monkeypatch, caplog):
    import eqsat_torch.cache as cache

    def broken(*args, **kwargs):
        raise RuntimeError("a bug in the key")

    monkeypatch.setattr(cache, "graph_key", broken)
    with caplog.at_level(logging.WARNING, logger="eqsat"):
        report = compile_once(split_sigmoid_cat, torch.randn(8, 16))  # outputs vs eager inside
    assert report.cache == "off" and report.changed and "a bug in the key" in caplog.text


def test_a_key_the_budget_cannot_pay_for_is_not_computed(cache_dir, monkeypatch):
    """Hashing a graph for its key cannot stop (0.26 s at 8,196 nodes): where ``seconds=`` cannot
    pay for it the cache is left out, nothing is hashed, and the report says why."""
    from eqsat import budget
    from eqsat_torch import cache

    monkeypatch.setitem(budget.SECONDS_PER_NODE, "key", 1.0)
    monkeypatch.setattr(cache, "graph_key", lambda *a, **k: (_ for _ in ()).throw(AssertionError("hashed")))
    report = compile_once(split_sigmoid_cat, torch.randn(8, 16), seconds=5.0)
    assert report.cache == "off" and report.changed, report.summary()
    assert any(n.startswith("not cached: the key of ") for n in report.notes), report.notes
    assert not cache_dir.exists() or not entries(cache_dir)
