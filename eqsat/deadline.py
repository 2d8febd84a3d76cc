"""One wall-clock budget shared by every phase of an optimization (lower, build, analysis,
saturation, extraction, raising), so that ``seconds=`` bounds the whole run and not one phase; and
one :class:`Allowance` shared by every pass of a compile (the Torch-IR graph, then AOT's forward and
backward graphs), so that ``seconds=`` bounds the optimizer's time for the compile.

A phase asks :meth:`Deadline.left` before each step it can stop after; when a step would run past
the budget the phase stops, records itself in :attr:`Deadline.hit`, and the pipeline extracts the
best program found so far (anytime optimization). A phase that cannot stop once started asks
:meth:`Deadline.affords` with its price (``eqsat.budget.price``: per node, from the size before it
starts) and is skipped when it will not fit.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterator

from .budget import price


class Deadline:
    """``seconds`` from construction; remembers the first phase that ran out of time."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.start = time.perf_counter()
        self.hit = ""  # the first phase stopped by the budget ("" while none was)

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def left(self) -> float:
        return self.seconds - self.elapsed()

    def out_of_time(self, phase: str, reserve: float = 0.0) -> bool:
        """True (and remembered) when less than ``reserve`` seconds are left for ``phase`` to go on."""
        if self.left() > reserve:
            return False
        self.hit = self.hit or phase
        return True

    def affords(self, phase: str, count: int, reserve: float = 0.0) -> bool:
        """Whether ``phase`` on ``count`` nodes (priced by ``eqsat.budget.price``) fits in what is left
        beyond ``reserve``; when not, ``phase`` is remembered as the one the budget stopped."""
        return not self.out_of_time(phase, price(phase, count) + reserve)

    def why_not(self, phase: str, count: int) -> str:
        """The report's words for a phase skipped because it does not fit (``budget: ...``)."""
        return (f"budget: {phase} of {count} nodes is priced {price(phase, count):.3f} s, "
                f"{max(0.0, self.left()):.3f} s of {self.seconds:g} s left; skipped")

    def check(self, phase: str, reserve: float = 0.0) -> None:
        """Raise :class:`OutOfTime` when ``phase`` cannot go on (a phase with no partial result)."""
        if self.out_of_time(phase, reserve):
            raise OutOfTime(f"time budget of {self.seconds:g} s ran out in {phase} "
                            f"after {self.elapsed():.2f} s")

    def check_affords(self, phase: str, count: int, reserve: float = 0.0) -> None:
        """Raise :class:`OutOfTime` (``budget: ...``) when ``phase`` on ``count`` nodes does not fit."""
        if not self.affords(phase, count, reserve):
            raise OutOfTime(self.why_not(phase, count))


class OutOfTime(RuntimeError):
    """The budget ran out in a phase whose partial work is unusable (lowering, building the input)."""


class Allowance:
    """Optimizer seconds for one compile. Each pass draws a :class:`Deadline` of what is left and
    spends what it used; time between passes (a training step runs its forward before its backward
    is compiled) is not the optimizer's and is not spent. Deadlines drawn inside an open one (a pass
    around the optimizer: its checks and splicing) see the time the outer one has run as spent, and
    only the outermost adds its time to ``spent``, so nothing is counted twice."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.spent = 0.0
        self._opened: list[float] = []  # start of each open deadline, outermost first

    def left(self) -> float:
        running = time.perf_counter() - self._opened[0] if self._opened else 0.0
        return max(0.0, self.seconds - self.spent - running)

    def short_of(self, cost: float) -> str | None:
        """None where ``cost`` seconds fit what is left; else the report's words for why not
        (``priced … s, … s of … s left``)."""
        left = self.left()
        return None if left >= cost else f"priced {cost:.3f} s, {left:.3f} s of {self.seconds:g} s left"

    @contextmanager
    def deadline(self, reserve: float = 0.0) -> Iterator[Deadline]:
        """A deadline of what is left less ``reserve`` (work that runs after its phases, inside it:
        the checks of the program they produce)."""
        d = Deadline(max(0.0, self.left() - reserve))
        self._opened.append(d.start)
        try:
            yield d
        finally:
            self._opened.pop()
            if not self._opened:
                self.spent += d.elapsed()
