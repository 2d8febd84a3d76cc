"""Which fired rules the extracted program relies on, attributed by constructor.

egglog keeps no provenance, so this reads it off the result: every e-class whose chosen e-node is not
the input program's was rewritten by some rule whose pattern has the input node's constructor at its
root and whose replacement builds the chosen one (``rewrite_heads``). Nodes inserted from Python
(horizontal fusion groups) are attributed exactly, through the ``let`` that inserted them.
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
    heads = {r.name: rewrite_heads(r) for r in rules if fired.get(r.name)}
    by_class = {view.lets[let]: rule for let, rule in inserted.items() if let in view.lets}
    used: Counter = Counter()
    for cls, node_id in choice.items():
        if view.sort.get(cls) != "Tensor":
            continue
        if cls in by_class and node_id not in original.get(cls, ()):
            used[by_class[cls]] += 1
            continue
        after = view.nodes[node_id].ctor
        befores = [view.nodes[n].ctor for n in original.get(cls, ()) if n != node_id] or (
            [None] if cls not in original else [])
        for before in befores:
            for name, (lhs, rhs) in heads.items():
                if (not lhs or before in lhs) and (after in rhs or "*" in rhs) and rhs:
                    used[name] += 1
    return dict(used)
