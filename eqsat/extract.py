"""Extraction: choose one e-node per needed e-class so the program is acyclic and cheap.

``bottom_up`` is the tree-optimal baseline (a Dijkstra-style pass: a class is final once its cheapest
node's children are all final, so the choice is acyclic by construction). ``extract`` adds the
DAG-aware ILP (``eqsat.ilp``), which pays for a shared class once, and keeps whichever candidate —
bottom-up, ILP, or the input program when given — has the lowest whole-program cost
(``CostModel.program_cost``, which models Inductor's fusion). It therefore never returns a program
costlier than the input.
"""
from __future__ import annotations

import dataclasses
import heapq
import time
from collections import ChainMap
from dataclasses import dataclass
from typing import Callable, Iterable

from .budget import Budget, Work
from .cost import UNKNOWN, CostModel, ProgramCost
from .deadline import Deadline
from .ilp import break_cycles, solve
from .ops import Ctor
from .serialized import Choice, EGraphView, ENode, walk

NodeCost = Callable[[ENode, EGraphView], float]


@dataclass
class Extraction:
    choice: Choice            # reachable part only: class → node id
    cost: float               # program cost (α·kernels + β·bytes) of ``choice``
    extractor: str            # "bottom_up" | "ilp" | "batched" | "local" | "input"
    seconds: float
    after: ProgramCost        # kernels / bytes / cost of ``choice``
    before: ProgramCost | None = None  # the input program, when given: the cost to beat
    gap: float | None = None  # ILP relative optimality gap when it stopped at the time limit
    ilp_status: str = "not run"
    candidates: dict[str, float] | None = None  # extractor → program cost, for the report
    search_cut: bool = False  # the hill climbs or the undo stopped at their work limit (or the
    #                           user's seconds=), not on an optimum

    @property
    def improved(self) -> bool:
        """Strictly cheaper than the input (beyond float noise), or no input to compare with."""
        return self.before is None or self.after.cost < self.before.cost * (1 - 1e-9)


class ExtractionError(RuntimeError):
    pass


def node_costs(view: EGraphView, node_cost: NodeCost) -> dict[str, float]:
    return {nid: node_cost(node, view) for nid, node in view.nodes.items()}


def _finalise(view: EGraphView, costs: dict[str, float]) -> tuple[Choice, dict[str, int], dict[str, float]]:
    """Tree-optimal node per class for the whole e-graph, the order classes became final, and each
    class's tree cost."""
    parents: dict[str, list[str]] = {}
    pending: dict[str, int] = {}
    kids_of: dict[str, tuple[str, ...]] = {}
    heap: list[tuple[float, str]] = []
    for nid, node in view.nodes.items():
        kids = kids_of[nid] = tuple(set(node.children))
        pending[nid] = len(kids)
        for c in kids:
            parents.setdefault(c, []).append(nid)
        if not kids:
            heap.append((costs[nid], nid))
    heapq.heapify(heap)
    best: dict[str, float] = {}
    choice: Choice = {}
    rank: dict[str, int] = {}
    nodes = view.nodes
    while heap:
        cost, nid = heapq.heappop(heap)
        cls = nodes[nid].eclass
        if cls in choice:
            continue
        choice[cls], best[cls], rank[cls] = nid, cost, len(rank)
        for p in parents.get(cls, ()):
            pending[p] -= 1
            if pending[p] == 0:
                heapq.heappush(heap, (costs[p] + sum(best[c] for c in kids_of[p]), p))
    return choice, rank, best


def bottom_up(view: EGraphView, roots: Iterable[str], node_cost: NodeCost | dict[str, float]) -> Choice:
    """Tree-optimal choice for every class reachable from ``roots``."""
    costs = node_cost if isinstance(node_cost, dict) else node_costs(view, node_cost)
    choice, _, _ = _finalise(view, costs)
    return reachable(view, _check_roots(roots, choice), choice)


def _check_roots(roots: Iterable[str], choice: Choice) -> list[str]:
    roots = list(roots)
    missing = [r for r in roots if r not in choice]
    if missing:
        raise ExtractionError(f"no finite program for e-classes {missing[:5]}")
    return roots


def reachable(view: EGraphView, roots: Iterable[str], choice: Choice) -> Choice:
    """The part of ``choice`` the roots actually use."""
    return {cls: choice[cls] for cls in walk(view, roots, choice).preorder}


