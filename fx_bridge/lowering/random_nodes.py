"""Random nodes: the ops that draw from the random stream (dropout in training, ``rand*``, …).

They are effectful: the lowerer keeps each one opaque and unique, and the pipeline refuses to
reorder or duplicate them.
"""
from __future__ import annotations

import torch

from eqsat_torch.inductor import compat
from eqsat_torch.lowering.node_values import _arg
from eqsat_torch.lowering.targets import canonical_name, target_label


RANDOM_NAMES = {
    "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout", "rand",
    "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm", "bernoulli", "multinomial",
    "normal", "poisson", "native_dropout",
}


def is_random(n: torch.fx.Node, name: str) -> bool:
    if name == "dropout":
        p = _arg(n.args, n.kwargs, 1, "p", 0.5)
        training = _arg(n.args, n.kwargs, 2, "training", n.op == "call_function")
        return bool(training) and p != 0
    return name in RANDOM_NAMES


def random_nodes(gm: torch.fx.GraphModule) -> set[torch.fx.Node]:
    """Nodes that draw from the random stream (dropout in training, rand*, bernoulli, ...)."""
    return {n for n in gm.graph.nodes if n.op in ("call_function", "call_method") and (
        compat.aten_is_random(n.target) or is_random(n, canonical_name(n) or "")
        or target_label(n).split(".")[-1] in RANDOM_NAMES)}
