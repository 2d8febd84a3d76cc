"""Loading a ``Program`` in bulk: its terms as rows of primitive relations, read by egglog's
``input``, and one loading rule per constructor that turns each row into its term (issue 30).

One egglog command costs ~45 µs to run and ~15 µs to parse however little it does, and a graph
needs ~3 per node (the term, its shape, its dtype): 15k nodes took 3.5 s to load. Here every term,
fact and name becomes a row of integers (``load-<ctor>(id, operand ids…)``): a term operand is the
id of its row, strings and int vectors are numbered once each (``load-str``, ``load-vec``). The
rules build ``(LoadId id)`` terms (``schema.ID_CTORS``) and union each with its definition, so no
row waits for another and one iteration loads everything; the rows and the ``LoadId`` e-nodes are
deleted afterwards, so extraction, the analysis and the e-graph's size never see them. A name bound
by an earlier load is read back through its name function (``load-ref-<Name>``).

Strings egglog's ``input`` would read differently (tabs, newlines, surrounding blanks, unprintable
characters) and vectors longer than ``MAX_VEC`` are set by one command each: they are few.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable

from . import ops, rulelang as rl
from .schema import DTYPE_OF, ID_CTORS, NAME_CTORS, SHAPE, IsParam, KeepsDtype, Same
from .terms import IVec, Program, Ref, Term, TList, sort_of

MAX_VEC = 8  # int vectors up to this length are rows of ``load-vec<k>``; longer ones one command each
TERM_SORTS = {ops.TENSOR, ops.TTUPLE, ops.TLIST}
ID_OF_SORT = {sort: ctor for ctor, sort in ID_CTORS.items()}
NAME_OF_SORT = {sort: ctor for ctor, sort in NAME_CTORS.items()}
RULESETS = ("load-vectors", "load-terms", "load-drop")  # run in this order, one iteration each
I64 = range(-2**63, 2**63)

STR = rl.Function("load-str", (rl.INT,), rl.STR)
VEC = rl.Function("load-vec", (rl.INT,), rl.IVEC)


def _rel(name: str, arity: int) -> rl.Relation:
    return rl.Relation(f"load-{name}", (rl.INT,) * arity)


@dataclass(frozen=True)
class Tables:
    """The relations rows go into (by statement kind or constructor), their declarations and the
    clauses of each loading ruleset."""

    ctor: dict[str, rl.Relation]
    name: dict[str, rl.Relation]   # name constructor → (string id, term id)
    ref: dict[str, rl.Relation]    # name constructor → (term id, string id)
    alias: dict[str, rl.Relation]  # term sort → (id, id): the same term (a name bound to a name)
    fact: dict[str, rl.Relation]   # same / param / shape / dtype / keeps
    vec: tuple[rl.Relation, ...]   # by length
    decls: tuple = ()
    clauses: dict[str, tuple] = field(default_factory=dict)  # ruleset → clauses


@lru_cache(maxsize=4)
def tables(version: int = 0) -> Tables:
    """The loading tables and rules of the registry's constructors (``ops.version()``)."""
    ctors = ops.constructors()
    t = Tables(ctor={c: _rel(c, 1 + len(args)) for c, (args, _) in ctors.items()},
               name={n: _rel(n, 2) for n in NAME_CTORS}, ref={n: _rel(f"ref-{n}", 2) for n in NAME_CTORS},
               alias={s: _rel(f"alias-{ID_OF_SORT[s]}", 2) for s in ID_OF_SORT},
               fact={"same": _rel("same", 2), "param": _rel("param", 1), "shape": _rel("shape", 2),
                     "dtype": _rel("dtype", 2), "keeps": _rel("keeps", 1)},
               vec=tuple(_rel(f"vec{k}", 1 + k) for k in range(MAX_VEC + 1)))
    i = rl.Var("i", rl.INT)
    load: list[rl.Clause] = []
    for c, (args, sort) in ctors.items():
        cols = rl.variables(" ".join(f"a{k}" for k in range(len(args))), rl.INT) if args else []
        facts, operands = [t.ctor[c](i, *cols)], []
        for k, (col, s) in enumerate(zip(cols, args)):
            if s in TERM_SORTS:
                operands.append(_id(s, col))
            else:
                operands.append(_decoded(s, col, f"v{k}", facts))
        load.append(rl.rule(*facts).then(rl.union(_id(sort, i), rl.Call(c, tuple(operands), sort))))
    s, x = rl.Var("s", rl.INT), rl.Var("x", rl.STR)
    for n, sort in NAME_CTORS.items():
        name = rl.Function(n, (rl.STR,), sort)
        load.append(rl.rule(t.name[n](s, i), x == STR(s)).then(rl.set_(name(x), _id(sort, i))))
        term = rl.Var("t", sort)
        load.append(rl.rule(t.ref[n](i, s), x == STR(s), term == name(x)).then(rl.union(_id(sort, i), term)))
    j, v = rl.Var("j", rl.INT), rl.Var("v", rl.IVEC)
    load += [rl.rule(rel(i, j)).then(rl.union(_id(sort, i), _id(sort, j))) for sort, rel in t.alias.items()]
    f, T = t.fact, ops.TENSOR
    load += [rl.rule(f["same"](i, j)).then(Same(_id(T, i), _id(T, j))),
             rl.rule(f["param"](i)).then(IsParam(_id(T, i))),
             rl.rule(f["shape"](i, j), v == VEC(j)).then(rl.set_(SHAPE(_id(T, i)), v)),
             rl.rule(f["dtype"](i, s), x == STR(s)).then(rl.set_(DTYPE_OF(_id(T, i)), x)),
             rl.rule(f["keeps"](s), x == STR(s)).then(KeepsDtype(x))]
    vec = []
    for k, rel in enumerate(t.vec):
        ds = rl.variables(" ".join(f"d{m}" for m in range(k)), rl.INT) if k else []
        vec.append(rl.rule(rel(i, *ds)).then(rl.set_(VEC(i), rl.vec(*ds))))
    relations = [*t.ctor.values(), *t.name.values(), *t.ref.values(), *t.alias.values(), *t.fact.values(), *t.vec]
    drop = [rl.rule(rel(*vs)).then(rl.Delete(rel(*vs)))
            for rel in relations for vs in [rl.variables(" ".join(f"a{k}" for k in range(len(rel.sorts))), rl.INT)]]
    drop += [rl.rule(x == STR(i)).then(rl.Delete(STR(i))), rl.rule(v == VEC(i)).then(rl.Delete(VEC(i)))]
    drop += [rl.rule(rl.Call(c, (i,), sort)).then(rl.Delete(rl.Call(c, (i,), sort))) for c, sort in ID_CTORS.items()]
    return Tables(t.ctor, t.name, t.ref, t.alias, t.fact, t.vec, decls=(STR, VEC, *relations),
                  clauses=dict(zip(RULESETS, (tuple(vec), tuple(load), tuple(drop)))))


