"""Synthetic stand-ins for the recommendation models Optimus targets (DHEN, Wukong, Interformer, DLRM).

They reproduce the graph shapes that matter to the optimizers, not the papers' accuracy: many
same-shaped linears over split features (horizontal fusion), split/cat/stack glue (vertical), and
heterogeneous parallel arms joined by cat, residual and norm.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from bench.models.sizes import finish, pick, randn, seeded


def _batch(size: str | int) -> int:
    return pick(size, tiny=8, small=64, medium=512, large=2048) if isinstance(size, str) else 64


def _mlp(*widths: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    for a, b in zip(widths, widths[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


class _SelfAttention(nn.Module):
    """Single-head attention over feature tokens, written out so every op is visible to the optimizers."""

    def __init__(self, dim: int):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.scale = 1.0 / math.sqrt(dim)

    def forward(self, tokens: torch.Tensor, context: torch.Tensor | None = None) -> torch.Tensor:
        context = tokens if context is None else context
        scores = torch.bmm(self.q(tokens), self.k(context).transpose(1, 2)) * self.scale
        return torch.bmm(torch.softmax(scores, dim=-1), self.v(context))


class DHENLayer(nn.Module):
    """Dot, attention, DCN cross and linear modules in parallel on the same features; cat, residual, norm."""

    def __init__(self, features: int, dim: int):
        super().__init__()
        self.features, self.dim = features, dim
        width = features * dim
        self.per_feature = nn.ModuleList(nn.Linear(dim, dim) for _ in range(features))
        self.dot_proj = nn.Linear(features * features, width)
        self.attention = _SelfAttention(dim)
        self.cross = nn.Linear(width, width)
        self.linear = nn.Linear(width, width)
        self.ensemble = nn.Linear(4 * width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(x, self.dim, dim=1)
        tokens = torch.stack([lin(p) for lin, p in zip(self.per_feature, pieces)], dim=1)
        dot = self.dot_proj(torch.bmm(tokens, tokens.transpose(1, 2)).flatten(1))
        attention = self.attention(tokens).flatten(1)
        cross = x * self.cross(x) + x
        ensemble = torch.cat([dot, attention, cross, self.linear(x)], dim=1)
        return self.norm(self.ensemble(ensemble) + x)


class DHEN(nn.Module):
    def __init__(self, features: int, dim: int, layers: int):
        super().__init__()
        self.layers = nn.Sequential(*(DHENLayer(features, dim) for _ in range(layers)))
        self.head = _mlp(features * dim, 64, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.head(self.layers(x)))


def build_dhen(size: str | int = "small", device="cpu", dtype=torch.float32):
    """DHEN-like: size = number of feature groups (12 at "small": a dozen same-shaped linears)."""
    gen = seeded(1)
    features, dim = pick(size, tiny=4, small=12, medium=24, large=48), 16
    model = DHEN(features, dim, layers=2)
    return finish(model, (randn(gen, _batch(size), features * dim, device=device, dtype=dtype),), device, dtype)


class WukongLayer(nn.Module):
    """Factorization-machine block and linear-compression block in parallel; cat, residual, LayerNorm."""

    def __init__(self, n: int, dim: int):
        super().__init__()
        self.n_fm, self.dim = n // 2, dim
        self.fm_norm = nn.LayerNorm(n * n)
        self.fm_mlp = _mlp(n * n, 64, self.n_fm * dim)
        self.compress = nn.Linear(n, n - self.n_fm, bias=False)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        interactions = torch.bmm(x, x.transpose(1, 2)).flatten(1)
        fm = self.fm_mlp(self.fm_norm(interactions)).reshape(x.shape[0], self.n_fm, self.dim)
        lcb = self.compress(x.transpose(1, 2)).transpose(1, 2)
        return self.norm(torch.cat([fm, lcb], dim=1) + x)


class Wukong(nn.Module):
    def __init__(self, n: int, dim: int, layers: int):
        super().__init__()
        self.layers = nn.Sequential(*(WukongLayer(n, dim) for _ in range(layers)))
        self.head = _mlp(n * dim, 64, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.head(self.layers(x).flatten(1)))


def build_wukong(size: str | int = "small", device="cpu", dtype=torch.float32):
    """Wukong-like: size = number of embedding tokens per example; 4 stacked interaction layers."""
    gen = seeded(2)
    n, dim = pick(size, tiny=4, small=16, medium=32, large=64), 16
    model = Wukong(n, dim, layers=2 if size == "tiny" else 4)
    return finish(model, (randn(gen, _batch(size), n, dim, device=device, dtype=dtype),), device, dtype)


class InterformerLayer(nn.Module):
    """Interleaved arms: interaction over non-sequence tokens + sequence summary, sequence arm
    conditioned on the non-sequence summary, cross arm that gates and summarizes the sequence."""

    def __init__(self, features: int, dim: int, summary_tokens: int):
        super().__init__()
        self.interaction_cross = nn.Linear((features + summary_tokens) * dim, features * dim)
        self.interaction_norm = nn.LayerNorm(dim)
        self.condition = nn.Linear(dim, dim)
        self.seq_attention = _SelfAttention(dim)
        self.seq_ffn = _mlp(dim, 2 * dim, dim)
        self.seq_norm = nn.LayerNorm(dim)
        self.gate = nn.Linear(dim, dim)
        self.summary_queries = nn.Parameter(torch.randn(summary_tokens, dim) * 0.1)
        self.pma = _SelfAttention(dim)

    def summarize(self, seq: torch.Tensor) -> torch.Tensor:
        queries = self.summary_queries.expand(seq.shape[0], -1, -1)
        gated = torch.sigmoid(self.gate(seq)) * seq
        return self.pma(queries, gated)

    def forward(self, tokens: torch.Tensor, seq: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        summary = self.summarize(seq)
        both = torch.cat([tokens, summary], dim=1).flatten(1)
        cross = self.interaction_cross(both).view_as(tokens)
        tokens = self.interaction_norm(tokens * cross + tokens)
        seq = seq + torch.sigmoid(self.condition(tokens.mean(dim=1, keepdim=True))) * seq
        seq = seq + self.seq_attention(seq)
        seq = self.seq_norm(seq + self.seq_ffn(seq))
        return tokens, seq


class Interformer(nn.Module):
    def __init__(self, features: int, dim: int, layers: int, summary_tokens: int = 2):
        super().__init__()
        self.features = features
        self.per_feature = nn.ModuleList(nn.Linear(dim, dim) for _ in range(features))
        self.per_feature_norm = nn.ModuleList(nn.LayerNorm(dim) for _ in range(features))
        self.layers = nn.ModuleList(InterformerLayer(features, dim, summary_tokens) for _ in range(layers))
        self.head = _mlp((features + summary_tokens) * dim, 64, 1)

    def forward(self, dense: torch.Tensor, seq: torch.Tensor) -> torch.Tensor:
        features = torch.unbind(dense, dim=1)
        cleaned = [torch.clamp(torch.nan_to_num(f.detach(), nan=0.0), min=-10.0, max=10.0) for f in features]
        tokens = torch.stack(
            [norm(lin(f)) for lin, norm, f in zip(self.per_feature, self.per_feature_norm, cleaned)], dim=1
        )
        for layer in self.layers:
            tokens, seq = layer(tokens, seq)
        summary = self.layers[-1].summarize(seq)
        return torch.sigmoid(self.head(torch.cat([tokens, summary], dim=1).flatten(1)))


def build_interformer(size: str | int = "small", device="cpu", dtype=torch.float32):
    """Interformer-like: size = number of non-sequence features; sequence length 16, 2 layers."""
    gen = seeded(3)
    features, dim, seq_len = pick(size, tiny=4, small=16, medium=32, large=64), 16, 16
    model = Interformer(features, dim, layers=2)
    batch = _batch(size)
    inputs = (
        randn(gen, batch, features, dim, device=device, dtype=dtype),
        randn(gen, batch, seq_len, dim, device=device, dtype=dtype),
    )
    return finish(model, inputs, device, dtype)


class DLRM(nn.Module):
    """Embedding bags + bottom MLP, pairwise dot interaction, top MLP."""

    def __init__(self, tables: int, rows: int, dim: int, dense_in: int):
        super().__init__()
        self.bottom = _mlp(dense_in, 64, dim)
        self.embeddings = nn.ModuleList(nn.EmbeddingBag(rows, dim, mode="sum") for _ in range(tables))
        pairs = torch.tril_indices(tables + 1, tables + 1, offset=-1)
        self.register_buffer("pair_i", pairs[0], persistent=False)
        self.register_buffer("pair_j", pairs[1], persistent=False)
        self.top = _mlp(dim + pairs.shape[1], 64, 32, 1)

    def forward(self, dense: torch.Tensor, sparse: torch.Tensor) -> torch.Tensor:
        bottom = self.bottom(dense)
        pooled = [emb(ids) for emb, ids in zip(self.embeddings, torch.unbind(sparse, dim=1))]
        z = torch.stack([bottom, *pooled], dim=1)
        dots = torch.bmm(z, z.transpose(1, 2))[:, self.pair_i, self.pair_j]
        return torch.sigmoid(self.top(torch.cat([bottom, dots], dim=1)))


def build_dlrm(size: str | int = "small", device="cpu", dtype=torch.float32):
    """DLRM-like: size = number of embedding tables (bags of 4 ids each, 1000 rows, dim 16)."""
    gen = seeded(4)
    tables, rows, dim, dense_in, bag = pick(size, tiny=3, small=8, medium=26, large=64), 1000, 16, 13, 4
    model = DLRM(tables, rows, dim, dense_in)
    batch = _batch(size)
    sparse = torch.randint(0, rows, (batch, tables, bag), generator=gen).to(device)
    return finish(model, (randn(gen, batch, dense_in, device=device, dtype=dtype), sparse), device, dtype)


class RecsysTower(nn.Module):
    """Split features, a small MLP and gate per feature, cat, shared MLP."""

    def __init__(self, features: int, dim: int):
        super().__init__()
        self.dim = dim
        self.per_feature = nn.ModuleList(_mlp(dim, 2 * dim, dim) for _ in range(features))
        self.tower = _mlp(features * dim, 128, 32, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(x, self.dim, dim=1)
        encoded = [torch.sigmoid(mlp(p)) * p for mlp, p in zip(self.per_feature, pieces)]
        return self.tower(torch.cat(encoded, dim=1))


def build_recsys_tower(size: str | int = "small", device="cpu", dtype=torch.float32):
    """Recsys tower: size = number of split features."""
    gen = seeded(5)
    features, dim = pick(size, tiny=4, small=32, medium=128, large=512), 8
    model = RecsysTower(features, dim)
    return finish(model, (randn(gen, _batch(size), features * dim, device=device, dtype=dtype),), device, dtype)


class WideRecsys(nn.Module):
    """Optimus' production case in miniature: hundreds of sparse features, each with a tower of its own.

    Every feature's ids are pooled from one embedding table (offset per feature: one gather); the
    pooled row is split per feature, each piece gets a small tower and a sigmoid gate (hundreds of
    same-shaped linears: horizontal fusion), the gated pieces are glued by cat, split again into
    feature groups with a mixing linear each (split/cat glue: vertical), and a top MLP reads both.
    """

    def __init__(self, features: int, rows: int, dim: int, group: int):
        super().__init__()
        self.dim, self.group_width = dim, group * dim
        self.embedding = nn.EmbeddingBag(features * rows, dim, mode="sum")
        self.register_buffer("offsets", torch.arange(features) * rows, persistent=False)
        self.towers = nn.ModuleList(_mlp(dim, dim, dim) for _ in range(features))
        self.mix = nn.ModuleList(nn.Linear(self.group_width, dim) for _ in range(features // group))
        self.top = _mlp(features * dim + (features // group) * dim, 256, 64, 1)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        batch, features, bag = ids.shape
        flat = (ids + self.offsets[None, :, None]).reshape(batch * features, bag)
        pooled = self.embedding(flat).reshape(batch, features * self.dim)
        pieces = torch.split(pooled, self.dim, dim=1)
        wide = torch.cat([torch.sigmoid(tower(p)) * p for tower, p in zip(self.towers, pieces)], dim=1)
        groups = torch.split(wide, self.group_width, dim=1)
        mixed = torch.cat([torch.relu(mix(g)) for mix, g in zip(self.mix, groups)], dim=1)
        return torch.sigmoid(self.top(torch.cat([wide, mixed], dim=1)))


def build_wide_recsys(size: str | int = "small", device="cpu", dtype=torch.float32):
    """Wide recsys: size = number of sparse features (256 at "medium": thousands of Inductor kernels
    in training), 8 features per group, dim 16, bags of 4 ids from 100 rows per feature."""
    gen = seeded(6)
    features, rows, dim, bag = pick(size, tiny=8, small=64, medium=256, large=512), 100, 16, 4
    model = WideRecsys(features, rows, dim, group=8)
    ids = torch.randint(0, rows, (_batch(size), features, bag), generator=gen).to(device)
    return finish(model, (ids,), device, dtype)
