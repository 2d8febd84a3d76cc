"""Inductor decides: of the input program and a few candidates, keep the one Inductor launches least.

The cost model proposes and extraction optimizes against it, so it seeks out the model's errors
(DESIGN.md). Before a GPU compile goes on, each candidate is measured by Inductor's own lowering and
scheduler (``fx_bridge.inductor_probe.count_launches``) and the fewest launches win, then the fewest
bytes; a tie keeps the input program, since a rewrite that gains nothing is a risk for nothing.
The input is always the first candidate, so the graph handed on never launches more than Inductor
alone would. Pure decision logic: the measuring is passed in.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

if TYPE_CHECKING:
    from .inductor_probe import Launches

INPUT = "input"


@dataclass(frozen=True)
class Choice:
    """The program to compile and why. ``measured``: each measured candidate's launches, or the error
    its measurement raised; ``same_as_input``: candidates not measured because their code is the
    input's."""

    name: str
    gm: Any
    measured: dict[str, Launches | str] = field(default_factory=dict)
    same_as_input: tuple[str, ...] = ()
    note: str = ""


def choose(candidates: Sequence[tuple[str, Any]], measure: Callable[[Any], Launches]) -> Choice:
    """The candidate with the fewest launches (ties: fewest bytes, then the input program).

    ``candidates[0]`` is the input program, named "input"; ``candidates[1]``, when present, is the
    optimizer's choice, kept if the input cannot be measured (nothing then says it is worse). A
    candidate whose measurement fails never wins. Candidates whose ``gm.code`` is the input's are not
    measured; when all are, nothing is."""
    if not candidates or candidates[0][0] != INPUT:
        raise ValueError(f"the first candidate must be the input program, named {INPUT!r}")
    if len({name for name, _ in candidates}) < len(candidates):
        raise ValueError("candidate names must be distinct")
    input_gm = candidates[0][1]
    same = tuple(name for name, gm in candidates[1:] if gm.code == input_gm.code)
    others = [(name, gm) for name, gm in candidates[1:] if name not in same]
    if not others:
        return Choice(INPUT, input_gm, same_as_input=same, note="every candidate is the input program")
    measured: dict[str, Launches | str] = {}
    for name, gm in ((INPUT, input_gm), *others):
        try:
            measured[name] = measure(gm)
        except Exception as e:  # the probe is advisory: a failure only disqualifies
            measured[name] = f"{type(e).__name__}: {e}"
    base = measured[INPUT]
    if isinstance(base, str):
        name, gm = candidates[1]
        return Choice(name, gm, measured, same,
                      f"kept the optimizer's choice {name!r}: the input program could not be measured ({base})")
    best_name, best_gm, best = INPUT, input_gm, base
    for name, gm in others:
        launches = measured[name]
        if not isinstance(launches, str) and launches.key < best.key:
            best_name, best_gm, best = name, gm, launches
    return Choice(best_name, best_gm, measured, same, _why(best_name, best, base))


def _why(name: str, best: Launches, base: Launches) -> str:
    if name == INPUT:
        return f"kept the input program: no candidate launches fewer than its {base.total} ({base.bytes} bytes)"
    return (f"{name!r}: {best.total} launches ({best.bytes} bytes) against the input's {base.total} "
            f"({base.bytes} bytes)")
