"""The cache key: everything the optimized graph depends on, hashed.

Two compiles share a key only when the optimizer would see the same thing: the graph (nodes, targets,
arguments, and every node's value: shape or symbolic size with its example value, dtype, strides,
storage offset, device, requires_grad, which inputs share storage), the facts of the compile (the pass,
frozen parameters, a derived backward, which outputs the user sees), the ambient context it is compiled
in (``eqsat_torch.safety.context``: autocast, grad and inference mode, default dtype, matmul precision,
deterministic algorithms; it switches rules off), the options, the rules (our
sources, which hold the built-in ones, and the text of every user rule) and the versions of torch,
egglog and eqsat. Anything we cannot fingerprint raises :class:`Uncacheable`: no key, no caching.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.metadata
import pathlib
import sys
from typing import Any, Iterable, Mapping, Sequence

import torch

from eqsat import to_egglog
from eqsat.cost import CostModel
from eqsat.rule import Rule

from eqsat_torch.inductor import compat
from eqsat_torch.safety.context import Context
from eqsat_torch.options import Options

_SOURCE_DIRS = ("fx_bridge", "eqsat", "rules")
# Options that cannot change the optimized graph; every other field (a new one included) is keyed.
_NOT_KEYED = {"cache": "whether to use the cache", "inner": "the compiler after the optimizer"}


class Uncacheable(Exception):
    """Something the result depends on has no stable fingerprint (a raw SymInt argument, an object
    without a value repr): this graph is optimized, not cached."""


@functools.lru_cache(maxsize=1)
def source_hash() -> str:
    """Our sources (the built-in rules, cost model, lowering and raising), so an edit misses."""
    root = pathlib.Path(__file__).resolve().parents[2]
    h = hashlib.sha256()
    for d in _SOURCE_DIRS:
        for f in sorted((root / d).rglob("*.py")):
            h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def versions() -> str:
    def version(dist: str) -> str:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return "none"
    return f"torch {torch.__version__}; egglog {version('egglog')}; eqsat {version('eqsat')}"


@functools.lru_cache(maxsize=4096)
def rule_text(rule: Rule) -> str:
    """A rule's content as the e-graph runs it: its name, family, declarations and clauses."""
    decls = " ".join(to_egglog.declaration(d) for d in rule.decls)
    clauses = " ".join(to_egglog.clause(c, name=tag) for c, tag in zip(rule.clauses, rule.tags()))
    return f"{rule.family}/{rule.name}: {decls} {clauses}"


def rules_fingerprint(extra: Iterable[Rule]) -> str:
    """Registered and ``extra_rules`` user rules (built-in ones are in :func:`source_hash`). Rules
    are registered in ``eqsat_rules.library``: until something imports it (and egglog with it, which a
    cache hit otherwise never needs), there are none."""
    library = sys.modules.get("eqsat_rules.library")
    builtin = {id(r) for r in library.builtin_rules()} if library else set()
    users = [r for r in (library.all_rules() if library else ()) if id(r) not in builtin] + list(extra)
    return hashlib.sha256("\n".join(rule_text(r) for r in users).encode()).hexdigest()


def options_fingerprint(opts: Options, device: str) -> str:
    """Every option that can change the result; the cost model as the optimizer will build it."""
    parts = []
    for f in dataclasses.fields(opts):
        value = getattr(opts, f.name)
        if f.name in _NOT_KEYED:
            continue
        if f.name == "extra_rules":
            value = rules_fingerprint(value)
        elif f.name == "cost":
            value = _plain(dataclasses.asdict(value or CostModel.for_device(device)))
        parts.append(f"{f.name}={_plain(value)}")
    return "; ".join(parts)


