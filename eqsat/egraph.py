"""A saturation session: the one door into egglog. Terms and facts go in as a typed ``Program``
(``eqsat.terms``), rules as ``Rule`` values; saturation runs under a budget; the e-graph comes out
serialized.

egglog 13.2 has no time or node limit, so the session runs one iteration at a time inside
``push``/``pop`` and rolls back the iteration that overshoots the node budget. A large program loads in
bulk (``eqsat.bulk``: ``input`` rows and one run of loading rules, issue 30); other commands are parsed
one at a time (parsing one giant program exhausts memory) and run in chunks.

Linear in graph size (issue #14; profiles on a 4,096-way split→sigmoid→cat, 2-core box): names are
rows of a name function, not global ``let``s (``schema.NAME_CTORS``); the term part is read from
egglog's frozen tables, not its JSON (``eqsat.frozen``); each analysis rule saturates in a ruleset
of its own (``ANALYSIS_CHUNK``).
"""
from __future__ import annotations

import json
import logging
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass, field
from collections import Counter, OrderedDict
from typing import Any, Iterable, Sequence

import egglog.bindings as bindings

from . import bulk, schema, to_egglog
from .budget import Budget  # noqa: F401  (re-exported: ``eqsat.egraph.Budget``)
from .budget import price
from .deadline import Deadline
from .frozen import frozen_view
from .ops import version as ops_version
from .rule import Rule, rule_of_tag
from .rulelang import Clause
from .serialized import EGraphView
from .terms import Program, Ref

# egglog logs every command at INFO; keep it quiet unless the user configured it.
for _name in ("egglog", "egglog.egraph"):
    if logging.getLogger(_name).level == logging.NOTSET:
        logging.getLogger(_name).setLevel(logging.WARNING)
from .schema import ANALYSIS, SEED_RULESET


@dataclass
class SaturationLog:
    sizes: list[int] = field(default_factory=list)  # e-graph size after build, then per iteration
    fired: Counter = field(default_factory=Counter)
    stop_reason: str = ""
    seconds: float = 0.0


class EGraphError(RuntimeError):
    """egglog refused a command: the message carries the command text."""


