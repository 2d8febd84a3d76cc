"""Run a DSL rule on random instances and compare pattern and replacement with eager PyTorch.

The pattern is evaluated with torch while its variables are sampled lazily, each in the role where
it first appears (the sizes of a split compose the split extent, a narrow stays in bounds, a second
binary operand is same-shape, rank-0 or size-1 along a dim…); instances the pattern cannot form or
the guard rejects are skipped. The replacement then runs with the same bindings. Here: the sampler
and the run of a rule; ``checker_ops``: how each op is evaluated. The two are the only modules in
``rules`` that import torch.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from functools import lru_cache

import torch

from eqsat import ops
from eqsat_rules import dsl
from eqsat_rules.checker_ops import Reject, UNARY_KEYS, _OpEvaluators
from eqsat_rules.derived import DERIVED
from eqsat_rules.patterns import term_vars


_PRIM = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a // b, "%": lambda a, b: a % b,
    "vec-get": lambda v, i: v[i], "vec-length": len, "vec-append": lambda a, b: tuple(a) + tuple(b),
    "vec-set": lambda v, i, x: tuple(v[:i]) + (x,) + tuple(v[i + 1:]),
    "vec-remove": lambda v, i: tuple(v[:i]) + tuple(v[i + 1:]),
    "vec-push": lambda v, x: tuple(v) + (x,), "vec-of": lambda *xs: tuple(xs), "max": max,
}
MAX_NUMEL = 4096  # sampled tensors stay small, however large the sizes a guard asks for
_CMP = {"=": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


class UnsoundRule(AssertionError):
    """The checker found an instance where pattern and replacement differ."""


class Evaluator(_OpEvaluators):
    """Evaluates terms; in ``sampling`` mode an unbound variable gets a random value fitting its role.
    ``sizes``: extra dim sizes to draw from, for guards that no dim of 1-4 satisfies."""

    def __init__(self, rng: random.Random, sampling: bool = True, sizes: tuple[int, ...] = ()):
        self.rng, self.sampling, self.sizes, self.env = rng, sampling, sizes, {}

    # -- variables ------------------------------------------------------------------------------
    def _bind(self, v, make):
        if id(v) not in self.env:
            if not self.sampling:
                raise RuntimeError(f"variable {v.name} is unbound")
            self.env[id(v)] = make()
        return self.env[id(v)]

    def tensor(self, t, shape=None):
        if isinstance(t, dsl.Var):
            return self._bind(t, lambda: self._randn(shape if shape is not None else self._rand_shape()))
        return self.ev(t)

    def int(self, t, lo: int, hi: int) -> int:
        if isinstance(t, dsl.Var):
            val = self._bind(t, lambda: self.rng.randint(lo, hi) if hi >= lo else self._reject("no room"))
        else:
            val = self.ev(t)
        if self.sampling and not lo <= val <= hi:
            raise Reject(f"{t!r} = {val} outside [{lo}, {hi}]")
        return val

    def ivec(self, t, make):
        return self._bind(t, make) if isinstance(t, dsl.Var) else tuple(self.ev(t))

    def _reject(self, why):
        raise Reject(why)

    def _rand_shape(self, rank: int | None = None):
        if rank is None:
            rank = 0 if self.rng.random() < 0.1 else self.rng.randint(1, 4)
        shape = tuple(self.rng.choice(self.sizes) if self.sizes and self.rng.random() < 0.5
                      else self.rng.randint(1, 4) for _ in range(rank))
        if math.prod(shape) > MAX_NUMEL:
            raise Reject(f"{shape} has more than {MAX_NUMEL} elements")
        return shape

    def _randn(self, shape):
        """Normal values; a quarter of the tensors have about half their entries zero (``any``, ``prod``
        and ``amax`` of non-positive rows read differently then)."""
        dtype = torch.float64 if self.rng.random() < 0.2 else torch.float32
        gen = torch.Generator().manual_seed(self.rng.randrange(1 << 30))
        t = torch.randn(shape, dtype=dtype, generator=gen)
        return t * (torch.rand(shape, generator=gen) < 0.5) if self.rng.random() < 0.25 else t

    def _composition(self, total: int):
        mode = self.rng.choice(("ones", "equal", "random"))
        if mode == "ones":
            return (1,) * total
        if mode == "equal":
            k = self.rng.choice([k for k in range(1, total + 1) if total % k == 0])
            return (total // k,) * k
        cuts = sorted(self.rng.sample(range(1, total), self.rng.randint(0, min(3, total - 1)))) if total > 1 else []
        return tuple(b - a for a, b in zip([0] + cuts, cuts + [total]))

    def _factor(self, numel: int):
        dims, rest = [], numel
        for _ in range(self.rng.randint(0, 2)):
            d = self.rng.choice([k for k in range(1, rest + 1) if rest % k == 0])
            dims.append(d)
            rest //= d
        return tuple(dims + [rest])

    # -- terms ----------------------------------------------------------------------------------
    def ev(self, t):
        if isinstance(t, dsl.Var):
            if t.sort == dsl.TENSOR:
                return self.tensor(t)
            if t.sort == dsl.INT:
                return self.int(t, 0, 3)
            if t.sort == dsl.STR:
                return self._bind(t, lambda: self.rng.choice(UNARY_KEYS))
            if t.sort == dsl.TLIST:
                return self._bind(t, lambda: [self.tensor(dsl.Var("_", dsl.TENSOR)) for _ in range(self.rng.randint(0, 2))])
            return self._bind(t, lambda: self._rand_shape())
        if isinstance(t, dsl.Lit):
            return t.value
        if isinstance(t, (dsl.ListExpr, dsl.Pieces, dsl.Each)):
            return self.tlist(t, None)
        constructor = evaluators().get(t.fn)
        return constructor(self, t, *t.args) if constructor is not None else self._generic(t, *t.args)

    def _generic(self, t, *args):
        if t.fn == "shape":
            return tuple(self.tensor(args[0]).shape)
        if t.fn == "dtype":
            return str(self.tensor(args[0]).dtype).removeprefix("torch.")
        if t.fn in DERIVED:
            return DERIVED[t.fn].py(*(self.ev(a) for a in args))
        if t.fn in _PRIM:
            return _PRIM[t.fn](*(self.ev(a) for a in args))
        raise Reject(f"the checker cannot evaluate {t.fn}")

    def tlist(self, t, hint) -> list:
        """A tensor list; ``hint(ref)`` gives the shape of a tensor sampled after the first one."""
        out: list = []

        def shape_for():
            return hint(out[0]) if hint and out else None

        if isinstance(t, dsl.Var):
            return list(self.ev(t))
        if isinstance(t, dsl.Pieces):
            return [self._each_piece(t, p) for p in self.ev(t.split)]
        if isinstance(t, dsl.Each):
            return self._each(t, shape_for, out)
        for item in t.items:
            out.append(self.tensor(item, shape_for()))
        if t.tail is not None:
            if isinstance(t.tail, dsl.Var) and id(t.tail) not in self.env and self.sampling:
                self.env[id(t.tail)] = [self.tensor(dsl.Var("_", dsl.TENSOR), shape_for())
                                        for _ in range(self.rng.randint(0, 2))]
            out += list(self.ev(t.tail))
        return out

    def _each_piece(self, t: dsl.Pieces, piece):
        if t.each is None:
            return piece
        p = dsl.Var("_p", dsl.TENSOR)
        self.env[id(p)] = piece
        return self.ev(t.each(p))

    def _each(self, t: dsl.Each, shape_for, out):
        bound = id(t.outs[0]) in self.env
        n = len(self.env[id(t.outs[0])]) if bound else self.rng.randint(1, 3)
        cols = [[] for _ in t.outs]
        for k in range(n):
            params = [dsl.Var(f"_a{j}", dsl.TENSOR) for j in range(len(t.outs))]
            for j, p in enumerate(params):
                if bound:
                    self.env[id(p)] = self.env[id(t.outs[j])][k]
            if not bound:
                self.tensor(params[0], shape_for())
            out.append(self.ev(t.template(*params)))
            if t.when and not all(self.holds(g) for g in t.when(*params)):
                raise Reject("element guard")
            for j, p in enumerate(params):
                cols[j].append(self.env[id(p)])
        for o, col in zip(t.outs, cols):
            if len({c.dtype for c in col}) > 1:
                raise Reject("mixed dtypes in a list")
            self.env.setdefault(id(o), col)
        return out

    def holds(self, g: dsl.Guard) -> bool:
        return _CMP[g.op](self.ev(g.lhs), self.ev(g.rhs))


# Named evaluators a registry row can choose (``Op.evaluate``); a row with a declarative ``call`` gets
# the generic one.
NAMED = {
    "narrow": Evaluator._narrow, "view": Evaluator._view, "permute": Evaluator._permute, "expand": Evaluator._expand,
    "unsqueeze": Evaluator._unsqueeze, "squeeze": Evaluator._squeeze, "contiguous": Evaluator._contiguous,
    "cat": Evaluator._cat, "stack": Evaluator._stack, "split": Evaluator._split, "get": Evaluator._get,
    "unary": Evaluator._unary, "binary": Evaluator._binary, "ternary": Evaluator._ternary, "linear": Evaluator._linear,
    "mm": Evaluator._mm, "bmm": Evaluator._bmm, "addmm": Evaluator._addmm, "reduce": Evaluator._reduce,
    "softmax": Evaluator._softmax,
}


@lru_cache(maxsize=4)
def _evaluators(version: int) -> dict:
    table: dict = {}
    for op in ops.ALL_OPS:
        if op.evaluate is not None:
            table.setdefault(op.ctor, NAMED[op.evaluate])
        elif op.call:
            table.setdefault(op.ctor, Evaluator._call)
    return table


def evaluators() -> dict:
    """Constructor → how the checker evaluates it, from the registry's rows."""
    return _evaluators(ops.version())


