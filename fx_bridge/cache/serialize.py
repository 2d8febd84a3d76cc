"""An optimized graph as bytes, and back, without running the optimizer again.

The entry is the node list (op, name, target, arguments, type, plain metadata) pickled with nodes written
as their names and aten overloads as their qualified names (they do not pickle). Fake values are
not stored: the loader propagates them again from the compile's own inputs, as raising does, so
they belong to this process's fake mode. Placeholders take the metadata of the graph being compiled
(the key guarantees they are the same inputs). Parameters and constants are not stored either: the
rebuilt module reads them from the graph being compiled.
"""
from __future__ import annotations

import io
import pickle
from typing import Any, Sequence

import torch
from torch.fx.node import map_aggregate

from .. import torch_compat
from ..raising import refresh_fake_values
from .key import Uncacheable

_FAKE_KEYS = ("val", "example_value", "tensor_meta")


class _Pickler(pickle.Pickler):
    def __init__(self, file, nodes_allowed: bool):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.nodes_allowed = nodes_allowed

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, torch.fx.Node):
            if not self.nodes_allowed:
                raise Uncacheable("a node in metadata")
            return ("node", obj.name)
        if torch_compat.is_aten(obj):
            return ("op", obj._schema.name, obj._overloadname)
        return None


class _Ref(str):
    """A node named in the stored arguments, resolved once the node exists."""


class _Unpickler(pickle.Unpickler):
    def persistent_load(self, pid: Any) -> Any:
        kind, *rest = pid
        if kind == "node":
            return _Ref(rest[0])
        if kind == "op":
            namespace, name = rest[0].split("::")
            return getattr(getattr(getattr(torch.ops, namespace), name), rest[1] or "default")
        raise pickle.UnpicklingError(f"unknown reference {pid!r}")


def _dumps(obj: Any, nodes_allowed: bool = True) -> bytes:
    buf = io.BytesIO()
    _Pickler(buf, nodes_allowed).dump(obj)
    return buf.getvalue()


def _loads(data: bytes) -> Any:
    return _Unpickler(io.BytesIO(data)).load()


def _plain_meta(node: torch.fx.Node) -> dict[str, bytes]:
    """Metadata that pickles on its own (stack traces, module stacks, recompute tags); the rest is
    debugging information that a rebuilt graph can do without."""
    out = {}
    for k, v in node.meta.items():
        if k in _FAKE_KEYS:
            continue
        try:
            out[k] = _dumps(v, nodes_allowed=False)
        except Exception:  # noqa: BLE001  (anything unpicklable is left out, by design)
            continue
    return out


def dump_graph(gm: torch.fx.GraphModule) -> bytes:
    """The graph of ``gm`` as bytes; :class:`Uncacheable` when some node cannot be written."""
    if not torch_compat.has_plain_codegen(gm.graph):
        raise Uncacheable("the graph has a custom code generator (pytree inputs or outputs)")
    nodes = [(n.op, n.name, n.target, n.args, n.kwargs, n.type, _plain_meta(n)) for n in gm.graph.nodes]
    try:
        return _dumps(nodes)
    except Uncacheable:
        raise
    except Exception as e:
        raise Uncacheable(f"the graph does not pickle: {type(e).__name__}: {e}") from e


def load_graph(data: bytes, like: torch.fx.GraphModule, example_inputs: Sequence[Any],
               dialect: str) -> torch.fx.GraphModule:
    """Rebuild a stored graph over ``like``'s parameters and placeholders (``like`` is the graph the
    entry was keyed on), with fresh fake values. Raises on anything inconsistent."""
    graph = torch.fx.Graph()
    nodes: dict[str, torch.fx.Node] = {}
    placeholders = iter(like.graph.find_nodes(op="placeholder"))
    def resolve(a: Any) -> Any:
        return nodes[a] if isinstance(a, _Ref) else a

    for op, name, target, args, kwargs, type_expr, meta in _loads(data):
        node = graph.create_node(op, target, map_aggregate(args, resolve), map_aggregate(kwargs, resolve),
                                 name=name, type_expr=type_expr)
        if node.name != name:
            raise ValueError(f"node {name!r} came back as {node.name!r}")
        nodes[name] = node
        if op == "placeholder":
            node.meta.update(next(placeholders).meta)
        else:
            node.meta.update({k: _loads(v) for k, v in meta.items()})
    if next(placeholders, None) is not None:
        raise ValueError("the stored graph has fewer inputs than the graph being compiled")
    graph.lint()
    gm = torch.fx.GraphModule(like, graph)
    refresh_fake_values(gm, example_inputs, dialect)
    return gm