class Session:
    """One e-graph: schema + rules, then terms, then budgeted saturation and serialization."""

    # Load programs of at least ``bulk_from`` statements in bulk (``eqsat.bulk``), smaller ones (and
    # all with ``bulk = False``) one egglog command per statement: declaring the loading tables and
    # rules costs ~20 ms once per session, a command ~20 µs of CPU more than a row.
    bulk = True
    bulk_from = 1024

    def __init__(self, rules: Iterable[Rule], shape_rules: Iterable[Rule] = ()):
        self._bound: set[str] = set()  # names bound by ``load`` so far (a later let keeps the first)
        self._next_id = 0  # numbers ``eqsat.bulk`` gives terms while they load
        self._bulk_declared = False
        self._analysis_sets: list[str] = []
        self._setup: list[tuple[str, str | None]] = []  # (command, the rule it loads): see ``_LOADED``
        self._loaded: _Loaded | None = None
        self._plan(schema.sorts())
        for f in schema.dtype_facts():
            self._plan(to_egglog.action(f))
        self.rules = list(rules)
        families = sorted({r.family for r in self.rules} | {ANALYSIS})
        for fam in families + [SEED_RULESET]:
            self._plan(to_egglog.ruleset(fam))
        self._plan(to_egglog.clause(schema.SEED_RULE, SEED_RULESET, "same"))
        seen: set[str] = set()
        for r in list(shape_rules) + self.rules:
            self._plan_rule(r, seen)
        self.families = [f for f in families if f != ANALYSIS]
        self._rule_names = {r.name for r in self.rules}
        self._eg = _LOADED.take(self)

    def _plan(self, text: str, rule: str | None = None) -> None:
        self._setup.append((text, rule))

    def _plan_rule(self, r: Rule, seen: set[str]) -> None:
        """Declare what ``r`` needs (once per session), then its clauses in its family's ruleset, each
        under its tag; analysis clauses get rulesets of their own (``ANALYSIS_CHUNK``)."""
        for d in r.decls:
            text = to_egglog.clause(d) if isinstance(d, Clause) else to_egglog.declaration(d)
            if text not in seen:
                seen.add(text)
                self._plan(to_egglog.clause(d, self._analysis_ruleset()) if isinstance(d, Clause) else text, r.name)
        for c, tag in zip(r.clauses, r.tags()):
            ruleset = self._analysis_ruleset() if r.family == ANALYSIS else r.family
            self._plan(to_egglog.clause(c, ruleset, tag), r.name)

    def _load_setup(self) -> bindings.EGraph:
        """A new e-graph with the schema and the rules (``_setup``) loaded."""
        self._eg = bindings.EGraph()
        for text, rule in self._setup:
            try:
                self._command(text)
            except EGraphError as e:
                raise EGraphError(f"rule {rule!r} does not compile: {e}" if rule else str(e)) from None
        return self._eg

    # Analysis rules each get a ruleset of their own, saturated one after another (ANALYSIS_CHUNK
    # per command, the deadline checked between commands) until a whole pass changes nothing: the
    # same fixpoint as running them together. A command costs ~0.2 ms however little it does: one
    # rule a command, a 34-node graph's 9,974 commands took 2.2 s of its saturation, 16 a command
    # (644 commands) 0.9 s, the same e-graph sizes after every iteration.
    # An egglog iteration costs every rule of its ruleset time that grows with the tables they read,
    # and the analysis walks long lists one cell per iteration: 2,051 iterations of all 268 analysis
    # rules on a 1,024-way split→sigmoid→cat took 4.0 s, each rule saturated alone 0.19 s
    # (4,096 pieces: 0.77 s; before, ~9 iterations per piece over all rules, quadratic).
    ANALYSIS_CHUNK = 16

    def _analysis_ruleset(self) -> str:
        """A new ruleset for one analysis clause (declared here)."""
        name = f"{ANALYSIS}-{len(self._analysis_sets)}"  # no family can be called this (identifiers)
        self._analysis_sets.append(name)
        self._plan(to_egglog.ruleset(name))
        return name

    # -- typed input ----------------------------------------------------------------------------
    def load(self, program: Program, deadline: Deadline | None = None, reserve: float = 0.0) -> None:
        """Run a recorded program (lets, facts, ``same`` pairs); raises ``OutOfTime`` (leaving the
        program half loaded) when less than ``reserve`` seconds of ``deadline`` are left between two
        steps (chunks of statements)."""
        if self.bulk and len(program) >= self.bulk_from:
            return self._load_bulk(program, deadline, reserve)
        self.commands(program.commands, deadline=deadline, reserve=reserve)
        self._bound.update(st[1] for st in program.statements if st[0] == "let")

    def _load_bulk(self, program: Program, deadline: Deadline | None, reserve: float) -> None:
        """``program`` as rows read by ``input`` and one run of the loading rules (``eqsat.bulk``)."""
        def check():
            if deadline is not None:
                deadline.check("build", reserve)

        if not self._bulk_declared:
            t = bulk.tables(ops_version())
            for name in bulk.RULESETS:
                self._run(to_egglog.ruleset(name))
            self.commands([to_egglog.declaration(d) for d in t.decls]
                          + [to_egglog.clause(c, rs) for rs, cs in t.clauses.items() for c in cs])
            self._bulk_declared = True
        batch = bulk.Batch(self._bound, self._next_id)
        try:
            batch.add(program, check)
        except bulk.LoadError as e:
            raise EGraphError(f"cannot load: {e}") from None
        self._next_id = batch.next_id
        check()
        if deadline is not None:  # reading the rows and running the loading rules cannot stop
            deadline.check_affords("load", len(program), reserve)
        with tempfile.TemporaryDirectory(prefix="eqsat-load-") as folder:
            self.commands([to_egglog.action(a) for a in batch.commands]
                          + [to_egglog.input_rows(rel, path) for rel, path in batch.files(folder)])
        check()
        self._command(f"(run-schedule (seq {' '.join(f'(run {r})' for r in bulk.RULESETS)}))")

    def let(self, name: str, term: Any) -> Ref:
        p = Program()
        ref = p.let(name, term)
        self.load(p)
        return ref

    def same(self, x: Any, term: Any) -> None:
        p = Program()
        p.same(x, term)
        self.load(p)

    def mark_param(self, x: Any) -> None:
        p = Program()
        p.mark_param(x)
        self.load(p)

    def set_shape(self, x: Any, shape: Sequence[int]) -> None:
        p = Program()
        p.set_shape(x, shape)
        self.load(p)

    def set_dtype(self, x: Any, dtype: str) -> None:
        p = Program()
        p.set_dtype(x, dtype)
        self.load(p)

    # -- raw commands (the engine's own; ``_command`` is also the hook tests probe the e-graph with) ----
    def _run(self, program: str):
        out = _run(self._eg, program)
        if self._loaded is not None and program in _SNAPSHOTS:
            self._loaded.depth += _SNAPSHOTS[program]
        return out

    def _command(self, text: str):
        """Run one egglog command (or a few short ones), errors as ``EGraphError``."""
        try:
            return self._run(text)
        except Exception as e:  # egglog raises EggSmolError with the parse/type error
            raise EGraphError(f"{e} in: {text[:300]}") from None

    def commands(self, texts: Iterable[str], chunk: int = 256, deadline: Deadline | None = None,
                 reserve: float = 0.0) -> None:
        """Run many commands: parsed one by one (parsing a big program at once is quadratic), run in
        chunks (one call per command costs a round trip each); the deadline (less ``reserve``) is
        checked per chunk (~15 ms of egglog's ~60 µs a command, so a short budget stops promptly)."""
        texts, last = list(texts), 0.0
        for start in range(0, len(texts), chunk):
            if deadline is not None:  # the next chunk priced as the last one took
                deadline.check("build", reserve + last)
            started = time.perf_counter()
            parsed = []
            for t in texts[start:start + chunk]:
                try:
                    parsed.extend(self._eg.parse_program(t))
                except Exception as e:
                    raise EGraphError(f"{e} in: {t[:300]}") from None
            try:
                self._eg.run_program(*parsed)
            except Exception as e:
                raise EGraphError(f"{e} in commands {start}..{start + chunk}") from None
            last = time.perf_counter() - started

    def seed(self) -> None:
        """Union the ``Same`` pairs inserted so far (one rebuild for all of them)."""
        self._run(f"(run-schedule (run {SEED_RULESET}))")

    def size(self) -> int:
        """Rows in every table: the e-graph size the budget is checked against."""
        return _size(self._eg)

    # -- saturation ------------------------------------------------------------------------------
    def saturate(self, budget: Budget, families: Iterable[str] | None = None,
                 deadline: Deadline | None = None, reserve: float = 0.0) -> SaturationLog:
        """Run the chosen families one iteration at a time, with shape analysis to a fixpoint.

        Work: ``budget.iterations`` rule iterations, ``budget.nodes`` e-graph rows,
        ``budget.analysis_passes`` passes per analysis fixpoint. An iteration that could overshoot the
        node budget runs on a snapshot (``push``) and is rolled back when it does; snapshots copy the
        whole e-graph, so an iteration that cannot overshoot (the e-graph would have to more than
        double, and twice the worst growth seen so far) runs without one.

        Wall clock, the outer safety only: ``deadline`` (default: ``budget.seconds`` from now) less
        ``reserve`` seconds is checked between iterations and between analysis commands. Stopping
        early keeps the e-graph as it is: every fact in it is true, only some rewrites are missing.
        """
        deadline = deadline or Deadline(budget.seconds)
        fams = [f for f in (families if families is not None else self.families) if f in self.families]
        log = SaturationLog()
        t0 = time.perf_counter()
        self.seed()
        self._analyse(budget, deadline, reserve, None)
        log.sizes.append(self.size())
        log.stop_reason = "no rules" if not fams else "iteration budget"
        step = f"(run-schedule (seq {' '.join(f'(run {f})' for f in fams)}))"
        growth, last = 1.0, 0.0
        for it in range(budget.iterations if fams else 0):
            size = log.sizes[-1]
            # an iteration cannot stop once started: it is priced as the last one grown by the growth
            # seen so far (the first by the e-graph's size), plus extracting from the e-graph it leaves
            iteration = last * growth if last else price("iterate", size)
            if deadline.out_of_time("saturate", reserve + iteration + price("extract", int(size * growth))):
                break
            started = time.perf_counter()
            snapshot = size * max(2.0, 2 * growth) > budget.nodes
            if snapshot:
                self._run("(push)")
            (out,) = self._run(step)
            self._count_fired(out, log)
            updated = self._analyse(budget, deadline, reserve, log) or out.report.updated
            n = self.size()
            growth, last = max(growth, n / max(size, 1)), time.perf_counter() - started
            if n > budget.nodes:
                if snapshot:
                    self._run("(pop)")
                    log.stop_reason = f"node budget: iteration {it + 1} reached {n} > {budget.nodes}, rolled back"
                else:
                    log.sizes.append(n)
                    log.stop_reason = f"node budget: iteration {it + 1} reached {n} > {budget.nodes}, kept"
                break
            log.sizes.append(n)
            if not updated:
                log.stop_reason = "saturated"
                break
        if deadline.hit in ("analysis", "saturate"):
            log.stop_reason = f"time budget ({deadline.hit})"
        log.seconds = time.perf_counter() - t0
        return log

    def _analyse(self, budget: Budget, deadline: Deadline, reserve: float, log: SaturationLog | None) -> bool:
        """The analysis rules to a fixpoint, each saturated on its own (see ``ANALYSIS_CHUNK``), at
        most ``budget.analysis_passes`` passes (the deadline, less ``reserve``, checked between
        commands); whether anything changed. Rules that fire here count in ``log`` (None: before any
        rewrite)."""
        sets = self._analysis_sets
        steps = [f"(run-schedule (seq {' '.join(f'(saturate (run {a}))' for a in sets[k:k + self.ANALYSIS_CHUNK])}))"
                 for k in range(0, len(sets), self.ANALYSIS_CHUNK)]
        updated, last = False, 0.0
        for _ in range(budget.analysis_passes):
            changed = False
            for step in steps:
                if deadline.out_of_time("analysis", reserve + last):  # the next step priced as the last took
                    return updated
                started = time.perf_counter()
                (out,) = self._run(step)
                last = time.perf_counter() - started
                if log is not None:
                    self._count_fired(out, log)
                changed |= out.report.updated
            updated |= changed
            if not changed:
                break
        return updated

    def _count_fired(self, out, log: SaturationLog) -> None:
        for tag, k in out.report.num_matches_per_rule.items():
            if k and rule_of_tag(tag) in self._rule_names:
                log.fired[rule_of_tag(tag)] += k

    # -- export ----------------------------------------------------------------------------------
    def view(self) -> EGraphView:
        """The term part of the e-graph with its names and analyses, read from egglog's tables
        (linear; the JSON serializer is quadratic here, see ``eqsat.frozen``)."""
        return frozen_view(self._eg)

    def serialize(self) -> dict:
        """The e-graph as egraph-serialize JSON (nodes, class_data with ``let`` names)."""
        return json.loads(self._eg.serialize([]).to_json())


