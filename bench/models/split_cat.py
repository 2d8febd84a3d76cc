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


class SplitCatTwoStage(nn.Module):
    """split into one-wide pieces → sigmoid·2 → cat, then split into four-wide pieces → tanh+1 → cat:
    two split-cat stages back to back, each one kernel per piece for Inductor alone."""

    def __init__(self, pieces: int):
        super().__init__()
        if pieces % 4:
            raise ValueError(f"the second stage splits into four-wide pieces: {pieces} pieces is not a multiple of 4")
        self.pieces = pieces

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        first = torch.cat([torch.sigmoid(p) * 2 for p in torch.split(x, 1, dim=1)], dim=1)
        return torch.cat([torch.tanh(q) + 1 for q in torch.split(first, 4, dim=1)], dim=1)


def build_split_cat_two_stage(size: str | int = "small", device="cpu", dtype=torch.float32):
    """A name keeps 64 pieces and sets the rows; an int sets the piece count (issue 30: 4,096, so
    1,024 four-wide pieces in the second stage) at 256 rows."""
    gen = seeded(13)
    pieces = size if isinstance(size, int) else 64
    rows = 256 if isinstance(size, int) else pick(size, tiny=4, small=256, medium=4096, large=65536)
    return finish(SplitCatTwoStage(pieces), (randn(gen, rows, pieces, device=device, dtype=dtype),), device, dtype)


class UnequalLinears(nn.Module):
    """Optimus' group-linear test module (MyModule4 of torch's test_group_batch_fusion.py): ten linears
    of unequal widths (z - i % 5), with bias, all on one input; their outputs concatenated, split into
    z-wide pieces stacked along the batch, through ten more such linears, concatenated, sigmoid."""

    def __init__(self, z: int = 10, n: int = 10):
        super().__init__()
        self.z = z
        self.first = nn.ModuleList(nn.Linear(z, z - i % 5) for i in range(n))
        self.second = nn.ModuleList(nn.Linear(z, z - i % 5) for i in range(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + 1.2
        wide = torch.cat([linear(x) for linear in self.first], dim=1)
        tall = torch.cat(torch.split(wide, self.z, dim=1))
        return torch.sigmoid(torch.cat([linear(tall) for linear in self.second], dim=1))


def build_ten_unequal_linears(size: str | int = "small", device="cpu", dtype=torch.float32):
    """size = rows of the input (Optimus' test uses z = 10 rows of width z = 10)."""
    gen = seeded(14)
    rows = pick(size, tiny=4, small=64, medium=512, large=4096)
    return finish(UnequalLinears(), (randn(gen, rows, 10, device=device, dtype=dtype),), device, dtype)
