"""In-place ops on intermediates nothing else observes are rewritten out-of-place, so the graph is
optimized instead of skipped; every other mutation still skips it."""
import pytest
import torch

from eqsat_torch import eqsat_backend


def _split_cat(t):
    return torch.cat([p.relu() for p in t.split(4, 1)], 1)  # a rewrite the optimizer always takes


def _run(f, *args, grads=True):
    xs = [a.clone().requires_grad_(grads and a.is_floating_point()) for a in args]
    ys = [a.clone().requires_grad_(grads and a.is_floating_point()) for a in args]
    backend = eqsat_backend(inner="eager", post_grad=False)
    out, want = torch.compile(f, backend=backend)(*xs), f(*ys)
    torch.testing.assert_close(out, want)
    if grads:
        w = torch.randn_like(want)
        (out * w).sum().backward()
        (want * w).sum().backward()
        for x, y in zip(xs, ys):
            if y.grad is not None:
                torch.testing.assert_close(x.grad, y.grad)
    return backend.reports[0]


def test_t5_style_plus_equals_on_an_intermediate_is_optimized():
    def block(x, bias):
        h = x * 2
        h += bias          # T5: relative_buckets += ...; BERT: embeddings += ...
        h *= 0.5
        return _split_cat(h)

    report = _run(block, torch.randn(4, 16), torch.randn(16))
    assert report.changed and not report.fallback and report.rules_used, report.summary()


def test_attention_mask_built_with_setitem_is_optimized():
    def f(x):
        mask = torch.ones(x.shape[0], x.shape[1])
        mask[:, -3:] = 0   # mask[:, -k:] = 0
        return _split_cat(x * mask)

    report = _run(f, torch.randn(4, 16))
    assert report.changed and not report.fallback, report.summary()


def test_accumulating_bmms_in_place_is_optimized():
    def f(a, b, c, d):
        out = torch.bmm(a, b)
        out += torch.bmm(c, d)
        return _split_cat(out.flatten(1))

    args = [torch.randn(2, 4, 4) for _ in range(4)]
    report = _run(f, *args)
    assert report.changed and not report.fallback, report.summary()


def test_in_place_keeps_the_dtype_of_its_target():
    def f(x, y):
        h = x.half() * 2
        h += y             # float32 operand: the in-place result stays float16
        return _split_cat(h.float())

    report = _run(f, torch.randn(4, 16), torch.randn(4, 16), grads=False)
    assert report.changed and not report.fallback, report.summary()


@pytest.mark.parametrize("name", ["input", "view_of_input", "alias_read_after", "base_read_after"])
def test_observable_mutations_still_skip_the_graph(name):
    def mutate_input(x):
        x.add_(1)
        return _split_cat(x)

    def mutate_view_of_input(x):
        v = x[:, :4]
        v.mul_(2)
        return _split_cat(x * 1)

    def alias_read_after(x):
        t = x * 2
        v = t[:, :4]
        t.add_(1)
        return _split_cat(t) + v.sum()

    def base_read_after(x):
        t = x * 2
        v = t[:, :8]
        v.add_(1)
        return _split_cat(t)

    f = {"input": mutate_input, "view_of_input": mutate_view_of_input,
         "alias_read_after": alias_read_after, "base_read_after": base_read_after}[name]
    x = torch.randn(4, 16)
    backend = eqsat_backend(inner="eager", post_grad=False)
    got = torch.compile(f, backend=backend)(x.clone())
    torch.testing.assert_close(got, f(x.clone()))
    report = backend.reports[0]
    assert report.fallback == "skipped" and "mutation" in report.skipped, report.summary()
