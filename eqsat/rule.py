"""A rewrite rule as the engine sees it: a name, a family and egglog commands.

The rule library (``rules/``) and its DSL produce these; the engine only needs the text. Each command
is one egglog ``rewrite`` / ``birewrite`` / ``rule`` form without ``:ruleset`` / ``:name``: the engine
adds them, so the family decides the ruleset and the report can count firings by rule name.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

# What a rule or family name may be: both are pasted into egglog text (``:ruleset``, ``:name``).
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Rule:
    name: str
    family: str
    doc: str
    commands: tuple[str, ...]
    decls: tuple[str, ...] = field(default=())  # relations/functions the rule needs, declared once
    # (constructors its pattern's root can be, constructors its replacement builds; "*": the
    # replacement is an existing e-class). The DSL compiler fills it in; None: read off the egglog.
    rewrites: tuple[frozenset[str], frozenset[str]] | None = None

    def __post_init__(self):
        for what, value in (("name", self.name), ("family", self.family)):
            if not isinstance(value, str) or not IDENTIFIER.fullmatch(value):
                raise ValueError(f"rule {what} {value!r} must be an identifier ({IDENTIFIER.pattern})")

    def egglog_commands(self) -> list[str]:
        """The commands tagged with this rule's ruleset and name (``name/k`` when there are several)."""
        out = []
        for k, cmd in enumerate(self.commands):
            tag = self.name if len(self.commands) == 1 else f"{self.name}/{k}"
            body = cmd.rstrip()
            if not body.endswith(")"):
                raise ValueError(f"rule {self.name!r}: command {k} is not an s-expression: {cmd!r}")
            out.append(f'{body[:-1]} :ruleset {self.family} :name "{tag}")')
        return out


def rule_of_tag(tag: str) -> str:
    """The rule name a fired-rule tag belongs to (``merge_splits/1`` → ``merge_splits``)."""
    return tag.split("/", 1)[0]


_CTOR = re.compile(r"\((\w+)")
_ROOT = re.compile(r"\(= _root \((\w+)|\(rewrite \((\w+)|\(birewrite \((\w+)")


def rewrite_heads(rule: Rule) -> tuple[set[str], set[str]]:
    """(constructors a rule rewrites away, constructors its replacement builds).

    The report uses them to tell which fired rules the extracted program actually relies on: a class
    whose chosen e-node differs from the input's was rewritten by a rule whose pattern has the
    input's constructor at the root and whose replacement builds the chosen one ("*" when the
    replacement is an existing e-class, as in ``cat(split(x)) = x``). DSL and built-in rules say so
    in ``Rule.rewrites``; only a user's hand-written egglog rule is read off its text.
    """
    if rule.rewrites is not None:
        return set(rule.rewrites[0]), set(rule.rewrites[1])
    lhs: set[str] = set()
    rhs: set[str] = set()
    for cmd in rule.commands:
        lhs.update(h for m in _ROOT.finditer(cmd) for h in m.groups() if h)
        actions = cmd[cmd.find("(union"):] if "(union" in cmd else cmd[cmd.find(")", cmd.find("(rewrite")) + 1:]
        built = {c for c in _CTOR.findall(actions) if c[0].isupper()}
        rhs |= built or {"*"}
    return lhs, rhs
