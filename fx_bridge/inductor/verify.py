"""Inductor decides: of the input program and a few candidates, keep the one Inductor launches least.

The cost model proposes and extraction optimizes against it, so it seeks out the model's errors
(DESIGN.md). Before a GPU compile goes on, each candidate is measured by Inductor's own lowering and
scheduler (``eqsat_torch.inductor.probe.count_launches``) and the fewest launches win, then the fewest
bytes; a tie keeps the earlier candidate (the input first), since a rewrite that gains nothing is a
risk for nothing. The input is always the first candidate, so the graph handed on never launches more
than Inductor alone would. Candidates after the optimizer's own (programs with some of its rewrites
put back, ``eqsat.partial``) may be given as functions that make them: they are made and measured
only while ``keep_going`` says the time spent measuring is still worth it. Pure decision logic:
the measuring is passed in.

Inductor's combo kernels (``combo_kernels``) group independent pointwise and reduction kernels into
one launch, at code generation. ``combo=None`` decides them too: each candidate is counted with them
off and on (``Launches.combined``, the same lowering) and the pair with the fewest launches wins; a
tie keeps them off, the default, for the same reason. ``combo=True``/``False``: the compile's setting
is fixed (the user's), and each candidate is counted as it will be compiled.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

if TYPE_CHECKING:
    from eqsat_torch.inductor.launches import Launches

INPUT = "input"


@dataclass(frozen=True)
class Choice:
    """The program to compile and why. ``measured``: each measured candidate's launches, or the error
    its measurement (or making it) raised; ``same_as``: candidates not measured because their code is
    an earlier candidate's (name → that one); ``not_measured``: candidates left out when
    ``keep_going`` said stop."""

    name: str
    gm: Any
    measured: dict[str, Launches | str] = field(default_factory=dict)
    same_as: dict[str, str] = field(default_factory=dict)
    not_measured: tuple[str, ...] = ()
    note: str = ""
    combo: bool = False  # the winner is compiled with combo kernels on

    @property
    def launches(self) -> Launches | None:
        """The winner's launches as it will be compiled (with combo kernels when ``combo``)."""
        found = self.measured.get(self.name)
        if found is None or isinstance(found, str):
            return None
        return found.combined if self.combo else found

    @property
    def same_as_input(self) -> tuple[str, ...]:
        return tuple(name for name, other in self.same_as.items() if other == INPUT)


def settings(launches: Launches, combo: bool | None) -> list[tuple[bool, Launches]]:
    """(combo kernels on, the launches then) a candidate can be compiled with: the fixed setting,
    or with ``combo=None`` off then on (when its combined count is known)."""
    if combo is None:
        return [(False, launches)] + ([(True, launches.combined)] if launches.combined is not None else [])
    if combo and launches.combined is None:
        raise ValueError("combo kernels are on but the launches with them were not counted")
    return [(True, launches.combined)] if combo else [(False, launches)]


def best_key(launches: Launches, combo: bool | None) -> tuple[int, int]:
    """The candidate's order of preference under ``combo`` (its best setting)."""
    return min(counted.key for _, counted in settings(launches, combo))


def choose(candidates: Sequence[tuple[str, Any]], measure: Callable[[Any], Launches],
           keep_going: Callable[[dict[str, Launches | str]], bool] = lambda measured: True,
           combo: bool | None = False) -> Choice:
    """The candidate with the fewest launches (ties: fewest bytes, then the earlier candidate), and
    with ``combo=None`` whether combo kernels go on with it (ties: off).

    ``candidates[0]`` is the input program, named "input"; ``candidates[1]``, when present, is the
    optimizer's choice, kept if the input cannot be measured (nothing then says it is worse). Later
    entries may be a GraphModule or a function returning one; ``keep_going()`` is asked before each of
    them is made (given the measurements so far), and a False leaves it and the rest out. A candidate whose making or measurement fails
    never wins. A candidate whose ``gm.code`` is an earlier one's is measured once; when every given
    GraphModule is the input's, nothing is measured and nothing made (the candidates to make lie
    between the input and the optimizer's program)."""
    if not candidates or candidates[0][0] != INPUT:
        raise ValueError(f"the first candidate must be the input program, named {INPUT!r}")
    if len({name for name, _ in candidates}) < len(candidates):
        raise ValueError("candidate names must be distinct")
    input_gm = candidates[0][1]
    made = [(name, gm) for name, gm in candidates[1:] if not _maker(gm)]
    if all(gm.code == input_gm.code for _, gm in made):
        return Choice(INPUT, input_gm, same_as={name: INPUT for name, _ in made},
                      note="every candidate is the input program")
    measured: dict[str, Launches | str] = {}
    same_as: dict[str, str] = {}
    by_code: dict[str, str] = {}
    gms: dict[str, Any] = {}
    left_out: list[str] = []
    for k, (name, given) in enumerate(candidates):
        if k >= 2 and not keep_going(measured):
            left_out = [n for n, _ in candidates[k:]]
            break
        try:
            gm = given() if _maker(given) else given
        except Exception as e:  # a candidate that cannot be made is only left out
            measured[name] = f"not made: {type(e).__name__}: {e}"
            continue
        if gm is None:
            continue
        if gm.code in by_code:
            same_as[name] = by_code[gm.code]
            continue
        by_code[gm.code], gms[name] = name, gm
        try:
            measured[name] = measure(gm)
        except Exception as e:  # the probe is advisory: a failure only disqualifies
            measured[name] = f"{type(e).__name__}: {e}"
    base = measured[INPUT]
    if isinstance(base, str):
        name, gm = candidates[1]
        return Choice(name, gm, measured, same_as, tuple(left_out),
                      f"kept the optimizer's choice {name!r}: the input program could not be measured ({base})")
    best_name, (best_combo, best), base_counted = INPUT, settings(base, combo)[0], settings(base, combo)[0][1]
    for name, launches in measured.items():
        for on, counted in ([] if isinstance(launches, str) else settings(launches, combo)):
            if counted.key < best.key:
                best_name, best_combo, best = name, on, counted
    why = _why(best_name, best, base_counted) + (_combo_why(measured[best_name]) if combo is None else "")
    return Choice(best_name, gms[best_name], measured, same_as, tuple(left_out), why, best_combo)


def _maker(candidate: Any) -> bool:
    """A function that makes the candidate (a GraphModule is callable too, but has code)."""
    return callable(candidate) and not hasattr(candidate, "code")


def _combo_why(launches: Launches) -> str:
    if launches.combined is None:
        return "; combo kernels off: their launches could not be counted"
    return f"; combo kernels: {launches.total} launches without, {launches.combined.total} with"


def _why(name: str, best: Launches, base: Launches) -> str:
    if name == INPUT:
        return f"kept the input program: no candidate costs less than its {_counted(base)}"
    return f"{name!r}: {_counted(best)} against the input's {_counted(base)}"


def _counted(launches: Launches) -> str:
    """A candidate's count as the decision read it (``Launches.key``)."""
    if launches.cpu:
        return f"{launches.generated} loop nests, {launches.extern} extern calls ({launches.bytes} bytes)"
    return f"{launches.total} launches ({launches.bytes} bytes)"