def is_acyclic(view: EGraphView, roots: Iterable[str], choice: Choice) -> bool:
    return walk(view, roots, choice).acyclic


def is_complete(view: EGraphView, roots: Iterable[str], choice: Choice) -> bool:
    """Every root and every child of a chosen node has a chosen node of its own class."""
    return all(r in choice for r in roots) and all(
        view.nodes[n].eclass == c and all(k in choice for k in view.nodes[n].children)
        for c, n in choice.items())


def _reaches(view: EGraphView, choice: Choice, start: Iterable[str], target: str) -> bool:
    """Whether the program ``choice`` reads ``target`` from any of the classes ``start``."""
    seen, todo = set(), list(start)
    while todo:
        cls = todo.pop()
        if cls == target:
            return True
        if cls not in seen and cls in choice:
            seen.add(cls)
            todo.extend(view.nodes[choice[cls]].children)
    return False


def fusion_search(view: EGraphView, roots: list[str], model: CostModel, start: Choice, start_cost: float,
                  full: Choice, costs: dict[str, float], work: Work,
                  deadline: Deadline | None = None) -> tuple[Choice | None, bool]:
    """Hill climbing on the whole-program price: the per-node costs the ILP optimises cannot see that
    a program which looks dearer node by node fuses into fewer kernels (``mm`` + ``relu`` against a
    broadcast product, its sum and the ``relu`` in one kernel). Each step swaps one chosen class to
    another of its nodes (its missing children tree-optimal) and keeps the swap when the program,
    priced with fusion (``CostModel.program_cost``), gets strictly cheaper. A pass tries every swap
    once, in order of node-cost change, and passes repeat until one finds nothing: the result depends
    on the e-graph alone, not on how fast the machine is, unless ``work`` (e-classes priced, shared
    with the undo) runs out first (anytime: the best program so far; the user's ``deadline`` too).
    A program of more than ``LOCAL_CLASSES`` classes prices each swap on its neighbourhood first
    (``_Climb``). (The program, None when nothing cheaper was found; whether it stopped before a pass
    found nothing.)"""
    climb = _Climb(view, roots, model, start, start_cost, full, work, deadline, improve=True)
    moved = True
    while moved and not (cut := climb.stop()):
        moved = False
        best = climb.best
        swaps = sorted(((costs[n] - costs[best[c]], c, n) for c in best for n in view.classes.get(c, ())
                        if n != best[c] and all(k in full for k in view.nodes[n].children)))
        for _, cls, nid in swaps:
            if cut := climb.spend_whole():
                break
            if climb.best.get(cls) == nid or cls not in climb.best:  # an earlier swap of this pass changed the program
                continue
            tried = climb.try_swap(cls, nid)
            if tried is None:
                cut = True
                break
            moved |= tried
        moved = climb.end_pass() and moved
    return (climb.best if climb.changed else None), cut


# Programs of more than this many classes price a swap on its neighbourhood before the whole program
# (``_Climb``): pricing a 4,000-class program takes ~0.3 s, and a hill climb tries thousands of swaps
# (the random 15k-node graph's first window: 43 s of extraction for 72 swaps, cut by the clock).
LOCAL_CLASSES = 2048
# Hops from the classes a swap changes that its neighbourhood takes in (readers and operands).
LOCAL_RADIUS = 1