@dataclass
class CheckResult:
    rule: str
    admitted: int = 0
    tried: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _describe(ev: Evaluator, rule: dsl.DslRule) -> str:
    parts = []
    bound = term_vars(rule.lhs)
    for t in rule.given:
        term_vars(t, bound)
    for v in bound.values():
        val = ev.env.get(id(v))
        if isinstance(val, torch.Tensor):
            val = f"tensor{tuple(val.shape)} {str(val.dtype).removeprefix('torch.')}"
        elif isinstance(val, list):
            val = f"[{len(val)} tensors]"
        parts.append(f"{v.name}={val}")
    return ", ".join(parts)


def _constant(t):
    """The value of a term without variables, else None."""
    if isinstance(t, dsl.Lit):
        return t.value
    if isinstance(t, dsl.Call) and t.fn in _PRIM:
        args = [_constant(a) for a in t.args]
        if None not in args:
            try:
                return _PRIM[t.fn](*args)
            except (ZeroDivisionError, IndexError):
                return None
    return None


def _constants(t) -> set[int]:
    """The ints ``t`` spells out: its constant subterms, and the sum of a constant list (sizes). List
    indices are left out: ``x.shape[0]`` says nothing about sizes."""
    value = _constant(t)
    if isinstance(value, int):
        return {value}
    if isinstance(value, tuple):
        return set(value) | {sum(value)}
    if not isinstance(t, dsl.Call):
        return set()
    return set().union(*(_constants(a) for a in (t.args[:1] if t.fn == "vec-get" else t.args)))


