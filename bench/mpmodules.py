"""Random ``nn.Module``s for mixed-precision training steps: ``Linear``/``LayerNorm`` groups on split
pieces of the input (different widths or equal ones, own weights or slices of one shared weight), as
issue 41's probe wrote them, maybe with a rotary-style block under ``torch.autocast(enabled=False)``
(Hugging Face's rotary embeddings), a ``no_grad`` region and an in-place write. ``describe`` says what
was drawn, for the soak's record."""
from __future__ import annotations

import random

import torch
import torch.nn as nn
import torch.nn.functional as F


class SplitGroups(nn.Module):
    """Pieces of the last dim, each through its own ``Linear`` (and ``LayerNorm``), put together again."""

    def __init__(self, rng: random.Random, device_type: str, autocast: torch.dtype | None = None):
        super().__init__()
        self.autocast = autocast  # the body runs in ``torch.autocast(device_type, autocast)`` when set
        n = rng.randint(2, 4)
        self.widths = [rng.choice((4, 8))] * n if rng.random() < 0.4 else [rng.randint(2, 12) for _ in range(n)]
        outs = [2 * rng.randint(1, 6) for _ in range(n)]
        self.shared = rng.random() < 0.3 and len(set(self.widths)) == 1
        if self.shared:  # F.linear(piece, w[:, a:b]): one weight, sliced per piece (the program)
            self.weight = nn.Parameter(torch.randn(outs[0], sum(self.widths)) / sum(self.widths) ** 0.5)
            outs = [outs[0]] * n
        else:
            self.linears = nn.ModuleList(nn.Linear(w, o, bias=rng.random() < 0.7) for w, o in zip(self.widths, outs))
        self.norms = nn.ModuleList(nn.LayerNorm(o) if rng.random() < 0.5 else nn.Identity() for o in outs)
        self.width = sum(outs)
        self.final_norm = nn.LayerNorm(self.width) if rng.random() < 0.4 else None
        self.device_type = device_type
        self.rotary = rng.random() < 0.4
        if self.rotary:
            self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, self.width, 2).float() / self.width))
        self.no_grad_scale = rng.random() < 0.25
        self.inplace = rng.random() < 0.25
        self.act = rng.choice(("gelu", "silu", "none"))

    def forward(self, x):
        if self.autocast is None:
            return self.body(x)
        with torch.autocast(self.device_type, dtype=self.autocast):
            return self.body(x)

    def body(self, x):
        pieces = torch.split(x, self.widths, dim=-1)
        if self.shared:
            ys, a = [], 0
            for p, w in zip(pieces, self.widths):
                ys.append(F.linear(p, self.weight[:, a:a + w]))
                a += w
        else:
            ys = [lin(p) for lin, p in zip(self.linears, pieces)]
        y = torch.cat([norm(v) for norm, v in zip(self.norms, ys)], dim=-1)
        if self.act == "gelu":
            y = F.gelu(y)
        elif self.act == "silu":
            y = F.silu(y)
        if self.no_grad_scale:
            with torch.no_grad():
                s = y.abs().amax() + 1
            y = y / s
        if self.inplace:
            y = y.clone()
            y[..., 0] = 0.5
        if self.rotary:
            positions = torch.arange(x.shape[-2], device=x.device)
            with torch.autocast(self.device_type, enabled=False):
                freqs = (self.inv_freq[:, None].float() @ positions[None, :].float()).t()
                emb = torch.cat((freqs, freqs), dim=-1)
                cos, sin = emb.cos(), emb.sin()
            half = y.shape[-1] // 2
            rotated = torch.cat((-y[..., half:], y[..., :half]), dim=-1)
            y = y * cos + rotated * sin
        if self.final_norm is not None:
            y = self.final_norm(y)
        return y, ys[-1]

    def describe(self) -> str:
        parts = [f"autocast({self.device_type}, {self.autocast}) around the body"] if self.autocast else []
        parts += [f"widths {self.widths}", "one sliced weight" if self.shared else "Linear each",
                 f"{sum(isinstance(m, nn.LayerNorm) for m in self.norms)} LayerNorm"]
        parts += [k for k, on in (("final LayerNorm", self.final_norm is not None), (self.act, self.act != "none"),
                                  ("rotary under autocast(enabled=False)", self.rotary),
                                  ("no_grad region", self.no_grad_scale), ("in-place write", self.inplace)) if on]
        return ", ".join(parts)


def random_module(rng: random.Random, device_type: str = "cpu", autocast: torch.dtype | None = None,
                  ) -> tuple[SplitGroups, list[torch.Tensor]]:
    """A module (its body under ``autocast`` if given) and its input, (batch, seq, width) or (batch, width)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(rng.randint(0, 2**31))
        m = SplitGroups(rng, device_type, autocast)
        shape = (rng.randint(1, 3), rng.randint(2, 6), sum(m.widths)) if m.rotary or rng.random() < 0.5 \
            else (rng.randint(2, 6), sum(m.widths))
        x = torch.randn(shape)
    return m, [x]
