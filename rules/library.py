"""The rule library: every built-in rule, user registrations, and selection by family or name.

A rule is a ``DslRule`` (compiled here, after the checks in ``validate``) or a hand-written
``eqsat.rule.Rule``. ``register`` takes rules or modules of rules; ``select`` also accepts DSL rules
in ``extra`` (that is how ``eqsat_backend(extra_rules=[...])`` reaches it).
"""
from __future__ import annotations

import types
from functools import lru_cache
from typing import Iterable

from eqsat import ops
from eqsat.egraph import EGraphError, Session
from eqsat.rule import Rule
from eqsat.rulelang import Function, Relation
from eqsat.schema import ANALYSIS, SEED_RULESET, declared_names

from eqsat_rules.algebra import ALGEBRA_HAND, algebra_dsl
from eqsat_rules.basic import BASIC_DSL
from eqsat_rules.batch import BATCH_RULES
from eqsat_rules.cat_runs import SPLIT_CAT_HAND
from eqsat_rules.compile import RuleError
from eqsat_rules.decompose import DECOMPOSE_DSL
from eqsat_rules.dsl import DslRule
from eqsat_rules.shape import shape_rules
from eqsat_rules.split_cat import SPLIT_CAT_DSL

_USER_RULES: list[Rule] = []


def builtin_dsl_rules() -> list[DslRule]:
    """The built-in rules written in the DSL (``check`` runs on these)."""
    return BASIC_DSL + SPLIT_CAT_DSL + algebra_dsl() + DECOMPOSE_DSL


@lru_cache(maxsize=4)
def _builtin(version: int) -> tuple[Rule, ...]:
    return tuple(r.compile() for r in builtin_dsl_rules()) + tuple(SPLIT_CAT_HAND + ALGEBRA_HAND + BATCH_RULES)


def builtin_rules() -> list[Rule]:
    """Every built-in rule (rules derived from the registry's rows follow ``eqsat.ops.register``)."""
    return list(_builtin(ops.version()))


def validate(rule: Rule | DslRule, check: bool = True) -> Rule:
    """The rule as the engine runs it, or ``RuleError`` naming the rule and what is wrong with it:
    not a rule, a family named like one of the engine's egglog names, an unbound variable, egglog
    that does not compile, or (DSL rules, unless ``check=False``) a counterexample from
    ``rules.check`` on random admitted instances (a replacement whose shape, dtype or values differ
    from the pattern's) or no admitted instance at all."""
    if getattr(rule, "family", None) in _egglog_names(ops.version()):
        raise RuleError(f"rule {rule.name!r}: family {rule.family!r} is a name the engine declares in egglog"
                        f" (a sort, constructor, function or ruleset); choose another")
    if isinstance(rule, DslRule):
        compiled = rule.compile()
        if check:
            from eqsat_rules.checker import check as run_check  # torch only when a rule is actually checked
            res = run_check(rule)
            if not res.ok:
                raise RuleError(f"{res.problems[0]} (pass check=False to register it unchecked)")
        rule = compiled
    if not isinstance(rule, Rule):
        raise RuleError(f"not a rule: {rule!r} (write one with eqsat_rules.dsl.rewrite)")
    _compiles(rule)
    return rule


@lru_cache(maxsize=4)
def _egglog_names(version: int = 0) -> frozenset[str]:
    """Names a user family cannot take: a family is declared as an egglog ruleset, egglog allows no
    shadowing, and the analysis and seed rulesets are the engine's own."""
    tables = {d.name for r in builtin_rules() + shape_rules() for d in r.decls if isinstance(d, (Relation, Function))}
    return frozenset(declared_names() | tables | {ANALYSIS, SEED_RULESET, "true", "false"})  # literals


@lru_cache(maxsize=256)
def _compiles(rule: Rule) -> None:
    try:
        Session([rule], shape_rules())
    except EGraphError as e:
        raise RuleError(str(e)) from None


def validate_user_rules(rules: Iterable[Rule | DslRule], check: bool = True) -> tuple[Rule, ...]:
    """User rules validated together: each one valid, no two with one name, none named like a
    built-in rule or family (a user rule could otherwise switch a built-in off or shadow it)."""
    taken = {r.name for r in all_rules()} | {r.family for r in all_rules()}
    out = []
    for r in _flatten(rules):
        name = getattr(r, "name", None)
        if name in taken:
            raise RuleError(f"rule name {name!r} is already taken by a built-in or registered rule or family")
        if name is not None:
            taken.add(name)
        out.append(validate(r, check))
    return tuple(out)


def _flatten(items) -> list:
    out = []
    for it in items:
        if isinstance(it, types.ModuleType):
            found = getattr(it, "RULES", None)
            out += list(found) if found is not None else [v for v in vars(it).values()
                                                          if isinstance(v, (Rule, DslRule))]
        elif isinstance(it, (list, tuple)):
            out += _flatten(it)
        else:
            out.append(it)
    return out


def register(*rules: Rule | DslRule | types.ModuleType, check: bool = True) -> None:
    """Add user rules (or every rule of a module: its ``RULES`` list, else its top-level rules);
    they run with the built-in ones in every later compile and report firings under their names.
    Each is checked first (``validate``); ``check=False`` skips the numerical check."""
    _USER_RULES.extend(validate_user_rules(rules, check))


def unregister(*names: str) -> None:
    """Remove user rules by name (tests, notebooks)."""
    _USER_RULES[:] = [r for r in _USER_RULES if r.name not in names]


def all_rules() -> list[Rule]:
    return builtin_rules() + list(_USER_RULES)


def select(families: Iterable[str] | None = None, disabled: Iterable[str] = (),
           extra: Iterable[Rule] = ()) -> list[Rule]:
    """Rules to run: all (or the named families), minus rules or families named in ``disabled``;
    ``extra`` are user rules already validated (``validate_user_rules``)."""
    off = set(disabled)
    fams = set(families) if families is not None else None
    extra = list(extra)
    if fams is not None:
        fams |= {r.family for r in extra}  # rules passed explicitly always run
    rules = all_rules() + extra
    return [r for r in rules
            if r.name not in off and r.family not in off and (fams is None or r.family in fams)]


def known_names(extra: Iterable[Rule] = ()) -> tuple[set[str], set[str]]:
    """(rule names, family names) a user may name in ``families`` / ``disabled``."""
    rules = all_rules() + list(extra)
    return {r.name for r in rules}, {r.family for r in rules}

