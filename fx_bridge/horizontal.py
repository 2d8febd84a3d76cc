"""Horizontal (batch) fusion candidates, found in Python and inserted into the e-graph as unions.

Placeholder until the batch-fusion family lands: no groups are proposed yet.
"""
from __future__ import annotations

from typing import Sequence

from .lower import Lowered


def horizontal_unions(low: Lowered, disabled: Sequence[str] = ()) -> list[str]:
    """egglog commands that union each fusible group's members with their fused form."""
    return []
