"""Programs between the input and the extracted one: the extracted program with some rewrites put back.

Extraction optimizes against the cost model, so where the model is wrong about one rewrite, the
extracted program carries it along with the rewrites that pay (DESIGN.md; issue 29: zoo Llama and
Mixtral launched more than the input on the H200). Inductor decides among the input, the extracted
program and these (``eqsat_torch.inductor.verify``). They cost no saturation and no extraction: every e-class
computes one value whichever of its e-nodes is chosen, so a program may take its e-node per class
from either program, as long as the mix is acyclic and complete.

A *site* is a connected group of classes the extracted program computes other than the input does
(the classes its rewrites created included); one rule family's rewrites are the sites the rules of
that family were used in (``eqsat.provenance``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from .extract import put_back, reachable
from .provenance import rules_by_class, rules_used
from .rule import Rule
from .serialized import Choice, EGraphView, walk

# Where the batch fusions inserted from Python (``eqsat_rules.batch``) come from: they are no
# rule of the rule list, so their family is named here.
INSERTED_FAMILY = "batch"


@dataclass(frozen=True)
class Partial:
    """A candidate program: ``name`` says what of the extracted program was put back; ``rules_used``
    what it still relies on."""

    name: str
    choice: Choice
    rules_used: dict[str, int]


def rewrite_sites(view: EGraphView, roots: Iterable[str], choice: Choice,
                  original: Mapping[str, set[str]]) -> list[list[str]]:
    """The connected groups of classes whose chosen e-node is none of the input's (``original``:
    class → the input's e-nodes in it), connected where one reads the other; in the order the
    program's walk first reaches them."""
    order = walk(view, roots, choice).preorder
    changed = {c for c in order if choice[c] not in original.get(c, ())}
    parent = {c: c for c in changed}

    def find(c: str) -> str:
        while parent[c] != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    for c in order:
        if c in changed:
            for k in view.nodes[choice[c]].children:
                if k in changed:
                    parent[find(k)] = find(c)
    sites: dict[str, list[str]] = {}
    for c in order:
        if c in changed:
            sites.setdefault(find(c), []).append(c)
    return list(sites.values())


def partials(view: EGraphView, roots: list[str], choice: Choice, input_choice: Choice,
             original: Mapping[str, set[str]], rules: Iterable[Rule], fired: Mapping[str, int],
             inserted: Mapping[str, str] = {}, most: int = 4) -> list[Partial]:
    """At most ``most`` programs between the input and ``choice``, in this order: where two rules or
    more were used, ``choice`` without the rewrites of each ("no <rule>": a rule the model misprices
    is often used all over, e.g. a batch fusion in every layer); the same by rule family ("no family
    <family>"); where there are 2 to ``most`` sites, ``choice`` with each site put back ("put back
    <k>: <rules>"). A program equal to one before it, to the input or to ``choice`` is left out."""
    rules = list(rules)
    family = {r.name: r.family for r in rules} | {name: INSERTED_FAMILY for name in inserted.values()}
    by_class = rules_by_class(view, choice, original, rules, fired, inserted)
    wanted: list[tuple[str, list[str]]] = []
    for label, of in (("", lambda r: r), ("family ", lambda r: family.get(r, "?"))):
        groups = sorted({of(r) for names in by_class.values() for r in names})
        if len(groups) > 1:
            wanted += [(f"no {label}{g}", [c for c, names in by_class.items() if any(of(r) == g for r in names)])
                       for g in groups]
    sites = rewrite_sites(view, roots, choice, original)
    if 1 < len(sites) <= most:  # one site: putting it back is the input program
        wanted += [(f"put back {k}: {','.join(sorted({r for c in site for r in by_class.get(c, ())})) or '?'}", site)
                   for k, site in enumerate(sites)]
    seen = [reachable(view, roots, input_choice), choice]
    out: list[Partial] = []
    for name, classes in wanted:
        if len(out) >= most:
            break
        mixed = put_back(view, roots, choice, input_choice, classes)
        if mixed is None or mixed in seen:
            continue
        seen.append(mixed)
        kept = {c: n for c, n in mixed.items() if choice.get(c) == n}
        out.append(Partial(name, mixed, rules_used(view, kept, original, rules, fired, inserted)))
    return out