def _run(eg: bindings.EGraph, program: str):
    return eg.run_program(*eg.parse_program(program))


def _size(eg: bindings.EGraph) -> int:
    (out,) = _run(eg, "(print-size)")
    return sum(n for _, n in out.sizes)


_SNAPSHOTS = {"(push)": 1, "(pop)": -1}


@dataclass
class _Loaded:
    """An e-graph whose rules-only state is kept as its bottom snapshot (``push``)."""

    eg: bindings.EGraph
    rows: int                            # the size of that state
    owner: weakref.ref                   # the last session given it
    depth: int = 0                       # snapshots that session took and did not pop

    def rewind(self) -> bool:
        """Back to the rules-only state, kept again; False (the e-graph unusable) when it is not."""
        try:
            _run(self.eg, f"(pop {self.depth + 1})")
            rows = _size(self.eg)
            _run(self.eg, "(push)")
        except Exception:  # noqa: BLE001 — a state we cannot rewind is thrown away, not reused
            return False
        self.depth = 0
        return rows == self.rows


class _Pool:
    """E-graphs with the rules loaded, reused by the next session of the same setup commands.

    egglog compiles each of the ~850 rule commands as it loads them: ~0.15 s of CPU a session, the
    same for a 10-node graph as for a 1,000-node one (the soak's cases build ~2 sessions each: 45 %
    of their CPU). Restoring a snapshot of the loaded state (``pop``, then ``push`` it again) costs
    ~0.02 s. Only an e-graph no live session holds is reused (a weak reference to its last session),
    so a session never sees another's terms; rewinding is checked by the state's size, and an
    e-graph that fails it is dropped for a fresh one. The main thread's only: egglog's e-graph may
    only be dropped on the thread that made it, and a pool kept by another thread (CUDA's autograd
    thread compiles backward graphs) is dropped by the main thread at exit ("EGraph is unsendable,
    but is being dropped on another thread"); elsewhere a session loads its own, dropped with it."""

    KEEP = 8  # setups kept (rule sets: the pipeline's, pricing's, a user's options)

    def __init__(self):
        self.kept: OrderedDict[tuple, _Loaded] = OrderedDict()

    def take(self, session: Session) -> bindings.EGraph:
        if threading.current_thread() is not threading.main_thread():
            return session._load_setup()
        key = tuple(text for text, _ in session._setup)
        kept = self.kept.get(key)
        if kept is not None and kept.owner() is None:
            if kept.rewind():
                kept.owner = weakref.ref(session)
                session._loaded = kept
                self.kept.move_to_end(key)
                return kept.eg
            del self.kept[key]
        eg = session._load_setup()
        if key not in self.kept:  # else a live session holds the kept one: this e-graph is not kept
            rows = _size(eg)
            _run(eg, "(push)")
            session._loaded = self.kept[key] = _Loaded(eg, rows, weakref.ref(session))
            while len(self.kept) > self.KEEP:
                self.kept.popitem(last=False)
        return eg


_LOADED = _Pool()
