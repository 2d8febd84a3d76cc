"""The engine in one call: build → saturate → extract a program under one work :class:`Budget`.

``optimize(problem, rules, cost, budget)`` knows no torch: ``fx_bridge`` lowers an FX graph into a
:class:`Problem` (the input program, its outputs, its candidate sources) and raises the
:class:`Result`'s choice back. Every decision here is taken on counted work, so the same problem and
budget give the same program on any machine under any load. The wall clock (``deadline``, the
user's ``seconds=``) is only the outer safety: building and saturating stop at
``1 - EXTRACT_SHARE`` of it, extraction at all of it, and the best program found so far is kept.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from .budget import Budget
from .candidates import Candidates, CandidateSource
from .cost import CostModel, ProgramCost
from .deadline import Deadline
from .egraph import SaturationLog, Session
from .extract import Extraction, extract as extract_choice
from .gcpause import gc_paused
from .original import InputProgram, input_program
from .rule import Rule
from .serialized import EGraphView
from .sizes import SizeTable, hint_shapes
from .terms import Program, Term

# The share of ``seconds=`` the safety keeps for extraction when building or saturating runs into it
# (a fixed share: no measured speed enters a decision).
EXTRACT_SHARE = 0.25


@dataclass
class Problem:
    """A program to optimize: lets and facts, each original let's term (in binding order), the lets
    that are its outputs, and the sources of candidates offered beside the rules
    (``eqsat.candidates``: the batch fusions)."""

    program: Program
    originals: Mapping[str, Term]
    roots: Sequence[str]
    candidates: Sequence[CandidateSource] = ()
    sizes: SizeTable | None = None  # symbolic sizes: the e-graph's shapes are read at their hints


@dataclass
class Built:
    """A session holding the input program (and the candidates), priced before any rule ran;
    ``offered``: where the candidates of every source came from (their programs are loaded)."""

    session: Session
    before: ProgramCost
    offered: Candidates = field(default_factory=Candidates)


@dataclass
class Extracted:
    view: EGraphView
    input: InputProgram       # the input program inside the saturated e-graph
    extraction: Extraction


@dataclass
class Result:
    built: Built
    saturation: SaturationLog
    extracted: Extracted
    seconds: dict[str, float] = field(default_factory=dict)  # build / saturate / extract

    @property
    def improved(self) -> bool:
        return self.extracted.extraction.improved


def optimize(problem: Problem, rules: Iterable[Rule], cost: CostModel, budget: Budget,
             analysis: Iterable[Rule] = (), deadline: Deadline | None = None,
             seconds: dict[str, float] | None = None) -> Result:
    """The cheapest program equal to ``problem``'s (its input when nothing is cheaper), with the
    shape/dtype ``analysis`` rules. Raises ``OutOfTime`` when ``deadline`` runs out while building (a
    half-built input is unusable). ``seconds``: phase → seconds, added to (the pipeline's report)."""
    deadline = deadline or Deadline(budget.seconds)
    seconds = {} if seconds is None else seconds
    with _timed(seconds, "build"):
        built = build(problem, rules, cost, analysis, deadline)
    with _timed(seconds, "saturate"):
        sat = built.session.saturate(budget, deadline=deadline, reserve=reserve(deadline))
    with _timed(seconds, "extract"):
        ex = extract(built, problem, cost, budget, deadline)
    return Result(built, sat, ex, seconds)


def reserve(deadline: Deadline) -> float:
    """Seconds the safety keeps for extraction."""
    return EXTRACT_SHARE * deadline.seconds


def build(problem: Problem, rules: Iterable[Rule], cost: CostModel, analysis: Iterable[Rule] = (),
          deadline: Deadline | None = None) -> Built:
    """A session with the rules and the input program, priced as written (before any rule ran: one
    e-node per class), plus the candidates of every source."""
    with gc_paused():  # tens of thousands of acyclic objects per step (eqsat.gcpause)
        return _build(problem, rules, cost, analysis, deadline)


def _build(problem: Problem, rules: Iterable[Rule], cost: CostModel, analysis: Iterable[Rule],
           deadline: Deadline | None) -> Built:
    keep = reserve(deadline) if deadline is not None else 0.0  # a build past it is thrown away
    session = Session(rules, analysis)
    session.load(problem.program, deadline, keep)
    if deadline is not None:  # reading the e-graph to price the input cannot stop
        deadline.check_affords("view", session.size(), keep)
    before = input_program(view_of(session, problem), problem.originals, problem.roots, cost).cost
    if deadline is not None:
        deadline.check("build", keep)
    built = Built(session, before)
    for source in problem.candidates:
        offer = source.offer()
        session.load(offer.program, deadline, keep)
        built.offered.add(offer)
    return built


def extract(built: Built, problem: Problem, cost: CostModel, budget: Budget,
            deadline: Deadline | None = None) -> Extracted:
    """The cheapest program in the saturated e-graph; the input program when nothing is cheaper.
    Raises ``OutOfTime`` when extraction's parts that cannot stop (reading the e-graph, pricing,
    cycle-breaking) do not fit the deadline."""
    if deadline is not None:
        deadline.check_affords("extract", built.session.size())
    view = view_of(built.session, problem)
    found = input_program(view, problem.originals, problem.roots)
    ex = extract_choice(view, found.roots, cost, budget.ilp_seconds,
                        original=found.choice, before=built.before,
                        batched=[view.lets[m] for m in built.offered.members if m in view.lets],
                        fused_forms=[view.lets[f] for f in built.offered.inserted if f in view.lets],
                        budget=budget, deadline=deadline)
    return Extracted(view, found, ex)


def view_of(session: Session, problem: Problem) -> EGraphView:
    """The e-graph as extraction reads it; shapes of a symbolic graph at its size hints, so its
    program is chosen as for the static graph of the hint."""
    view = session.view()
    if problem.sizes is not None:
        view.shape = hint_shapes(view.shape, problem.sizes)
    return view


@contextmanager
def _timed(into: dict[str, float], phase: str):
    t0 = time.perf_counter()
    try:
        yield
    finally:
        into[phase] = into.get(phase, 0.0) + time.perf_counter() - t0
