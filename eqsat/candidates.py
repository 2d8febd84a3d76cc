"""Candidate generators: equalities offered to the e-graph from outside its rules.

Some rewrites are no egglog rule: "these n independent, identical ops" is a set, and matching sets
inside egglog enumerates subsets (``eqsat_rules.batch``). A :class:`CandidateSource` finds such rewrites
in Python and offers them as :class:`Candidates`: a ``Program`` of the new forms and ``same`` pairs
(loaded once, before saturation), with where each came from, so the report credits the rule that
offered it and extraction knows which classes hold an offered form. The engine takes any number of
sources through ``Problem.candidates`` and knows nothing of what they match.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol

from .terms import Program


@dataclass
class Candidates:
    """What a source offers: ``program`` (lets of the new forms, ``same`` pairs and their facts, for
    ``Session.load``), ``inserted`` (each let of a new form → the rule that made it), ``members`` (the
    program's lets unioned with a piece of a new form) and ``counts`` (rule → groups offered: the
    report's ``rules_fired``). Lets are unique across the sources of one problem."""

    program: Program = field(default_factory=Program)
    inserted: dict[str, str] = field(default_factory=dict)
    members: list[str] = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)

    def add(self, other: "Candidates") -> None:
        """``other``'s provenance added to this one's (its program is loaded on its own)."""
        self.inserted.update(other.inserted)
        self.members.extend(other.members)
        self.counts.update(other.counts)


class CandidateSource(Protocol):
    """Anything that offers candidates for one problem (``eqsat_rules.batch_groups.BatchSource``)."""

    def offer(self) -> Candidates: ...
