"""Batch groups: the rows of ``eqsat_rules.batch`` read over a lowered program, offered as unions.

Optimus (group_batch_fusion.py) searches 5 hops upstream of each anchor, needs 5 candidates and
always rewrites. Here every let of the lowered program is a candidate, wherever it sits: each row
whose constructors it has maps it to group keys; each key's members are split greedily, in
topological order, into subsets where no member is an ancestor of another (the term graph is a
networkx DAG); every subset of 2 or more is built once in its batched form and each member is
unioned with its piece of it. The unions are inserted once, before saturation, so no rule ever
batches a batched form. :class:`BatchSource` is the engine's ``CandidateSource`` for them.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Hashable, Iterator, Sequence

import networkx as nx

from eqsat.candidates import Candidates
from eqsat.ops import KEYED_POINTWISE, Ctor, op_name_of_key, version
from eqsat.terms import Program, Ref, Term, TList

from eqsat_rules.batch import FAMILY, BatchRule, batch_table
from eqsat_rules.batch_forms import NONE, Build, Ctx, LoweredTerms, refs


@lru_cache(maxsize=4)
def _rows_by_term(ops_version: int) -> dict[tuple[str, str | None], list[BatchRule]]:
    """(constructor, pointwise op or None) → the rows reading such a term, in table order."""
    by: dict[tuple[str, str | None], list[BatchRule]] = defaultdict(list)
    for row in batch_table():
        for ctor in row.ctors:
            by[ctor, row.op].append(row)
    return dict(by)


def rows_of(t: Term) -> list[BatchRule]:
    """The rows a term joins: a pointwise op with a row of its own takes only that one."""
    by_term = _rows_by_term(version())
    if t.ctor in KEYED_POINTWISE:
        own = by_term.get((t.ctor, op_name_of_key(t.args[0])))
        if own:
            return own
    return by_term.get((t.ctor, None), [])


def term_graph(low: LoweredTerms) -> nx.DiGraph:
    """let → let edges, producer to consumer."""
    g = nx.DiGraph()
    g.add_nodes_from(low.originals)
    g.add_edges_from((src, let) for let, t in low.originals.items() for src in refs(t))
    return g


def _independent_subsets(members: list[str], anc: dict[str, int], bit: dict[str, int],
                         input_of: Callable[[str], set] | None = None) -> Iterator[list[str]]:
    """Optimus' greedy partition (``find_independent_subset_greedy``) without its size limits:
    walk in topological order, take a member unless a taken one is its ancestor (or, with
    ``input_of``, stacks one of the same operands); repeat on the rest."""
    while len(members) >= 2:
        taken, mask, rest, inputs = [], 0, [], set()
        for m in members:
            x = input_of(m) if input_of else set()
            if anc[m] & mask or x & inputs:
                rest.append(m)
            else:
                taken.append(m)
                mask |= bit[m]
                inputs |= x
        if len(taken) >= 2:
            yield taken
        members = rest


def _position(ctx: Ctx, r: Ref, order: dict[str, int]) -> tuple[int, int]:
    """Where an operand comes from: (split tuple, piece) through views, so members over the pieces
    of one split are stacked in piece order and the split_cat rules can cancel the stack."""
    t = ctx.term(r)
    while t is not None and t.ctor in (Ctor.SQUEEZE, Ctor.UNSQUEEZE, Ctor.VIEW) and isinstance(t.args[0], Ref):
        r, t = t.args[0], ctx.term(t.args[0])
    if t is not None and t.ctor == Ctor.GET and isinstance(t.args[0], Ref):
        return order.get(t.args[0].let, 0), t.args[1]
    return order.get(r.let, 0), 0


# The operand that orders a group's members (after the key, for pointwise ops; after addmm's bias).
_LEAD_OPERAND = {Ctor.UNARY: 1, Ctor.BINARY: 1, Ctor.ADDMM: 1}


@dataclass
class Group:
    rule: str
    key: Hashable
    build: Build
    members: list[str]


def find_groups(low: LoweredTerms, disabled: Sequence[str] = ()) -> list[Group]:
    """Every independent group of 2 or more, rows in table order per term, terms in topological order."""
    off = set(disabled)
    if FAMILY in off:
        return []
    ctx = Ctx(low)
    g = term_graph(low)
    order = {let: i for i, let in enumerate(nx.topological_sort(g))}
    keyed: dict[tuple[str, Hashable, bool], tuple[BatchRule, list[str]]] = {}
    for let in sorted(low.originals, key=order.__getitem__):
        t = low.originals[let]
        if ctx.shape(Ref(let)) is None:
            continue
        for row in rows_of(t):
            if row.name in off:
                continue
            for key in row.match(ctx, t):  # never a value passing gradient with one passing none
                keyed.setdefault((row.name, key, let in low.grad_dead), (row, []))[1].append(let)
    candidates = {let for _, lets in keyed.values() if len(lets) >= 2 for let in lets}
    bit = {let: 1 << i for i, let in enumerate(sorted(candidates, key=order.__getitem__))}
    anc: dict[str, int] = {}
    for let in sorted(g, key=order.__getitem__):  # candidate ancestors of every let, as a bitset
        a = 0
        for p in g.predecessors(let):
            a |= anc[p] | bit.get(p, 0)
        anc[let] = a
    groups = []
    for (_, key, _), (row, lets) in keyed.items():
        input_of = (lambda m, d=row.distinct: d(low.originals[m])) if row.distinct else None
        for subset in _independent_subsets(lets, anc, bit, input_of):
            if row.admits is not None and not row.admits(ctx, [low.originals[m] for m in subset]):
                continue
            first = [low.originals[m].args[_LEAD_OPERAND.get(low.originals[m].ctor, 0)] for m in subset]
            ranked = sorted(zip(first, subset),
                            key=lambda p: (_position(ctx, p[0], order) if isinstance(p[0], Ref) else (0, 0),
                                           order[p[1]]))
            groups.append(Group(row.name, key, row.build, [m for _, m in ranked]))
    return groups


def batch_unions(low: LoweredTerms, disabled: Sequence[str] = ()) -> Candidates:
    """Each group's members unioned with their piece of its batched form, with where each came from."""
    ctx = Ctx(low)
    out = Candidates()
    program = out.program
    uses_none = False
    for gi, group in enumerate(find_groups(low, disabled)):
        lets: list[str] = []

        def bind(term: Term) -> Ref:
            nonlocal uses_none
            name = f"$hz{gi}_{len(lets)}"
            lets.append(name)
            out.inserted[name] = group.rule
            uses_none |= _mentions(term, NONE)
            return program.let(name, term)

        pieces = group.build(ctx, [low.originals[m] for m in group.members], bind, group.key)
        splits: dict[Term, Ref] = {}
        for m, alternatives in zip(group.members, pieces):
            for p in alternatives if isinstance(alternatives, list) else [alternatives]:
                uses_none |= _mentions(p, NONE)
                program.same(Ref(m), _bind_splits(p, bind, splits))  # unioned by Session.seed
            out.members.append(m)
        out.counts[group.rule] += 1
    if uses_none:  # the facts lowering gives every NoneT it emits (norm costs read them)
        facts = Program()
        facts.set_shape(NONE, ())
        facts.set_dtype(NONE, "scalar")
        program.prepend(facts)
    return out


@dataclass
class BatchSource:
    """The batch family as the engine's candidate source (``eqsat.candidates``) for one program."""

    low: LoweredTerms
    disabled: Sequence[str] = field(default_factory=tuple)

    def offer(self) -> Candidates:
        return batch_unions(self.low, self.disabled)


def _bind_splits(x, bind, bound: dict) -> object:
    """``x`` with each ``Split`` bound once by ``bind``: the n pieces of a fused form share one split
    of n sizes, which spelled out in every ``same`` pair is n² text for egglog to parse and evaluate
    (4 s at 512 pieces)."""
    if isinstance(x, Term):
        t = Term(x.ctor, tuple(_bind_splits(a, bind, bound) for a in x.args))
        if t.ctor == Ctor.SPLIT:
            if t not in bound:
                bound[t] = bind(t)
            return bound[t]
        return t
    if isinstance(x, TList):
        return TList(tuple(_bind_splits(a, bind, bound) for a in x.items))
    return x


def _mentions(x, term: Term) -> bool:
    if x == term:
        return True
    if isinstance(x, Term):
        return any(_mentions(a, term) for a in x.args)
    if isinstance(x, TList):
        return any(_mentions(a, term) for a in x.items)
    return False