class _Climb:
    """The program a hill climb holds (``best``, priced ``cost``) and how it tries one swap: kept when
    the program gets cheaper (``improve``), else (the undo) when it gets no dearer, beyond float noise.

    A small program prices every trial whole (``_swap``). A large one prices the classes the swap
    changes (the node swapped in, the operands it adds, the ones nobody reads any more) with
    ``LOCAL_RADIUS`` hops of their readers and operands, before and after, and keeps the swap on that
    price; the whole program is priced once a pass (``end_pass``), and a pass that did not pay as a
    whole is undone and ends the climb, so the program never gets dearer. Every decision is counted
    work (the classes priced); a trial touches only its neighbourhood, not the whole program."""

    def __init__(self, view: EGraphView, roots: list[str], model: CostModel, start: Choice, cost: float,
                 fill: Choice, work: Work, deadline: Deadline | None, improve: bool):
        self.view, self.roots, self.model, self.fill = view, roots, model, fill
        self.work, self.deadline, self.improve = work, deadline, improve
        self.changed = False
        self.leaf_nodes: dict[str, ENode] = {}
        self.leaf_view = dataclasses.replace(view, nodes=ChainMap(self.leaf_nodes, view.nodes))
        self.local = len(start) > LOCAL_CLASSES
        self._set(dict(start), cost)
        self.checkpoint = (self.best, cost)  # the program and price at the start of the pass

    def _set(self, best: Choice, cost: float) -> None:
        self.best, self.cost = best, cost
        if not self.local:
            return
        w = walk(self.view, self.roots, best)
        self.pos: dict[str, float] = {c: k for k, c in enumerate(w.postorder)}  # producers first
        self.readers: dict[str, dict[str, None]] = {}  # class → the classes reading it (ordered)
        for c, n in best.items():
            for k in dict.fromkeys(self.view.nodes[n].children):
                self.readers.setdefault(k, {})[c] = None
        self.rootset = set(self.roots)

    def stop(self, cost: int = 0) -> bool:
        return _stop(self.work, self.deadline, cost)

    def spend_whole(self) -> bool:
        """A small program pays for pricing it whole before each swap is looked at; whether the work
        or the clock ran out."""
        return not self.local and self.stop(len(self.best))

    def end_pass(self) -> bool:
        """Price the program a pass of local swaps left (a large program); whether the climb goes on:
        a pass that did not pay as a whole is undone."""
        best, cost = self.checkpoint
        if self.local and self.best is not best:  # swaps copy ``best`` before the first one
            self.stop(len(self.best))
            now = self.model.program_cost(self.view, self.best, self.roots).cost
            if self._pays(now, cost):
                self._set(self.best, now)
                self.changed = True
            else:
                self._set(best, cost)
                self.checkpoint = (self.best, cost)
                return False
        self.checkpoint = (self.best, self.cost)
        return True

    def try_program(self, other: Choice) -> bool:
        """Take ``other`` whole when it pays, priced whole; whether it was kept."""
        now = self.model.program_cost(self.view, other, self.roots).cost
        if not self._pays(now, self.cost):
            return False
        self._set(other, now)
        self.checkpoint = (self.best, now)
        self.changed = True
        return True

    def _pays(self, new: float, old: float) -> bool:
        return new < old * (1 - 1e-9) if self.improve else new <= old * (1 + 1e-9)

    def try_swap(self, cls: str, nid: str) -> bool | None:
        """Swap ``cls`` to ``nid`` when it pays; whether it was kept, None when the work or clock ran out."""
        if not self.local:
            return self._keep(_swap(self.view, self.roots, self.model, {**self.fill, **self.best}, cls, nid))
        trial = self._trial(cls, nid)
        if trial is None:  # a cycle
            return False
        added, removed = trial
        region = self._region({cls, *added, *removed}, cls, nid, added)
        if self.stop(2 * len(region)):
            return None
        before = self._price_region(region, self.best.get, set())
        after = self._price_region(region, lambda c: nid if c == cls else added.get(c) or self.best.get(c), removed)
        if not self._pays(self.cost + after - before, self.cost):
            return False
        if self.best is self.checkpoint[0]:  # the pass's first swap: keep its start to undo it
            self.best = dict(self.best)
        self._apply(cls, nid, added, removed)
        self.cost += after - before  # priced whole by end_pass
        return True

    def _apply(self, cls: str, nid: str, added: dict[str, str], removed: set[str]) -> None:
        """Make the swap in ``best``, its readers and its topological positions, touching only what it
        changes (the positions are recomputed when the new operands do not all come before ``cls``)."""
        view, best, readers, pos = self.view, self.best, self.readers, self.pos
        for c in [cls, *removed]:
            for k in dict.fromkeys(view.nodes[best[c]].children):
                readers[k].pop(c, None)
        for c in removed:
            del best[c]
            pos.pop(c, None)
        best[cls] = nid
        best.update(added)
        for c in [cls, *added]:
            for k in dict.fromkeys(view.nodes[best[c]].children):
                readers.setdefault(k, {})[c] = None
        order = [c for c in walk(view, [cls], {c: added[c] for c in added} | {cls: nid}).postorder if c in added]
        low = max((pos[k] for c in [cls, *added] for k in view.nodes[best[c]].children if k in pos),
                  default=pos[cls] - 1)
        step = (pos[cls] - low) / (len(order) + 1)
        if low >= pos[cls] or low + step <= low:  # a new operand after cls, or no room left: renumber
            self.pos = {c: k for k, c in enumerate(walk(view, self.roots, best).postorder)}
            return
        for j, c in enumerate(order):
            pos[c] = low + step * (j + 1)

    def _keep(self, swapped: tuple[Choice, float] | None) -> bool:
        if swapped is None or not self._pays(swapped[1], self.cost):
            return False
        self._set(*swapped)
        self.changed = True
        return True

    def _trial(self, cls: str, nid: str) -> tuple[dict[str, str], set[str]] | None:
        """(classes the swap adds with their tree-optimal nodes, classes nobody reads after it); None
        when ``nid`` reads ``cls`` back."""
        view, best, fill, pos = self.view, self.best, self.fill, self.pos
        added: dict[str, str] = {}
        seen, todo = set(), list(dict.fromkeys(view.nodes[nid].children))
        while todo:  # operands of the new node: a best class reading cls sits after it in ``pos``
            c = todo.pop()
            if c == cls:
                return None
            if c in seen:
                continue
            seen.add(c)
            if c in best:
                if pos[c] > pos[cls]:
                    todo.extend(view.nodes[best[c]].children)
                continue
            added[c] = fill[c]
            todo.extend(view.nodes[fill[c]].children)
        uses: dict[str, int] = {}
        for n in [nid, *added.values()]:
            for k in dict.fromkeys(view.nodes[n].children):
                uses[k] = uses.get(k, 0) + 1
        removed: set[str] = set()
        todo = list(dict.fromkeys(view.nodes[best[cls]].children))
        while todo:  # operands only the old node read, and theirs
            k = todo.pop()
            if k not in best or k in self.rootset or k == cls:
                continue
            uses[k] = uses.get(k, 0) - 1
            if len(self.readers.get(k, ())) + uses[k] == 0 and k not in removed:
                removed.add(k)
                todo.extend(dict.fromkeys(view.nodes[best[k]].children))
        return added, removed

    def _region(self, changed: set[str], cls: str, nid: str, added: dict[str, str]) -> set[str]:
        view, best = self.view, self.best
        region, frontier = set(changed), set(changed)
        for _ in range(LOCAL_RADIUS):
            nxt = set()
            for c in frontier:
                nodes = [n for n in (best.get(c), nid if c == cls else added.get(c)) if n is not None]
                for n in nodes:
                    nxt.update(view.nodes[n].children)
                nxt.update(self.readers.get(c, ()))
            frontier = nxt - region
            region |= frontier
        return region

    def _price_region(self, region: set[str], node_of, removed: set[str]) -> float:
        """The price of the region's part of a program (``node_of``: class → its node, None when not
        computed); its outputs are the program's roots and what classes outside it read."""
        view = self.view
        choice = {c: n for c in region if c not in removed and (n := node_of(c)) is not None}
        outs = [c for c in choice if c in self.rootset
                or any(r not in region for r in self.readers.get(c, ()))]
        outs.sort(key=lambda c: (self.pos.get(c, -1), c))
        if not outs:
            return 0.0
        todo = [k for n in choice.values() for k in view.nodes[n].children]
        while todo:  # operands from outside are inputs; lists are read cell by cell, so all their cells
            k = todo.pop()
            if k in choice:
                continue
            if view.sort.get(k) == "TList":
                choice[k] = node_of(k)
                todo.extend(view.nodes[choice[k]].children)
            else:
                choice[k] = self._leaf(k)
        return self.model.program_cost(self.leaf_view, choice, outs).cost

    def _leaf(self, cls: str) -> str:
        """An input node for ``cls``: what a neighbourhood reads from the rest of the program."""
        nid = f"leaf:{cls}"
        if nid not in self.leaf_nodes:
            self.leaf_nodes[nid] = ENode(nid, Ctor.INPUT, cls, [("lit", nid)])
        return nid


