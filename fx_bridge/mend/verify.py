"""Compare the mended program's outputs with the original's: bit-identical, NaN-aware."""

from __future__ import annotations

import torch


def _leaves(value, path="out"):
    if isinstance(value, torch.Tensor):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}[{key!r}]")
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            yield from _leaves(item, f"{path}[{i}]")
    elif hasattr(value, "to_tuple"):
        yield from _leaves(value.to_tuple(), path)
    elif hasattr(value, "to_legacy_cache"):  # transformers Cache objects
        yield from _leaves(value.to_legacy_cache(), f"{path}.cache")
    else:
        yield path, value


def _identical(a, b) -> bool:
    if isinstance(a, torch.Tensor) != isinstance(b, torch.Tensor):
        return False
    if not isinstance(a, torch.Tensor):
        return type(a) is type(b) and (a == b or (a != a and b != b))
    if (a.shape, a.dtype, a.device) != (b.shape, b.dtype, b.device):
        return False
    a, b = a.detach(), b.detach()
    both_nan = torch.isnan(a) & torch.isnan(b) if a.is_floating_point() else torch.zeros_like(a, dtype=torch.bool)
    return bool(((a == b) | both_nan).all())


def compare(reference, candidate) -> tuple[bool, str]:
    """(equal, first difference) over every leaf of two (nested) outputs."""
    ref, cand = list(_leaves(reference)), list(_leaves(candidate))
    if [p for p, _ in ref] != [p for p, _ in cand]:
        return False, "output structure differs"
    for (path, a), (_, b) in zip(ref, cand):
        if not _identical(a, b):
            return False, f"{path} differs"
    return True, f"{len(ref)} leaves bit-identical"
