"""The rule library: every built-in rule, user registrations, and selection by family or name."""
from __future__ import annotations

from typing import Iterable

from eqsat.rule import Rule

from .basic import BASIC_RULES
from .shape import SHAPE_RULES

_USER_RULES: list[Rule] = []


def builtin_rules() -> list[Rule]:
    return list(BASIC_RULES)


def register(*rules: Rule) -> None:
    """Add user rules; they run with the built-in ones in every later compile."""
    names = {r.name for r in all_rules()}
    for r in rules:
        if r.name in names:
            raise ValueError(f"rule {r.name!r} is already registered")
        names.add(r.name)
        _USER_RULES.append(r)


def all_rules() -> list[Rule]:
    return builtin_rules() + list(_USER_RULES)


def select(families: Iterable[str] | None = None, disabled: Iterable[str] = (),
           extra: Iterable[Rule] = ()) -> list[Rule]:
    """Rules to run: all (or the named families), minus rules or families named in ``disabled``."""
    off = set(disabled)
    fams = set(families) if families is not None else None
    rules = all_rules() + list(extra)
    return [r for r in rules
            if r.name not in off and r.family not in off and (fams is None or r.family in fams)]


def shape_rules() -> list[Rule]:
    return list(SHAPE_RULES)
