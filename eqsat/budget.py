"""What one optimization may spend, counted as work done, so the program it returns depends on the
graph and the options alone, never on how fast or how loaded the machine is (issue 31).

Every phase stops on a count: saturation on iterations and e-graph rows, the shape analysis on
passes, the ILP on columns and branch-and-bound nodes, the hill climbs on e-classes priced. Only
``seconds`` is a clock: the user's outer safety. When it runs out the phase stops where it is and
the best program found so far is kept (``eqsat.deadline``).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Budget:
    """Work limits of one optimization (the field order of the first three is public: ``Options.budget``)."""

    iterations: int = 8          # rule iterations (each followed by the analysis to a fixpoint)
    nodes: int = 200_000         # e-graph rows (all tables); an iteration past it is rolled back
    seconds: float = 10.0        # wall clock: the outer safety only
    analysis_passes: int = 64    # passes over every analysis ruleset per fixpoint (interformer, dhen: 12)
    ilp_columns: int = 6_000     # the ILP is not started with more (HiGHS' root LP ~0.4 ms a column; interformer 730)
    ilp_nodes: int = 200         # HiGHS branch-and-bound nodes
    ilp_seconds: float = 5.0     # the ILP's own wall-clock safety (``Options.ilp_seconds``)
    search_steps: int = 1_000_000  # e-classes priced by the hill climbs and the undo (interformer 155,594)


class Work:
    """A count that a phase spends and checks (``spend`` says whether there was enough left)."""

    def __init__(self, limit: int):
        self.limit, self.spent = limit, 0

    def spend(self, n: int) -> bool:
        if self.spent + n > self.limit:
            self.spent = self.limit
            return False
        self.spent += n
        return True

    @property
    def exhausted(self) -> bool:
        return self.spent >= self.limit