def _id(sort: str, i: rl.Expr) -> rl.Call:
    return rl.Call(ID_OF_SORT[sort], (i,), sort)


def _decoded(sort: str, col: rl.Var, name: str, facts: list) -> rl.Expr:
    """A primitive operand: an int as it is, a string or a vector looked up by its number."""
    if sort == ops.INT:
        return col
    value = rl.Var(name, rl.STR if sort == ops.STRING else rl.IVEC)
    facts.append(value == (STR if sort == ops.STRING else VEC)(col))
    return value


class LoadError(ValueError):
    """A statement the bulk loader cannot express (an unknown constructor, an operand of the wrong
    sort): raised before anything reaches the e-graph."""


class Batch:
    """One program as rows, ready for ``input``: ``rows`` (tab-separated lines) by relation,
    ``commands`` (typed actions) for the strings and vectors ``input`` cannot carry. ``bound``: names
    bound by earlier loads (their first binding stands, as a name function's ``:merge old`` keeps
    it); ``next_id``: the session's next free term number. Identical terms are not merged here:
    egglog's hash-consing does it (hashing a term in Python costs more than its row)."""

    def __init__(self, bound: set[str], next_id: int):
        self.bound, self.next_id = bound, next_id
        self.tables = tables(ops.version())
        self.ctors = {c: (args, sort, self.tables.ctor[c].name) for c, (args, sort) in ops.constructors().items()}
        self.rows: dict[str, list[str]] = {}
        self.commands: list = []
        self.strings: dict[str, int] = {}
        self.vectors: dict[tuple, int] = {}
        self.names: dict[str, tuple[int, str]] = {}  # name bound here → (id, sort)
        self.refs: dict[tuple[str, str], int] = {}   # name bound before → id

    def add(self, program: Program, check: Callable[[], None] | None = None, every: int = 4096) -> None:
        """The rows of ``program``'s statements; ``check()`` runs every ``every`` statements."""
        sts, sorts, fact = program.statements, program.sorts, self.tables.fact
        for st in sts:  # a name is bound by its first let (refs before it included)
            if st[0] == "let" and st[1] not in self.bound and st[1] not in self.names:
                self.names[st[1]] = (self._new(), sort_of(st[2], sorts))
        first: set[str] = set()
        for k, st in enumerate(sts):
            if check is not None and k % every == 0:
                check()
            kind = st[0]
            if kind == "let":
                name = st[1]
                if name in self.names and name not in first:
                    first.add(name)
                    i, sort = self.names[name]
                    self._term(st[2], sorts, into=(i, sort))
                    self._row(self.tables.name[NAME_OF_SORT[sort]].name, self._str(name), i)
                else:  # a name bound before keeps its term; this one is added unnamed
                    self._term(st[2], sorts)
            elif kind == "same":
                self._row(fact["same"].name, self._tensor(st[1], sorts), self._tensor(st[2], sorts))
            elif kind == "param":
                self._row(fact["param"].name, self._tensor(st[1], sorts))
            elif kind == "shape":
                self._row(fact["shape"].name, self._tensor(st[1], sorts), self._vec(st[2]))
            elif kind == "dtype":
                self._row(fact["dtype"].name, self._tensor(st[1], sorts), self._str(st[2]))
            elif kind == "keeps":
                self._row(fact["keeps"].name, self._str(st[1]))
            else:
                raise LoadError(f"unknown statement {kind!r}")
        self.bound.update(self.names)

    def files(self, folder: str) -> list[tuple[str, str]]:
        """Write each relation's rows to ``folder``: (relation, path) to ``input``."""
        out = []
        for rel, lines in self.rows.items():
            path = os.path.join(folder, f"{rel}.tsv")
            with open(path, "w", encoding="utf-8") as fh:
                fh.write("\n".join(lines) + "\n")
            out.append((rel, path))
        return out

    # -- rows ------------------------------------------------------------------------------------
    def _new(self) -> int:
        self.next_id += 1
        return self.next_id

    def _row(self, rel: str, *values) -> None:
        line = "\t".join(map(str, values))
        try:
            self.rows[rel].append(line)
        except KeyError:
            self.rows[rel] = [line]

    def _str(self, s: Any) -> int:
        k = self.strings.get(s)
        if k is None:
            if not isinstance(s, str):
                raise LoadError(f"{s!r} is not a string")
            k = self.strings[s] = len(self.strings)
            if s.isprintable() and s == s.strip():  # read back exactly by ``input``
                self._row(STR.name, k, s)
            else:
                self.commands.append(rl.set_(STR(rl.Lit(k, rl.INT)), rl.Lit(s, rl.STR)))
        return k

    def _vec(self, items: tuple) -> int:
        k = self.vectors.get(items)
        if k is None:
            k = self.vectors[items] = len(self.vectors)
            dims = [self._int(d) for d in items]
            if len(dims) <= MAX_VEC:
                self._row(self.tables.vec[len(dims)].name, k, *dims)
            else:
                self.commands.append(rl.set_(VEC(rl.Lit(k, rl.INT)), rl.vec(*dims)))
        return k

    @staticmethod
    def _int(x: Any) -> int:
        if type(x) is int and -2**63 <= x < 2**63:
            return x
        if isinstance(x, bool) or not isinstance(x, int) or int(x) not in I64:
            raise LoadError(f"{x!r} is not an i64")
        return int(x)

    def _tensor(self, x: Any, sorts) -> int:
        i, sort = self._operand(x, sorts)
        if sort != ops.TENSOR:
            raise LoadError(f"{x!r} is a {sort}, not a Tensor")
        return i

    def _operand(self, x: Any, sorts) -> tuple[int, str]:
        """(id, sort) of a term operand: a name, a term or a list."""
        if type(x) is Ref:
            got = self.names.get(x.let)
            if got is not None:
                return got
            sort = sorts.get(x.let, x.sort)
            key = (x.let, sort)
            i = self.refs.get(key)
            if i is None:
                i = self.refs[key] = self._new()
                self._row(self.tables.ref[NAME_OF_SORT[sort]].name, i, self._str(x.let))
            return i, sort
        if isinstance(x, Term):
            return self._ctor(x, sorts, None)
        if isinstance(x, TList):
            return self._list(x, sorts)
        raise LoadError(f"{x!r} is not a term")

    def _term(self, x: Any, sorts, into: tuple[int, str] | None = None) -> tuple[int, str]:
        """Rows for term ``x`` (and its operands); its id, ``into``'s when given (a let's name)."""
        if into is not None and isinstance(x, Term):
            return self._ctor(x, sorts, into)
        got = self._operand(x, sorts)
        if into is not None and got[0] != into[0]:  # a name bound to a name or a list
            if got[1] != into[1]:
                raise LoadError(f"{x!r} is a {got[1]}, bound as a {into[1]}")
            self._row(self.tables.alias[got[1]].name, into[0], got[0])
        return got

    def _ctor(self, x: Term, sorts, into) -> tuple[int, str]:
        sig = self.ctors.get(x.ctor)
        if sig is None:
            raise LoadError(f"no constructor {x.ctor!r}")
        args, sort, rel = sig
        if len(args) != len(x.args):
            raise LoadError(f"{x.ctor} takes {len(args)} arguments, got {len(x.args)}")
        if into is not None and into[1] != sort:
            raise LoadError(f"{x!r} is a {sort}, bound as a {into[1]}")
        cols = [into[0] if into is not None else self._new()]
        for a, s in zip(x.args, args):
            if s in TERM_SORTS:
                i, got = self._operand(a, sorts)
                if got != s:
                    raise LoadError(f"{x.ctor}: {a!r} is a {got}, not a {s}")
                cols.append(i)
            elif s == ops.STRING:
                cols.append(self._str(a))
            elif s == ops.IVEC:
                if type(a) is not IVec:
                    raise LoadError(f"{x.ctor}: {a!r} is not an IVec")
                cols.append(self._vec(a.items))
            else:
                cols.append(self._int(a))
        self._row(rel, *cols)
        return cols[0], sort

    def _list(self, x: TList, sorts) -> tuple[int, str]:
        if x.tail is not None:
            tail, got = self._operand(x.tail, sorts)
            if got != ops.TLIST:
                raise LoadError(f"list tail {x.tail!r} is a {got}")
        else:
            tail = self._new()
            self._row(self.tables.ctor[ops.Ctor.NIL].name, tail)
        cons = self.tables.ctor[ops.Ctor.CONS].name
        for item in reversed(x.items):
            head, got = self._operand(item, sorts)
            if got != ops.TENSOR:
                raise LoadError(f"list item {item!r} is a {got}")
            cell = self._new()
            self._row(cons, cell, head, tail)
            tail = cell
        return tail, ops.TLIST
