"""Python's cyclic garbage collector paused while a phase builds many small acyclic objects.

Reading a 15k-node e-graph back makes ~100k objects (e-nodes, their argument lists and tuples); each
700 allocations start a collection, and every tenth of those walks the older generations: the whole
process's heap (~700k objects once torch, the FX graph and the rules are loaded). That was 0.40 of the
view's 0.55 CPU s on the random 15k-node graph. Reference counting still frees everything at once;
only cycles wait for the next collection after the phase.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic collector for the block; restore the caller's setting (nests)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
