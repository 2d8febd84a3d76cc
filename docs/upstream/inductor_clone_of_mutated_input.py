"""Inductor returns a mutated input's own storage for ``x.clone()`` (torch 2.11 and 2.13, CPU and CUDA).

Eager returns a fresh tensor; the compiled function returns a tensor that *is* ``x``'s memory, so
writing to the output changes the input. AOTAutograd functionalizes ``x[:2] = 0; return x.clone()``
to ``s = slice_scatter(x, zeros, ...); copy_(x, s); return clone(s)``. Inductor's post-grad
``remove_noop_ops`` drops the clone (``s`` is no input's storage yet, so the "no new aliasing" check
passes), and reinplacing then writes ``s`` into ``x``: the output is ``x``.

eqsat's post-grad pass refuses any program of its own that returns a value copied back into an
input, or a copy of one (``fx_bridge/safety/aliasing.py``); this reproducer is for upstream.
Run: ``python docs/upstream/inductor_clone_of_mutated_input.py`` (add ``cuda`` for the GPU).
"""
import sys

import torch


def f(x):
    x[:2] = 0
    return x.clone()


def main(device: str = "cpu") -> None:
    torch._inductor.config.force_disable_caches = True
    x = torch.randn(4, 3, device=device)
    out = torch.compile(f)(x)
    shared = out.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    out.add_(100)
    print(f"torch {torch.__version__} {device}: output shares the input's storage: {shared}; "
          f"writing to the output changed the input: {bool((x > 50).any())}")


if __name__ == "__main__":
    main(*sys.argv[1:])
