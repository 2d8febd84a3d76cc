"""A rewrite rule as the engine sees it: a name, a family and egglog commands.

The rule library (``rules/``) and its DSL produce these; the engine only needs the text. Each command
is one egglog ``rewrite`` / ``birewrite`` / ``rule`` form without ``:ruleset`` / ``:name``: the engine
adds them, so the family decides the ruleset and the report can count firings by rule name.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Rule:
    name: str
    family: str
    doc: str
    commands: tuple[str, ...]
    decls: tuple[str, ...] = field(default=())  # relations/functions the rule needs, declared once

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
