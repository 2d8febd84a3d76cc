"""Random Torch-IR FX graphs drawn from the op table: for property tests, calibration and scaling.

A graph is grown op by op from a pool of live values, so it has fan-out, multi-output ops (split,
chunk, unbind, sort), opaque ops, views, reductions, matmuls and split/cat tangles. Every op is
spelled the way Dynamo spells it (functions, methods, operators, negative dims), so the generator
also exercises lowering's normalisation. ``rng`` is any ``random.Random`` (hypothesis' ``randoms()``
shrinks through it).

On request (``features=Features(...)``; off by default, so existing callers draw the same graphs) the
graph also has what the trust issues found missing: inputs with layouts (transposed, channels_last,
expanded with stride 0, sliced with a storage offset), a grad-mode region (``no_grad``,
``enable_grad``, ``inference_mode``) around a run of ops, spelled as Dynamo records it, and in-place
ops on inputs and views of inputs (``zero_``, ``mul_``, ``add_``, ``copy_``, ``fill_``, ``x[i] = c``)
followed by split/cat/stack/unbind of what they wrote, and an autocast region around a run of ops
(``autocast_region``), maybe with a nested ``enabled=False`` region as Hugging Face's rotary code has;
``as_function`` turns those into ``with torch.autocast(...)`` blocks, the source Dynamo sees from a
user. What was drawn is in ``gm.meta["features"]``.

The op draws are in ``bench.graphgen_ops``, the feature draws in ``bench.graphgen_features``,
``as_function`` in ``bench.graphgen_source``; this module grows a graph from them.
"""
from __future__ import annotations

import random

import torch
import torch.fx as fx

from bench.graphgen_features import _FeatureDraws
from bench.graphgen_ops import FLOAT_DTYPES, Features, _OpDraws


class _Builder(_FeatureDraws, _OpDraws):
    """Grows one random graph: the plain op draws and, with ``Features``, the feature draws."""


def with_layout(t: torch.Tensor, layout: str, rng: random.Random) -> torch.Tensor:
    """``t``'s values in ``layout`` (one of ``LAYOUTS``), for inputs drawn outside ``random_graph``."""
    return _Builder(rng, t.dtype, 0).with_layout(t, layout)


def copy_with_layout(t: torch.Tensor, device: str | torch.device | None = None) -> torch.Tensor:
    """A copy of ``t`` with its sizes, strides and storage offset (``clone`` makes an expanded or
    sliced tensor contiguous), in its own storage, on ``device``: a leaf, ready for ``requires_grad_``."""
    n = t.untyped_storage().nbytes() // t.element_size()
    flat = torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage(), 0, (n,), (1,))
    flat = flat.to(device or t.device, copy=True)
    return torch.empty(0, dtype=t.dtype, device=flat.device).set_(flat.untyped_storage(), t.storage_offset(),
                                                                  t.shape, t.stride())


def random_graph(rng: random.Random, n_ops: int = 8, dtype: torch.dtype | None = None,
                 n_inputs: int | None = None, features: Features | None = None,
                 ) -> tuple[fx.GraphModule, list[torch.Tensor]]:
    """A random graph of about ``n_ops`` ops and real inputs for it (see ``Features`` for more)."""
    dtype = dtype or rng.choice(FLOAT_DTYPES + (torch.int64,))
    b = _Builder(rng, dtype, n_inputs or rng.randint(1, 3), features)
    region = features.grad_region if features is not None else None
    if region is not None:
        start = rng.randrange(n_ops)
        stop = rng.randint(start + 1, n_ops)
    autocast = features.autocast_region if features is not None else None
    spans = []  # autocast regions as [enter before op i, exit after op j - 1), outer first
    if autocast is not None:
        a = rng.randrange(n_ops)
        spans.append((a, rng.randint(a + 1, n_ops)))
        if rng.random() < features.autocast_off_inside:  # nested, as a ``with`` block must be
            a = rng.randint(spans[0][0], spans[0][1] - 1)
            spans.append((a, rng.randint(a + 1, spans[0][1])))
    for i in range(n_ops):
        for k, (a, _) in enumerate(spans):
            if i == a:
                b.enter_autocast(autocast[0], autocast[1], enabled=k == 0)
        if region is not None and i == start:
            b.enter_region(region)
        if features is not None and b.region != "inference_mode" and rng.random() < features.inplace:
            b.inplace()
        elif features is not None and features.split_linear and rng.random() < features.split_linear:
            b.split_linear()
        else:
            getattr(b, rng.choice(_Builder.OPS))()
        if region is not None and i == stop - 1:
            b.exit_region()
        for _, z in reversed(spans):
            if i == z - 1:
                b.exit_autocast()
    outs = {id(v.node): v.node for v in rng.sample(b.pool, min(len(b.pool), rng.randint(1, 3)))}
    outs[id(b.pool[-1].node)] = b.pool[-1].node
    b.graph.output(tuple(outs.values()))
    gm = fx.GraphModule(torch.nn.Module(), b.graph)
    if features is not None:
        gm.meta["features"] = {"layouts": [k for k in b.layouts if k != "contiguous"],
                               "grad_region": region, "inplace": b.inplace_ops,
                               "autocast_region": None if autocast is None else
                               f"{autocast[0]}:{str(autocast[1]).split('.')[-1]}" + ("+off" if len(spans) > 1 else "")}
    return gm, b.inputs
