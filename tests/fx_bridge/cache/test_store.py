"""Cache files: concurrent writers never leave a torn entry; post-grad graphs are cached too."""
import multiprocessing
import os

import torch
from functorch.compile import make_boxed_func

from eqsat_torch.inductor import compat
from eqsat_torch.cache import store
from eqsat_torch.options import Options
from eqsat_torch.inductor.post_grad import EqsatPostGradPass

KEY = "ab" * 32
PAYLOADS = [bytes([i]) * 1_000_000 for i in (1, 2)]  # large enough that a write takes many syscalls


def _write_and_read(cache_root: str, which: int, rounds: int, bad: multiprocessing.Value) -> None:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_root
    for _ in range(rounds):
        store.save(KEY, PAYLOADS[which])
        if store.load(KEY) not in PAYLOADS:
            with bad.get_lock():
                bad.value += 1


def test_concurrent_writers_never_tear_an_entry(cache_dir, tmp_path):
    ctx = multiprocessing.get_context("spawn")
    bad = ctx.Value("i", 0)
    root = os.environ["TORCHINDUCTOR_CACHE_DIR"]
    writers = [ctx.Process(target=_write_and_read, args=(root, i, 25, bad)) for i in (0, 1)]
    for w in writers:
        w.start()
    while any(w.is_alive() for w in writers):
        got = store.load(KEY)  # a reader in a third process, while both write
        assert got is None or got in PAYLOADS
    for w in writers:
        w.join()
        assert w.exitcode == 0
    assert bad.value == 0
    assert store.load(KEY) in PAYLOADS
    assert not list(cache_dir.glob("*.tmp")) and not list(cache_dir.glob(".*"))  # no temporaries left


def _split_relu_cat(x, w):
    return torch.cat([torch.relu(p) for p in torch.split(x @ w, 2, dim=1)], dim=1)


def _step(reports: list, x, w):
    """A training step through AOTAutograd with our post-grad pass (cached) on both graphs, no
    Inductor; the output and the gradients."""
    def compiler(gm, example_inputs):
        EqsatPostGradPass(Options(always_raise=True), reports=reports)(gm.graph)
        gm.recompile()
        return make_boxed_func(gm.forward)

    compat.reset_dynamo()
    x, w = x.detach().requires_grad_(), w.detach().requires_grad_()
    out = torch.compile(_split_relu_cat, backend=compat.aot_backend(compiler))(x, w)
    out.sum().backward()
    return out, x.grad, w.grad


def test_post_grad_graphs_are_cached(cache_dir):
    x, w = torch.randn(4, 16), torch.randn(16, 6)
    cold, warm = [], []
    _step(cold, x, w)
    assert [r.cache for r in cold] == ["miss", "miss"] and len(list(cache_dir.glob("*.entry"))) == 2
    got = _step(warm, x, w)
    assert [r.cache for r in warm] == ["hit", "hit"]
    xe, we = x.clone().requires_grad_(), w.clone().requires_grad_()
    want = _split_relu_cat(xe, we)
    want.sum().backward()
    torch.testing.assert_close(got, (want, xe.grad, we.grad))
