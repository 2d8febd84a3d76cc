"""The ambient context a graph is compiled for, captured in one place: part of the graph's meaning.

The same FX graph means different programs under different global state: under ``torch.autocast``
a ``linear`` runs in bfloat16 while a ``mul`` and ``sum`` stay in float32, so a rewrite that turns a
matmul into a product and a sum changes the dtypes a user sees (issue 41). Grad and inference mode,
the default dtype, float32 matmul precision and deterministic algorithms change values, autograd
or the ops traced. Dynamo guards on this state, so what holds while the backend runs holds when the
graph runs: :meth:`Context.capture` reads it then, the cache key includes it, the equivalence check
(``eqsat_torch.safety.equivalence``) runs both graphs inside it (:meth:`Context.entered`), and
:func:`switched_off` says which rules it switches off.

Autocast's per-op policy: a rule is switched off under autocast when the ops its replacement
computes are not the ops its pattern computes (views, copies and cats aside, which autocast leaves
as they are; every matmul-like op counts as one kind: autocast casts them all alike). The rules
that move ops around, or batch n matmuls into one, keep which ops autocast casts and stay on.
"""
from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass, replace
from typing import Any, Iterable, Iterator, Sequence

import torch

DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class Autocast:
    device: str
    enabled: bool
    dtype: torch.dtype


@dataclass(frozen=True)
class Context:
    autocast: tuple[Autocast, ...]
    grad: bool
    inference: bool
    default_dtype: torch.dtype
    matmul_precision: str
    deterministic: bool

    @classmethod
    def capture(cls) -> "Context":
        """The global state now (the backend runs where Dynamo guarded it)."""
        return cls(tuple(Autocast(d, torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in DEVICES),
                   torch.is_grad_enabled(), torch.is_inference_mode_enabled(), torch.get_default_dtype(),
                   torch.get_float32_matmul_precision(), torch.are_deterministic_algorithms_enabled())

    def autocasting(self, devices: Iterable[str] | None = None) -> list[Autocast]:
        """The devices (of ``devices``; None: any) autocast is on for."""
        return [a for a in self.autocast if a.enabled and (devices is None or a.device in devices)]

    def for_aten(self) -> "Context":
        """The context of a post-grad (Aten) graph: AOTAutograd traced autocast's casts into it as
        explicit ``_to_copy`` nodes and autograd into it as ops, so neither applies again."""
        return replace(self, autocast=tuple(replace(a, enabled=False) for a in self.autocast), grad=False,
                       inference=False)

    def key(self) -> str:
        """A stable text of everything here (the cache key's part)."""
        casts = ", ".join(f"{a.device}:{a.dtype if a.enabled else 'off'}" for a in self.autocast)
        return (f"autocast[{casts}] grad={self.grad} inference={self.inference} default={self.default_dtype} "
                f"matmul={self.matmul_precision} deterministic={self.deterministic}")

    def describe(self) -> str:
        casts = ", ".join(f"{a.device} {a.dtype}" for a in self.autocasting())
        return f"autocast ({casts})" if casts else "this context"

    @contextlib.contextmanager
    def entered(self) -> Iterator[None]:
        """Run inside this context (the state before is restored after)."""
        with contextlib.ExitStack() as stack:
            for a in self.autocast:
                if a.enabled != torch.is_autocast_enabled(a.device) or (
                        a.enabled and a.dtype != torch.get_autocast_dtype(a.device)):
                    stack.enter_context(torch.autocast(a.device, dtype=a.dtype, enabled=a.enabled,
                                                       cache_enabled=False))
            stack.enter_context(torch.inference_mode(self.inference) if self.inference
                                else contextlib.nullcontext())
            stack.enter_context(torch.set_grad_enabled(self.grad))
            stack.callback(torch.set_default_dtype, torch.get_default_dtype())
            torch.set_default_dtype(self.default_dtype)
            stack.callback(torch.set_float32_matmul_precision, torch.get_float32_matmul_precision())
            torch.set_float32_matmul_precision(self.matmul_precision)
            warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
            stack.callback(torch.use_deterministic_algorithms, torch.are_deterministic_algorithms_enabled(),
                           warn_only=warn_only)
            torch.use_deterministic_algorithms(self.deterministic, warn_only=warn_only)
            yield


def switched_off(rules: Sequence[Any], ctx: Context, devices: Iterable[str]) -> dict[str, str]:
    """Rule name → why ``ctx`` switches it off for a graph on ``devices``: under autocast, the rules
    whose replacement computes other ops than their pattern (see the module's docstring)."""
    on = ctx.autocasting(set(devices))
    if not on:
        return {}
    why = (f"under {ctx.describe()} it changes which ops run, so which ops autocast casts "
           f"({', '.join(a.device for a in on)})")
    return {r.name: why for r in rules if changes_ops(r)}


@functools.lru_cache(maxsize=4096)
def changes_ops(rule: Any) -> bool:
    """Some clause of ``rule`` computes other ops in its replacement than in its pattern."""
    return any(_computing(_calls(c.facts)) != _computing(_calls(c.actions)) for c in rule.clauses)


def _calls(items: Iterable[Any]) -> list[Any]:
    """Every constructor call in clause facts or actions, nested ones included."""
    from eqsat.rulelang import Call, ListExpr

    out, todo = [], list(items)
    while todo:
        x = todo.pop()
        if isinstance(x, Call):
            out.append(x)
            todo.extend(x.args)
        elif isinstance(x, ListExpr):
            todo.extend(x.items)
            todo.extend([x.tail] if x.tail is not None else [])
        elif hasattr(x, "__dataclass_fields__"):  # guards, unions, sets, lets: their terms
            todo.extend(getattr(x, f) for f in x.__dataclass_fields__)
        elif isinstance(x, (tuple, list)):
            todo.extend(x)
    return out


def _computing(calls: list[Any]) -> set[str]:
    """The ops among ``calls`` autocast may cast: every matmul-like op as ``matmul``; a keyed op
    (``Unary "exp"``) by its key when the key is literal (a variable key is bound by the pattern:
    the replacement computes the op the pattern matched); other computing constructors by name.
    Views, copies, sources and the data movers (``pad``, ``repeat``: no key, dtype kept) are free."""
    from eqsat.ops import ALL_OPS, STRING, Category, Dtype
    from eqsat.rulelang import Lit

    rows: dict[str, list] = {}
    for op in ALL_OPS:
        rows.setdefault(op.ctor, []).append(op)
    out = set()
    for c in calls:
        ops = rows.get(c.fn)
        if not ops:
            continue
        keyed = ops[0].args[:1] == (STRING,)
        if all(o.category in (Category.VIEW, Category.COPY, Category.SOURCE) or (
                o.category is Category.POINTWISE and not keyed and o.dtype is Dtype.SAME) for o in ops):
            continue
        if all(o.category is Category.MATMUL for o in ops):
            out.add("matmul")
        elif not keyed:
            out.add(c.fn)
        elif c.args and isinstance(c.args[0], Lit):
            out.add(f"{c.fn} {c.args[0].value}")
    return out