def _stop(work: Work, deadline: Deadline | None, cost: int = 0) -> bool:
    """Spend ``cost`` (the classes one swap prices; 0: only look); True when the work or the user's
    seconds= ran out."""
    out_of_work = work.exhausted if cost == 0 else not work.spend(cost)
    return out_of_work or (deadline is not None and deadline.out_of_time("extract"))


def _swap(view: EGraphView, roots: list[str], model: CostModel, base: Choice, cls: str,
          nid: str) -> tuple[Choice, float] | None:
    """The program ``base`` with class ``cls`` computed by node ``nid`` (its reachable part) and its
    price; None when ``nid`` reads ``cls`` back (a cycle)."""
    trial = {**base, cls: nid}
    if _reaches(view, trial, view.nodes[nid].children, cls):
        return None
    trial = reachable(view, roots, trial)
    return trial, model.program_cost(view, trial, roots).cost


def _reaching(view: EGraphView, targets: set[str]) -> set[str]:
    """Classes with a node that reads one of ``targets``, directly or through other classes."""
    parents: dict[str, set[str]] = {}
    for node in view.nodes.values():
        for k in node.children:
            parents.setdefault(k, set()).add(node.eclass)
    seen, stack = set(targets), list(targets)
    while stack:
        for p in parents.get(stack.pop(), ()):
            if p not in seen:
                seen.add(p)
                stack.append(p)
    return seen