def _guard_sizes(rule: dsl.DslRule) -> tuple[int, ...]:
    """Dim sizes beyond 1-4 around the constants the pattern and guard compare with (c-1, c, c+1: the
    bounds of <, <=, ==, >=, >; 2c: a multiple), for a rule no small instance satisfies."""
    consts = set().union(*(_constants(t) for t in [rule.lhs, *rule.given]),
                         *(_constants(g.lhs) | _constants(g.rhs) for g in rule.when))
    return tuple(sorted({v for c in consts for v in (c - 1, c, c + 1, 2 * c) if 4 < v <= MAX_NUMEL}))


# A guard may admit a single size the rule happens to hold at (``x.shape[0] == x.shape[1] + 3`` meets
# only (4, 1) among dims 1-4): the checker wants this many admitted instances of distinct sizes, and
# searches wider for them (the guard's constants, then dims up to WIDE_DIMS) before it refuses the rule.
DISTINCT_SIZES = 3
WIDE_DIMS = tuple(range(5, 17))


def _compare(rule: dsl.DslRule, rng: random.Random, values: bool, sizes=()) -> tuple[bool, str | None, tuple]:
    """One instance: (admitted, problem or None, the sizes it was drawn with)."""
    ev = Evaluator(rng, sizes=sizes)
    try:
        lhs = ev.ev(rule.lhs)
        for t in rule.given:
            ev.ev(t)
        if not all(ev.holds(g) for g in rule.when):
            return False, None, ()
    except (Reject, RuntimeError, IndexError, ValueError, TypeError, ZeroDivisionError):
        return False, None, ()
    ev.sampling = False
    where = f"rule {rule.name!r} at {_describe(ev, rule)}"
    drawn = _sizes_of(ev, rule)
    try:
        rhs = ev.ev(rule.rhs)
    except Exception as e:  # noqa: BLE001 — any failure of the replacement is the finding
        return True, f"{where}: the replacement fails to evaluate ({type(e).__name__}: {e})", drawn
    if tuple(lhs.shape) != tuple(rhs.shape):
        return True, f"{where}: shape-changing rewrite: pattern {tuple(lhs.shape)}, replacement {tuple(rhs.shape)}", drawn
    if lhs.dtype != rhs.dtype:
        return True, f"{where}: the replacement has dtype {rhs.dtype}, the pattern {lhs.dtype}", drawn
    if values and not lhs.is_floating_point() and not torch.equal(lhs, rhs):
        return True, f"{where}: values differ", drawn
    if values and lhs.is_floating_point() and not torch.allclose(lhs, rhs.to(lhs.dtype), rtol=1e-5, atol=1e-6,
                                                                 equal_nan=True):
        err = (lhs - rhs).abs().max().item()
        return True, f"{where}: values differ (max abs error {err:.3g})", drawn
    return True, None, drawn


