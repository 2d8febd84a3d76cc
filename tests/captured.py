"""The Torch-IR graph Dynamo hands a backend, captured for tests that price or probe it directly."""
from __future__ import annotations

import torch


def dynamo_graph(fn, *inputs):
    """(GraphModule, example inputs) of ``fn``'s one graph, as a backend receives them."""
    got = []
    torch.compile(fn, backend=lambda gm, ex: got.append((gm, list(ex))) or gm.forward, fullgraph=True)(*inputs)
    return got[0]