def extract(view: EGraphView, roots: Iterable[str], model: CostModel, time_limit: float = 5.0,
            original: Choice | None = None, before: ProgramCost | None = None,
            batched: Iterable[str] = (), fused_forms: Iterable[str] = (),
            budget: Budget | None = None, deadline: Deadline | None = None) -> Extraction:
    """Best acyclic program for ``roots``: bottom-up, then SCC cycle-break + ILP (at most
    ``budget.ilp_columns`` columns and ``budget.ilp_nodes`` branch-and-bound nodes; ``time_limit``
    seconds is its outer safety), then hill climbs on the fused price and the undo of unpaid rewrites
    within ``budget.search_steps`` e-classes priced (none: neither they nor the batched candidate are
    built). ``deadline`` is the user's ``seconds=``: when it runs out the search stops where it is.

    ``original`` (a choice in this view, from :func:`eqsat.original.input_program`) is the input
    program: it is returned, with extractor "input", unless a candidate is strictly cheaper.
    ``before`` is the cost to beat (default: ``original``'s price here); the pipeline passes the
    input's price before any rule ran. ``batched``: classes a horizontal fusion unioned with their
    piece of one of the ``fused_forms``. A fusion saves launches only when all its members switch,
    and the glue it adds (pads, stacks, bias adds) fuses into neighbouring kernels, which per-node
    costs cannot see; so the tree-optimal program whose members read their fused forms is one more
    candidate.
    """
    t0 = time.perf_counter()
    budget = budget or Budget()
    work = Work(budget.search_steps)
    roots = list(dict.fromkeys(roots))
    costs = node_costs(view, model.node_cost)
    full, rank, best = _finalise(view, costs)
    candidates: dict[str, Choice] = {"bottom_up": reachable(view, _check_roots(roots, full), full)}
    ilp_status, gap = "not run", None
    if budget.ilp_columns > 0 and budget.ilp_nodes > 0:
        kept = break_cycles(view, roots, rank, best, full, costs, UNKNOWN)
        limit = min(time_limit, deadline.left()) if deadline is not None else time_limit
        if len(kept) > budget.ilp_columns:
            ilp_status = f"skipped: {len(kept):,} columns > {budget.ilp_columns:,}"
        elif limit <= 0:
            ilp_status = "skipped: the time budget ran out"
        else:
            res = solve(view, roots, kept, costs, limit, budget.ilp_nodes)
            ilp_status, gap = res.status, res.gap
            if res.choice is not None and all(r in res.choice for r in roots):
                candidates["ilp"] = reachable(view, roots, res.choice)
    if original is not None:
        candidates["input"] = reachable(view, roots, original)
    if original is not None and budget.search_steps > 0:  # no search: no optional candidate either
        reach = _reaching(view, set(fused_forms))
        banned = {n for c in batched for n in view.classes.get(c, ())
                  if not any(k in reach for k in view.nodes[n].children)}
        if banned:
            fused, _, _ = _finalise(view, {n: UNKNOWN if n in banned else c for n, c in costs.items()})
            if all(r in fused for r in roots):
                candidates["batched"] = reachable(view, roots, fused)
    priced = {name: model.program_cost(view, ch, roots) for name, ch in candidates.items()
              if is_acyclic(view, roots, ch)}
    # The hill climb starts from the cheapest candidate, and again from the batched one: a climb
    # from one rarely reaches the other's basin (a fusion is many swaps at once).
    starts = [min((k for k in priced if k != "batched"), key=lambda k: priced[k].cost)]
    starts += ["batched"] if "batched" in priced else []
    cut = budget.search_steps <= 0
    for start in starts:
        if cut:
            break
        searched, stopped = fusion_search(view, roots, model, candidates[start], priced[start].cost, full,
                                          costs, work, deadline)
        cut |= stopped
        if searched is not None:
            found = model.program_cost(view, searched, roots)
            if "local" not in priced or found.cost < priced["local"].cost:
                candidates["local"], priced["local"] = searched, found
    order = ["input", "bottom_up", "ilp", "batched", "local"]  # ties keep the input, then the simpler extractor
    name = min(priced, key=lambda k: (priced[k].cost, order.index(k)))
    chosen, after = candidates[name], priced[name]
    if original is not None and name != "input":
        undone, stopped = undo_unpaid(view, roots, model, chosen, after.cost, original, full, work, deadline)
        cut |= stopped
        if undone is not None:
            chosen, after = undone, model.program_cost(view, undone, roots)
    return Extraction(chosen, after.cost, name, time.perf_counter() - t0, after,
                      before or priced.get("input"), gap, ilp_status, {k: v.cost for k, v in priced.items()},
                      search_cut=cut)


