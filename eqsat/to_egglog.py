"""Typed rules and the schema → egglog text: the one place a rule becomes egglog.

Rules, their tables and analysis clauses are ``eqsat.rulelang`` values; the session asks this module
for the text of each, with the ruleset and the name as data it passes in (``clause(c, ruleset,
name)``). Every name printed is checked here, whoever built the value: variables and rulesets are
identifiers, tables and constructors egglog symbols, strings are quoted (``string``: egglog reads
only the escapes ``\\ \" \n \t``, every other character as it is), so no rule, family or op key can smuggle a command in.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Iterable, Mapping

from . import rulelang as rl

_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t"})


def string(s: str) -> str:
    """An egglog string literal of ``s`` (JSON's ``\\u`` escapes are parse errors in egglog)."""
    return f'"{s.translate(_ESCAPES)}"'


_OPERATORS = frozenset({"+", "-", "*", "/", "%", "=", "!=", "<", "<=", ">", ">="})
_COMPARISONS = frozenset({"=", "!=", "<", "<=", ">", ">="})


def _symbol(name: str) -> str:
    if not isinstance(name, str) or not (name in _OPERATORS or rl.SYMBOL.fullmatch(name)):
        raise ValueError(f"not an egglog symbol: {name!r}")
    return name


def _identifier(what: str, name: str) -> str:
    if not isinstance(name, str) or not rl.IDENTIFIER.fullmatch(name):
        raise ValueError(f"{what} {name!r} must be an identifier ({rl.IDENTIFIER.pattern})")
    return name


def term(t) -> str:
    if isinstance(t, rl.Var):
        return _identifier("variable", t.name)
    if isinstance(t, rl.Lit):
        if isinstance(t.value, bool) or not isinstance(t.value, (int, str)):
            raise TypeError(f"literal {t.value!r} is neither an int nor a string")
        return string(t.value) if isinstance(t.value, str) else str(t.value)
    if isinstance(t, rl.ListExpr):
        out = term(t.tail) if t.tail is not None else "(TNil)"
        for item in reversed(t.items):
            out = f"(TCons {term(item)} {out})"
        return out
    if isinstance(t, rl.Call):
        return f"({_symbol(t.fn)}{''.join(' ' + term(a) for a in t.args)})"
    raise TypeError(f"cannot compile {t!r} to egglog")


def fact(f) -> str:
    """A query fact: a comparison, or a relation row / term that must exist."""
    if isinstance(f, rl.Guard):
        if f.op not in _COMPARISONS:
            raise ValueError(f"unknown comparison {f.op!r}")
        return f"({f.op} {term(f.lhs)} {term(f.rhs)})"
    return term(f)


def action(a) -> str:
    """An action: a union, a table update, a row to delete, or a relation row / term to add."""
    if isinstance(a, rl.Delete):
        return f"(delete {term(a.row)})"
    if isinstance(a, rl.Union):
        return f"(union {term(a.a)} {term(a.b)})"
    if isinstance(a, rl.Set):
        return f"(set {term(a.target)} {term(a.value)})"
    return term(a)


@lru_cache(maxsize=4096)
def declaration(d: rl.Relation | rl.Function) -> str:
    if isinstance(d, rl.Relation):
        return f"(relation {_symbol(d.name)} ({' '.join(rl.EGG_SORT[s] for s in d.sorts)}))"
    if isinstance(d, rl.Function):
        merge = "old" if d.merge == "old" else "(min old new)"
        return (f"(function {_symbol(d.name)} ({' '.join(rl.EGG_SORT[s] for s in d.args)})"
                f" {rl.EGG_SORT[d.out]} :merge {merge})")
    raise TypeError(f"not a declaration: {d!r}")


def clause(c: rl.Clause, ruleset: str | None = None, name: str | None = None) -> str:
    """``(rule (facts) (actions) :ruleset … :name "…")``."""
    tags = (f" :ruleset {_symbol(ruleset)}" if ruleset is not None else "") + (
        f" :name {string(name)}" if name is not None else "")
    return f"{_clause_body(c)}{tags})"


@lru_cache(maxsize=8192)
def _clause_body(c: rl.Clause) -> str:
    """A clause's text without its tags and closing parenthesis; a clause is compiled once (every
    session loads the same rules; clauses hash by identity and the cache keeps them alive)."""
    return f"(rule ({' '.join(fact(f) for f in c.facts)}) ({' '.join(action(a) for a in c.actions)})"


def input_rows(table: str, path: str) -> str:
    """``(input table "path")``: a tab-separated file of primitive values, a row per line, added to
    ``table`` (egglog parses each field by the column's sort; strings are read raw and trimmed)."""
    return f"(input {_symbol(table)} {string(path)})"


def ruleset(name: str) -> str:
    return f"(ruleset {_symbol(name)})"


def datatype(constructors: Mapping[str, tuple[tuple[str, ...], str]], term_sorts: Iterable[str]) -> str:
    """The ``datatype*`` of the term language: every constructor with its argument sorts, by sort."""
    by_sort: dict[str, list[str]] = {s: [] for s in term_sorts}
    for ctor, (args, sort) in constructors.items():
        by_sort[sort].append(f"({_symbol(ctor)}{''.join(' ' + a for a in args)})")
    body = "\n".join(f"  ({sort}\n" + "\n".join(f"    {c}" for c in cs) + ")" for sort, cs in by_sort.items())
    return f"(sort IVec (Vec i64))\n(datatype*\n{body})"
