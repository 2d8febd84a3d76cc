"""In-place ops on tensors the graph itself created become out-of-place, where no one can tell.

Hugging Face code mutates intermediates all the time (``embeddings += token_type_embeddings``,
``causal_mask *= ...``, ``mask[:, -k:] = 0``, ``out += bmm(...)``); each made the whole Dynamo graph
a skip. ``t.add_(u)`` on a tensor ``t`` the graph computed is ``t2 = t.add(u)`` with every later use of
``t`` reading ``t2``, provided nothing else can observe the write: ``t`` does not share storage with
a graph input, parameter or buffer, and no other alias of ``t`` (a view of it, or the tensor it is a
view of) is read after the write. The out-of-place result must have ``t``'s shape (in-place ops do
not broadcast their first operand) and is cast back to ``t``'s dtype (they do not promote it).
Anything else stays a mutation, and lowering skips the graph as before.
"""
from __future__ import annotations

import operator
from typing import Any, Callable, Sequence

import torch

from eqsat_torch.inductor import compat

_OPERATORS: dict[Callable, Callable] = {
    operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
    operator.itruediv: operator.truediv, operator.ifloordiv: operator.floordiv, operator.ipow: operator.pow,
    operator.imod: operator.mod, operator.iand: operator.and_, operator.ior: operator.or_,
    operator.ixor: operator.xor,
}


def index_assign(t: torch.Tensor, index: Any, value: Any) -> torch.Tensor:
    """``t[index] = value`` without touching ``t``: what ``setitem`` on a fresh intermediate means."""
    out = t.clone()
    out[index] = value
    return out


def _functional(n: torch.fx.Node) -> tuple[str, Any, tuple, dict] | None:
    """The out-of-place spelling of an in-place node (op, target, args, kwargs), or None."""
    if n.op == "call_function" and n.target in _OPERATORS:
        return "call_function", _OPERATORS[n.target], n.args, dict(n.kwargs)
    if n.op == "call_function" and n.target is operator.setitem:
        return "call_function", index_assign, n.args, {}
    if n.kwargs.get("inplace") is True:
        return n.op, n.target, n.args, {**n.kwargs, "inplace": False}
    name = n.target if n.op == "call_method" else getattr(n.target, "__name__", "")
    if not isinstance(name, str) or not name.endswith("_") or name.endswith("__") or "out" in n.kwargs:
        return None
    if not compat.aten_name_writes_inputs(name) or compat.aten_name_writes_inputs(name[:-1]):
        return None
    if n.op == "call_method" and hasattr(torch.Tensor, name[:-1]):
        return "call_method", name[:-1], n.args, dict(n.kwargs)
    pure = getattr(torch, name[:-1], None)
    if n.op == "call_function" and getattr(torch, name, None) is n.target and callable(pure):
        return "call_function", pure, n.args, dict(n.kwargs)  # torch.relu_ → torch.relu
    return None


def _key(n: Any) -> Any:
    return compat.storage_key(compat.node_value(n)) if isinstance(n, torch.fx.Node) else None


def functionalize_intermediates(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> torch.fx.GraphModule:
    """A copy of ``gm`` with every provably unobservable in-place op on an intermediate made
    out-of-place; ``gm`` itself when there is none."""
    nodes = list(gm.graph.nodes)
    order = {n: i for i, n in enumerate(nodes)}
    sources = {_key(n) for n in nodes if n.op in ("placeholder", "get_attr")} - {None}
    todo = []
    for m in nodes:
        spelled = _functional(m) if m.op in ("call_function", "call_method") else None
        t = m.args[0] if m.args else None
        if spelled is None or not isinstance(t, torch.fx.Node) or t.op not in ("call_function", "call_method"):
            continue
        k = _key(t)
        if k is None or k in sources:
            continue
        aliases = [a for a in nodes if a is not t and a is not m and _key(a) == k and order[a] < order[m]]
        if any(order[u] > order[m] for a in aliases for u in a.users):
            continue
        todo.append((m, spelled))
    if not todo:
        return gm
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    mutations = dict(todo)
    for n in nodes:
        if n.op == "output":
            graph.output(torch.fx.map_arg(n.args[0], lambda a: env[a]))
            continue
        if n in mutations:
            op, target, args, kwargs = mutations[n]
            t = n.args[0]
            new = graph.create_node(op, target, torch.fx.map_arg(args, lambda a: env[a]),
                                    torch.fx.map_arg(kwargs, lambda a: env[a]), name=n.name)
            env[n] = env[t] = new  # later reads of ``t`` see the written value
            continue
        env[n] = graph.node_copy(n, lambda a: env[a])
    out = torch.fx.GraphModule(gm, graph)
    compat.propagate_fake(out, example_inputs)
    _restore_dtypes(out, {env[m] for m in mutations}, {env[m]: compat.node_value(m.args[0]) for m in mutations})
    for n in out.graph.nodes:
        n.meta["example_value"] = n.meta.get("val")
    return out


def _restore_dtypes(gm: torch.fx.GraphModule, made: set, want: dict) -> None:
    """In-place ops keep their first operand's dtype and shape: cast back, or give up."""
    changed = False
    for n in list(gm.graph.nodes):
        if n not in made:
            continue
        got, old = n.meta.get("val"), want[n]
        if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(old.shape):
            from eqsat_torch.lowering.lowered import Unsupported
            raise Unsupported(f"mutation at {n.name}: its out-of-place form has another shape")
        if got.dtype != old.dtype:
            with gm.graph.inserting_after(n):
                cast = gm.graph.call_method("to", (n, old.dtype))
            n.replace_all_uses_with(cast, delete_user_cb=lambda u: u is not cast)
            changed = True
    if changed:
        gm.recompile()
        example = [n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder"]
        compat.propagate_fake(gm, example)
