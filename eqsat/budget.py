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


# Seconds per node (FX node, or e-graph row for "view") of the phases that cannot stop once started,
# measured on the 2-core dev box under the load of a full team (split -> sigmoid -> cat, 2k-8k nodes)
# and rounded up about 2x: a phase is skipped, its input kept, when its price does not fit the time
# left (``Deadline.affords``), so ``seconds=`` holds on any graph size. Measured: lowering's scan
# and functionalizing 30-150 us, cutting and splicing split/cat units 262 us, reading the e-graph
# 5-9 us a row, finding horizontal groups 550 us, raising with its checks 5-10 us, the post-grad pass taking its body out and putting
# it back ~20 us.
SECONDS_PER_NODE = {
    "lower": 1.5e-4,     # functionalize + the scan lowering runs before its first deadline check
    "units": 5e-4,
    "horizontal": 1e-3,  # finding batch-fusion groups and writing their candidates (550 us measured)       # eqsat_torch.scale.clusters: cut out, optimize, splice back (the cutting cannot stop)
    "load": 5e-5,        # per statement: the bulk loader's rows read and its loading rules run
    "iterate": 1e-4,     # per e-graph row: the first rule iteration (later ones: as the last one took)
    "view": 2e-5,        # per e-graph row: serializing what extraction reads (egraph.Session.view)
    "extract": 1e-4,     # per e-graph row: reading it, pricing, cycle-breaking and the candidates'
                         # programs, which stop on no clock (43-134 us a row measured; the climbs do)
    "raise": 5e-5,       # raising the chosen program, its size and aliasing checks
    "splice": 2.5e-4,    # post-grad: the functional body copied out (its GraphModule's code written:
                         # 130 us measured on 1,926 nodes) and spliced back
    "check": 1e-4,       # per node of the input: the equivalence check (both graphs run on fake
                         # tensors, 3 us measured) and the post-grad output checks (``remove_noop_ops``
                         # on two copies: 94 us), run on the program the phases return
    "key": 1e-4,         # the warm-start cache's key: hashing the graph and its inputs (36-72 us measured)
    "probe": 7e-3,       # Inductor's lowering and scheduling on the fake GPU (``inductor.probe``): a
                         # 231-node Dynamo graph 1.6 s, its post-grad graph 0.7 s (H200 host)
    "probe_cpu": 9e-3,   # the CPU probe also generates the C++ source (loop nests are decided there):
                         # a 165-node Dynamo graph 1.1-1.5 s on 2 cores once warm (3.8 s the first)
}


def price(phase: str, count: int) -> float:
    """Seconds ``phase`` is expected to take on ``count`` nodes (``SECONDS_PER_NODE``)."""
    return SECONDS_PER_NODE[phase] * count


def least_price(count: int) -> float:
    """The cheapest way through a graph of ``count`` nodes: lowering it, raising the result and
    checking it (cutting it into units or regions costs more per node)."""
    return price("lower", count) + price("raise", count) + price("check", count)


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