def put_back(view: EGraphView, roots: list[str], choice: Choice, input_choice: Choice,
             classes: Iterable[str]) -> Choice | None:
    """``choice`` with ``classes`` computed as the input computes them, its reachable part. A class
    the input has not got drops out, and so every class of ``choice`` that reads one is put back too.
    None when the mix reads a class back or misses one."""
    readers: dict[str, set[str]] = {}
    for c, n in choice.items():
        for k in view.nodes[n].children:
            readers.setdefault(k, set()).add(c)
    back = set(classes)
    dropped = [c for c in back if c not in input_choice]
    while dropped:
        for r in readers.get(dropped.pop(), ()):
            if r not in back:
                back.add(r)
                if r not in input_choice:
                    dropped.append(r)
    mixed = {**input_choice, **{c: n for c, n in choice.items() if c not in back}}
    mixed = reachable(view, roots, mixed)
    if not is_complete(view, roots, mixed) or not is_acyclic(view, roots, mixed):
        return None
    return mixed


def undo_unpaid(view: EGraphView, roots: list[str], model: CostModel, choice: Choice, cost: float,
                original: Choice, full: Choice, work: Work,
                deadline: Deadline | None = None) -> tuple[Choice | None, bool]:
    """Put back, one class at a time, every input node whose rewrite the price does not need: the
    program may not get dearer. A rewrite the model sees no gain in is a risk with no reward: the model
    cannot see everything Inductor does (a stack of two multiplies that every consumer inlines saves
    nothing, yet its indexing pushes Inductor to materialise a fused kernel's operand: Llama's rotary
    ``cos``/``sin`` scaling at size small on the H200, one launch more a layer). Rewrites that pay
    together stay: undoing one of them alone makes the program dearer. (The program, None when nothing
    was put back; whether ``work`` or the ``deadline`` ran out before a pass put nothing back.)"""
    climb = _Climb(view, roots, model, choice, cost, {**full, **original}, work, deadline, improve=False)
    moved = True
    while moved and not (cut := climb.stop()):
        moved = False
        for cls in [c for c in climb.best if c in original and climb.best[c] != original[c]]:
            if cut := climb.spend_whole():
                break
            if cls not in climb.best or climb.best[cls] == original[cls]:  # an earlier undo of this pass reached it
                continue
            tried = climb.try_swap(cls, original[cls])
            if tried is None:
                cut = True
                break
            moved |= tried
        moved = climb.end_pass() and moved
    for group in [] if cut else _read_together(view, climb.best, original):
        if cut := climb.stop(len(climb.best)):
            break
        mixed = put_back(view, roots, climb.best, original, group)
        if mixed is not None:
            climb.try_program(mixed)
    return (climb.best if climb.changed else None), cut


def _read_together(view: EGraphView, choice: Choice, original: Choice) -> list[list[str]]:
    """Rewritten classes that read one class the input program does not compute (the two products
    a stacked multiply computes for two readers), groups of two or more: putting back one of them
    alone keeps the shared class and so pays nothing; only the group together can."""
    groups: dict[str, list[str]] = {}
    for c, n in choice.items():
        if c in original and n != original[c]:
            for k in dict.fromkeys(view.nodes[n].children):
                if k not in original:
                    groups.setdefault(k, []).append(c)
    return [g for g in groups.values() if len(g) > 1]
