"""Which fired rules the extracted program relies on, attributed by constructor.

egglog keeps no provenance, so this reads it off the result: every e-class whose chosen e-node is not
the input program's was rewritten by some rule whose pattern has the input node's constructor at its
root and whose replacement builds the chosen one (``rewrite_heads``). Nodes inserted from Python
(horizontal fusion groups) are attributed exactly, through the ``let`` that inserted them; where a
rule then rewrote the inserted form (a batched ``bmm`` decomposed into a product and a sum), that
rule is attributed too, read off the class's other e-nodes as for the input's.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping

from .rule import Rule, rewrite_heads
from .serialized import Choice, EGraphView


def rules_used(view: EGraphView, choice: Choice, original: Mapping[str, set[str]], rules: Iterable[Rule],
               fired: Mapping[str, int], inserted: Mapping[str, str] = {}) -> dict[str, int]:
    """Rule name → number of rewrites in ``choice`` attributed to it (only rules that fired).
    ``original`` maps each class to the input program's e-nodes in it (one per input term)."""
    used: Counter = Counter()
    for names in rules_by_class(view, choice, original, rules, fired, inserted).values():
        used.update(names)
    return dict(used)


def rules_by_class(view: EGraphView, choice: Choice, original: Mapping[str, set[str]], rules: Iterable[Rule],
                   fired: Mapping[str, int], inserted: Mapping[str, str] = {}) -> dict[str, list[str]]:
    """Each rewritten Tensor class of ``choice`` → the rules its rewrite is attributed to (a rule as
    often as it matches; ``rules_used`` counts them)."""
    heads = {r.name: rewrite_heads(r) for r in rules if fired.get(r.name)}
    by_class = {view.lets[let]: rule for let, rule in inserted.items() if let in view.lets}
    out: dict[str, list[str]] = {}
    for cls, node_id in choice.items():
        if view.sort.get(cls) != "Tensor":
            continue
        after = view.nodes[node_id].ctor
        if cls in by_class and node_id not in original.get(cls, ()):
            others = {view.nodes[n].ctor for n in view.classes.get(cls, ()) if n != node_id} - {after}
            out[cls] = [by_class[cls], *_rewrites(heads, others, after)]
            continue
        befores = [view.nodes[n].ctor for n in original.get(cls, ()) if n != node_id] or (
            [None] if cls not in original else [])
        names = _rewrites(heads, befores, after)
        if names:
            out[cls] = names
    return out


def _rewrites(heads: Mapping[str, tuple[set[str], set[str]]], befores: Iterable[str | None],
              after: str) -> list[str]:
    """The rules that rewrite a node of one of the ``befores`` constructors into an ``after`` one."""
    return [name for before in befores for name, (lhs, rhs) in heads.items()
            if (not lhs or before in lhs) and (after in rhs or "*" in rhs) and rhs]
