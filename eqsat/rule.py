"""A rewrite rule as the engine sees it: a name, a family and typed clauses.

The rule library (``rules/``) and its DSL produce these from ``eqsat.rulelang`` values; the session
compiles them (``eqsat.to_egglog``) into the family's ruleset, each clause tagged with the rule's
name, so the family decides the ruleset and the report can count firings by rule name. Neither
name is ever pasted from a string: both are data the compiler checks.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .ops import Role
from .rulelang import IDENTIFIER, Call, Clause, Decl, Guard, ListExpr, Union, Var


@dataclass(frozen=True)
class Rule:
    name: str
    family: str
    doc: str
    clauses: tuple[Clause, ...]
    # tables and analysis clauses the rule needs, declared once per session in this order
    decls: tuple[Decl, ...] = field(default=())
    # (constructors its pattern's root can be, constructors its replacement builds; "*": the
    # replacement is an existing e-class). The DSL compiler fills it in; None: read off the clauses.
    rewrites: tuple[frozenset[str], frozenset[str]] | None = None

    def __post_init__(self):
        for what, value in (("name", self.name), ("family", self.family)):
            if not isinstance(value, str) or not IDENTIFIER.fullmatch(value):
                raise ValueError(f"rule {what} {value!r} must be an identifier ({IDENTIFIER.pattern})")
        bad = [c for c in self.clauses if not isinstance(c, Clause)]
        if bad:
            raise TypeError(f"rule {self.name!r}: clauses must be rulelang Clauses, got {bad[0]!r}")

    def tags(self) -> list[str]:
        """The name each clause fires under (``name/k`` when there are several)."""
        return [self.name if len(self.clauses) == 1 else f"{self.name}/{k}" for k in range(len(self.clauses))]


def rule_of_tag(tag: str) -> str:
    """The rule name a fired-rule tag belongs to (``merge_splits/1`` → ``merge_splits``)."""
    return tag.split("/", 1)[0]


def _ctors(t) -> set[str]:
    """Constructors a term builds (capitalised calls; primitives and analyses are lower case)."""
    if isinstance(t, ListExpr):
        return set(Role.LIST).union(*(_ctors(i) for i in t.items)) | (_ctors(t.tail) if t.tail is not None else set())
    if not isinstance(t, Call):
        return set()
    return ({t.fn} if t.fn[0].isupper() else set()).union(*(_ctors(a) for a in t.args))


def rewrite_heads(rule: Rule) -> tuple[set[str], set[str]]:
    """(constructors a rule rewrites away, constructors its replacement builds).

    The report uses them to tell which fired rules the extracted program actually relies on: a class
    whose chosen e-node differs from the input's was rewritten by a rule whose pattern has the
    input's constructor at the root and whose replacement builds the chosen one ("*" when the
    replacement is an existing e-class, as in ``cat(split(x)) = x``). DSL and built-in rules say so
    in ``Rule.rewrites``; otherwise each union's sides are read off the clauses.
    """
    if rule.rewrites is not None:
        return set(rule.rewrites[0]), set(rule.rewrites[1])
    lhs: set[str] = set()
    rhs: set[str] = set()
    for c in rule.clauses:
        bound = {f.lhs.name: f.rhs for f in c.facts if isinstance(f, Guard) and f.op == "=" and isinstance(f.lhs, Var)}
        for a in c.actions:
            if isinstance(a, Union):
                root = bound.get(a.a.name) if isinstance(a.a, Var) else a.a
                lhs |= {root.fn} if isinstance(root, Call) and root.fn[0].isupper() else set()
                rhs |= _ctors(a.b) or {"*"}
    return lhs, rhs
