"""One size knob for every builder: a name picks a preset, an int sets the main width directly."""

from __future__ import annotations

import torch

SIZE_NAMES = ("tiny", "small", "medium", "large")


def pick(size: str | int, tiny: int, small: int, medium: int, large: int) -> int:
    """The model's main scale parameter (branch count, feature count, layers) for `size`."""
    if isinstance(size, int):
        return size
    presets = dict(zip(SIZE_NAMES, (tiny, small, medium, large)))
    if size not in presets:
        raise ValueError(f"size must be an int or one of {SIZE_NAMES}, got {size!r}")
    return presets[size]


def seeded(seed: int) -> torch.Generator:
    """Seed the global RNG (module init uses it) and return a generator for the example inputs."""
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def randn(gen: torch.Generator, *shape: int, device="cpu", dtype=torch.float32) -> torch.Tensor:
    """Example input drawn on CPU from `gen`, so inputs are identical on every device."""
    return torch.randn(*shape, generator=gen).to(device=device, dtype=dtype)


def finish(model: torch.nn.Module, inputs: tuple, device, dtype) -> tuple[torch.nn.Module, tuple]:
    """Move the model to its device/dtype and put it in eval mode (no dropout, deterministic)."""
    return model.to(device=device, dtype=dtype).eval(), inputs
