"""Vertical-pattern models: graphs that are mostly split / cat / stack / unbind glue around cheap ops.

These are where Inductor alone emits one kernel per piece, and where split-cat rewrites pay most.
"""

from __future__ import annotations

import torch
from torch import nn

from bench.models.sizes import finish, pick, randn, seeded


class SplitCat64(nn.Module):
    """64-way split, the same short pointwise chain on every piece (Optimus' split → op → cat)."""

    pieces = 64

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts = torch.split(x, x.shape[1] // self.pieces, dim=1)
        return torch.cat([torch.sigmoid(p * 0.5).relu() for p in parts], dim=1)


class SplitCatMixed(SplitCat64):
    """64-way split with a different op per piece (relu / sigmoid / scale in turn): no rewrite can
    turn it into one pointwise op, so it measures what the cat itself costs."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ops = (torch.relu, torch.sigmoid, lambda t: t * 0.5)
        parts = torch.split(x, x.shape[1] // self.pieces, dim=1)
        return torch.cat([ops[i % len(ops)](p) for i, p in enumerate(parts)], dim=1)


def _build_64(cls):
    def build(size: str | int = "small", device="cpu", dtype=torch.float32):
        """size = rows of the input; always 64 pieces of width 8."""
        gen = seeded(10)
        rows = pick(size, tiny=4, small=256, medium=4096, large=65536)
        x = randn(gen, rows, cls.pieces * 8, device=device, dtype=dtype)
        return finish(cls(), (x,), device, dtype)

    return build


build_split_cat_64 = _build_64(SplitCat64)
build_split_cat_mixed = _build_64(SplitCatMixed)


class SplitStackUnbindTangle(nn.Module):
    """unbind → stack → split → squeeze → cat → split → stack → unbind → cat: mostly a permutation
    of the input, hidden behind view/copy glue, with pointwise ops in between."""

    def __init__(self, tokens: int, dim: int):
        super().__init__()
        self.tokens, self.dim = tokens, dim
        self.scale = nn.Parameter(torch.linspace(0.5, 1.5, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch = x.shape[0]
        stacked = torch.stack(torch.unbind(x, dim=1), dim=1) * self.scale
        rows = [t.squeeze(1) for t in torch.split(torch.sigmoid(stacked), 1, dim=1)]
        flat = torch.cat(rows, dim=1)
        chunks = torch.stack(torch.split(flat, self.dim, dim=1), dim=0)
        mixed = torch.cat(torch.unbind(torch.tanh(chunks), dim=0), dim=-1)
        return mixed.view(batch, self.tokens, self.dim) + x


def build_split_stack_unbind(size: str | int = "small", device="cpu", dtype=torch.float32):
    """size = number of tokens (unbind/stack fan-out)."""
    gen = seeded(11)
    tokens, dim = pick(size, tiny=4, small=32, medium=128, large=512), 16
    x = randn(gen, 64 if size != "tiny" else 4, tokens, dim, device=device, dtype=dtype)
    return finish(SplitStackUnbindTangle(tokens, dim), (x,), device, dtype)


class Illustrative(nn.Module):
    """Hundreds to thousands of identical parallel branches joined by split/cat, in the spirit of
    TorchBench's `customized_optimus_illustrative`: split → Linear → LayerNorm → tanh → cat →
    split → sigmoid → stack → sum. Almost entirely horizontal: a handful of distinct op layers."""

    def __init__(self, branches: int, dim: int):
        super().__init__()
        self.dim = dim
        self.linears = nn.ModuleList(nn.Linear(dim, dim) for _ in range(branches))
        self.norms = nn.ModuleList(nn.LayerNorm(dim) for _ in range(branches))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(x, self.dim, dim=1)
        hidden = torch.cat([torch.tanh(n(l(p))) for l, n, p in zip(self.linears, self.norms, pieces)], dim=1)
        gated = torch.stack([torch.sigmoid(p) for p in torch.split(hidden, self.dim, dim=1)], dim=0)
        return gated.sum(dim=0)


def build_illustrative(size: str | int = "small", device="cpu", dtype=torch.float32):
    """size = branch count (64 at "small", 2000 at "large")."""
    gen = seeded(12)
    branches, dim = pick(size, tiny=4, small=64, medium=512, large=2000), 16
    x = randn(gen, 8 if size == "tiny" else 128, branches * dim, device=device, dtype=dtype)
    return finish(Illustrative(branches, dim), (x,), device, dtype)