def _sizes_of(ev: Evaluator, rule: dsl.DslRule) -> tuple:
    """What sets an instance's sizes apart: every variable's shape, int or int list (not the values
    inside tensors, their dtype or op keys)."""
    bound = term_vars(rule.lhs)
    for t in rule.given:
        term_vars(t, bound)
    out = []
    for v in bound.values():
        val = ev.env.get(id(v))
        if isinstance(val, torch.Tensor):
            out.append(tuple(val.shape))
        elif isinstance(val, list):
            out.append(tuple(tuple(t.shape) for t in val if isinstance(t, torch.Tensor)))
        elif not isinstance(val, str):
            out.append(val)
    return tuple(out)


@dataclass
class _Found:
    """One direction's admitted instances: how many, and their distinct sizes."""

    admitted: int = 0
    sizes: set = field(default_factory=set)

    def enough(self, want: int) -> bool:
        return self.admitted >= want and len(self.sizes) >= DISTINCT_SIZES


def _sample(r: dsl.DslRule, rng, values: bool, sizes, want: int, tries: int, res: CheckResult,
            found: _Found) -> None:
    """Instances until ``want`` of ``DISTINCT_SIZES`` distinct sizes are admitted (``found``),
    ``tries`` are spent or one disagrees."""
    for _ in range(tries):
        res.tried += 1
        ok, problem, drawn = _compare(r, rng, values, sizes)
        if ok:
            found.admitted += 1
            found.sizes.add(drawn)
        if problem:
            res.problems.append(problem)
            return
        if found.enough(want):
            return


def check(rule, want: int = 20, tries: int = 400, seed: int = 0, values: bool = True) -> CheckResult:
    """Compare pattern and replacement on up to ``want`` admitted random instances (both directions
    of a bidirectional rule). ``result.ok`` is False, with messages, if any instance disagrees, or if
    the guard admits instances of fewer than ``DISTINCT_SIZES`` distinct sizes even with the sizes its
    constants call for and dims up to ``WIDE_DIMS``: "no counterexample" would then mean (next to)
    nothing was tested."""
    if not isinstance(rule, dsl.DslRule):
        raise TypeError(f"check() takes a DSL rule; {getattr(rule, 'name', rule)!r} is hand-written egglog")
    res = CheckResult(rule.name)
    directions = [rule] + ([dsl.DslRule(rule.name, rule.rhs, rule.lhs, rule.when, rule.family, rule.doc)]
                           if rule.bidirectional else [])
    for r in directions:
        rng, tried, found, problems = random.Random(seed), res.tried, _Found(), len(res.problems)
        guard = _guard_sizes(r)
        for sizes in ((), guard, tuple(sorted({*guard, *WIDE_DIMS}))) if guard else ((), WIDE_DIMS):
            _sample(r, rng, values, sizes, want, tries, res, found)
            if len(res.problems) > problems or len(found.sizes) >= DISTINCT_SIZES:
                break
        res.admitted += found.admitted
        dims = "1-4" + "".join(f", {n}" for n in sorted({*guard, *WIDE_DIMS}))
        if len(res.problems) > problems:
            continue
        if not found.admitted:
            res.problems.append(f"rule {r.name!r}: the pattern and guard admitted no instance the checker could"
                                f" test ({res.tried - tried} tried, dims {dims})")
        elif len(found.sizes) < DISTINCT_SIZES:
            res.problems.append(f"rule {r.name!r}: the guard admits fewer than {DISTINCT_SIZES} distinct sizes of "
                                f"{res.tried - tried} sampled instances (only {sorted(found.sizes)}, dims {dims}); "
                                "cannot check it")
    return res


def assert_sound(rule, **kw) -> CheckResult:
    """``check`` that raises ``UnsoundRule`` with the first counterexample."""
    res = check(rule, **kw)
    if not res.ok:
        raise UnsoundRule(res.problems[0])
    return res