def graph_key(stage: str, gm: torch.fx.GraphModule, example_inputs: Sequence[Any], opts: Options,
              device: str, facts: Mapping[str, Any]) -> str:
    """The key of optimizing ``gm`` in ``stage`` (``pre_grad``, ``post_grad``) under ``facts``."""
    h = hashlib.sha256()
    for part in (versions(), source_hash(), stage, _plain(dict(sorted(facts.items()))), Context.capture().key(), device,
                 _devices(example_inputs), options_fingerprint(opts, device)):
        h.update(part.encode() + b"\0")
    storages: dict[Any, int] = {}
    for n in gm.graph.nodes:
        h.update(_node_text(n, gm, storages).encode() + b"\n")
    h.update(_plain([_value_text(x, storages) for x in example_inputs]).encode())
    return h.hexdigest()


def _node_text(n: torch.fx.Node, gm: torch.fx.GraphModule, storages: dict) -> str:
    value = compat.node_value(n)
    if n.op == "get_attr":  # a parameter or constant the graph reads: its layout, not its values
        value = _attr(gm, n.target)
    kind = type(_attr(gm, n.target)).__qualname__ if n.op == "call_module" else ""  # what the call runs
    return (f"{n.op} {n.name} {_target(n.target)}{kind} {_plain(n.args)} {_plain(n.kwargs)} "
            f"-> {_value_text(value, storages)}")


def _attr(gm: torch.nn.Module, target: str) -> Any:
    obj: Any = gm
    for part in target.split("."):
        obj = getattr(obj, part, None)
    return obj


def _target(t: Any) -> str:
    if isinstance(t, str):
        return t
    if compat.is_aten(t):
        return f"{t._schema.name}.{t._overloadname}"
    module, name = getattr(t, "__module__", None), getattr(t, "__qualname__", None) or getattr(t, "__name__", None)
    if name is None:
        raise Uncacheable(f"call target {t!r} has no name")
    return f"{module}.{name}"


def _value_text(v: Any, storages: dict) -> str:
    """A node's value as the optimizer reads it. Storage identities become first-seen indices, so
    which values alias each other is keyed, not where they happen to live."""
    if isinstance(v, torch.Tensor):
        key = compat.storage_key(v)
        alias = storages.setdefault(key, len(storages)) if key is not None else None
        return (f"T({v.dtype}, {v.device}, {_plain(tuple(v.shape))}, {_layout(v)}, rg={v.requires_grad}, "
                f"layout={v.layout}, storage={alias})")
    if isinstance(v, (list, tuple)):
        return "(" + ", ".join(_value_text(x, storages) for x in v) + ")"
    return _plain(v)


def _layout(v: torch.Tensor) -> str:
    try:
        return f"stride={_plain(tuple(v.stride()))}, offset={_plain(v.storage_offset())}"
    except (RuntimeError, NotImplementedError):  # sparse or nested: no strides
        return "no strides"


def _plain(v: Any) -> str:
    """A deterministic text for an argument: nodes by name, symbolic sizes with their example
    value (the optimizer prices the hint), no memory addresses."""
    if isinstance(v, torch.fx.Node):
        return f"%{v.name}"
    if isinstance(v, (list, tuple)):
        inner = ", ".join(_plain(x) for x in v)
        return f"[{inner}]" if isinstance(v, list) else f"({inner})"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_plain(k)}: {_plain(x)}" for k, x in v.items()) + "}"
    if compat.is_symbolic(v):
        return f"sym({compat.sym_expr(v)}~{compat.symint_hint(v) if isinstance(v, torch.SymInt) else '?'})"
    if isinstance(v, (bool, int, float, str, type(None), torch.dtype, torch.device, torch.memory_format,
                      torch.layout, slice, type(Ellipsis), complex)):
        return repr(v)
    if callable(v):
        return _target(v)
    raise Uncacheable(f"no stable fingerprint for {type(v).__name__}")


def _devices(example_inputs: Sequence[Any]) -> str:
    """The accelerators' names: the cost model and Inductor's verification depend on the GPU."""
    cuda = sorted({x.device.index or 0 for x in example_inputs
                   if isinstance(x, torch.Tensor) and x.device.type == "cuda"})
    return ", ".join(torch.cuda.get_device_name(i) for i in cuda)
