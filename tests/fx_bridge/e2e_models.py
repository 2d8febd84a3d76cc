"""Small real modules for end-to-end tests."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, d=16, h=32):
        super().__init__()
        self.fc1, self.fc2, self.norm = nn.Linear(d, h), nn.Linear(h, d), nn.LayerNorm(d)

    def forward(self, x):
        return self.norm(x + self.fc2(F.gelu(self.fc1(x))))


class Attention(nn.Module):
    def __init__(self, d=16, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = torch.softmax(q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, d)
        return self.out(y)


class SplitCat(nn.Module):
    """Many splits and cats: pieces mapped pointwise, re-joined, split again."""

    def __init__(self, d=32, pieces=8):
        super().__init__()
        self.pieces = pieces
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        parts = torch.split(x, x.shape[-1] // self.pieces, dim=-1)
        y = torch.cat([torch.relu(p) for p in parts], dim=-1)
        a, b = y.chunk(2, dim=1)
        z = torch.cat([a, b], 1)
        return self.fc(z).sigmoid() + torch.stack(z.unbind(0), 0)
