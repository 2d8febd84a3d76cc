"""An optimized graph as JSON data, and back, without running the optimizer again, and without
running anything the bytes name.

The entry is the node list: op, name, target, arguments and the metadata that is plain data. Nothing
in it is code. Arguments are ints, floats (inf and nan included), bools, None, strings, dtypes,
devices, memory formats, layouts, slices, Ellipsis, complex numbers, ``torch.Size``, nested
lists/tuples/dicts and references to earlier nodes; a graph holding anything else is not cached.
A ``call_function`` target is stored as a name and resolved only against a :class:`Vocabulary`: the
targets of the graph being compiled (what the user's program already runs) and the ops our own
passes write (the op registry's rows and a short list below). A ``call_method`` target must be a
method that graph calls or one of the registry's spellings. Nothing is imported by name, so a name
outside the vocabulary (``os.system``, ``torch.load``) is :class:`Untrusted`: the entry misses.
Writing checks the same vocabulary, so an entry we write always resolves when read back.

Fake values are not stored: the loader propagates them again from the compile's own inputs, as
raising does, so they belong to this process's fake mode. Placeholders take the metadata of the
graph being compiled (the key guarantees they are the same inputs); parameters, constants and
submodules are read from that graph too.
"""
from __future__ import annotations

import functools
import json
import math
import operator
from typing import Any, Iterable, Sequence

import torch

from eqsat import ops

from eqsat_torch.inductor import compat
from eqsat_torch.raising.raising import refresh_fake_values
from eqsat_torch.cache.key import Uncacheable

FORMAT = 2
_FAKE_KEYS = ("val", "example_value", "tensor_meta")
_NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


class Untrusted(ValueError):
    """The entry names something outside the vocabulary, or is not the data an entry holds."""


def qualified_name(obj: Any) -> str | None:
    """``torch.ops.aten.mm.default``, ``torch.cat``, ``_operator.getitem``, ``torch._C.TensorBase.view``."""
    if compat.is_aten(obj):
        namespace, name = compat.aten_schema(obj).name.split("::")
        return f"torch.ops.{namespace}.{name}.{obj._overloadname or 'default'}"
    module = getattr(obj, "__module__", None) or getattr(getattr(obj, "__objclass__", None), "__module__", None)
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    return f"{module}.{name}" if isinstance(module, str) and isinstance(name, str) else None


def _by_name(objects: Iterable[Any]) -> dict[str, Any]:
    """Name → object; a name two different objects answer to is left out (it would be ambiguous)."""
    out: dict[str, Any] = {}
    ambiguous: set[str] = set()
    for obj in objects:
        name = qualified_name(obj)
        if name is None or name in ambiguous:
            continue
        if name in out and out[name] is not obj:
            ambiguous.add(name)
            del out[name]
        else:
            out[name] = obj
    return out


def _extra_targets() -> list[Any]:
    """What our passes write besides the registry's rows: grad-mode regions, alias copies, symbolic
    sizes, cluster splits, explicit casts, functionalized in-place ops."""
    from eqsat_torch.safety.functionalize import _OPERATORS, index_assign
    aten = torch.ops.aten
    return [compat.grad_mode_switch(), *compat.autocast_region_targets(), torch.permute, torch.clone,
            torch.split, torch.Tensor.reshape, operator.getitem, operator.add, operator.mul, operator.floordiv,
            aten.clone.default, aten.alias.default, aten.sym_size.int, aten.split_with_sizes.default,
            aten.reshape.default, aten._to_copy.default, torch.ops.prims.convert_element_type.default,
            index_assign, *_OPERATORS.values()]


@functools.lru_cache(maxsize=4)
def _known(version: int) -> tuple[tuple[Any, ...], frozenset[str]]:
    """The registry's targets (every spelling lowering knows, what raising writes) and method names."""
    from eqsat_torch.raising.raising import _OPERATOR_OF
    from eqsat_torch.lowering.targets import _tables, aten_overload, torch_callable

    functions, aten = _tables(version)
    calls, methods = [*functions, *aten, *_OPERATOR_OF.values(), *_extra_targets()], {"to", "detach", "size"}
    for row in ops.ALL_OPS:
        if row.torch and row.torch.startswith("Tensor."):
            methods.add(row.torch.removeprefix("Tensor."))
        elif row.torch:
            calls.append(torch_callable(row.torch))
        if row.aten:
            calls.append(aten_overload(row.aten))
    names = ops.spellings() | {"reshape", "reshape_as", "view", "view_as", "contiguous", "clone"}
    methods |= {m for m in names if not m.startswith("_") and callable(getattr(torch.Tensor, m, None))}
    return tuple(calls), frozenset(methods)


def _meta_objects(value: Any) -> Iterable[Any]:
    """Callables and classes inside a metadata value (``source_fn_stack``, ``nn_module_stack``)."""
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _meta_objects(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _meta_objects(v)
    elif callable(value) and not isinstance(value, torch.nn.Module):
        yield value


class Vocabulary:
    """What an entry for ``gm`` may name: call targets (``calls``), method names (``methods``), the
    parameters, buffers and submodules of ``gm`` (``attributes``), and for metadata only (never called by us) also the classes and functions ``gm``'s metadata holds.
    Build it from the graph being compiled, before anything rewrites it."""

    def __init__(self, gm: torch.fx.GraphModule):
        known_calls, known_methods = _known(ops.version())
        nodes = list(gm.graph.nodes)
        calls = [*known_calls, *(n.target for n in nodes if n.op == "call_function")]
        self.calls = _by_name(calls)
        self.methods = known_methods | {n.target for n in nodes if n.op == "call_method"}
        self.attributes = {n.target for n in nodes if n.op in ("get_attr", "call_module")} | {
            name for members in (gm.named_parameters(), gm.named_buffers(), gm.named_modules()) for name, _ in members}
        self.meta = _by_name([*calls, *(o for n in nodes for k, v in n.meta.items() if k not in _FAKE_KEYS
                                        for o in _meta_objects(v))])


class _Encoder:
    """Values → JSON data; every JSON object is a tag, so a plain string is never mistaken for one."""

    def __init__(self, names: dict[str, Any] | None, nodes_allowed: bool = True):
        self.names = {id(v): k for k, v in (names or {}).items()}
        self.nodes_allowed = nodes_allowed

    def __call__(self, v: Any) -> Any:
        if v is None or isinstance(v, (bool, int, str)):
            return v if type(v) in (bool, int, str, type(None)) else self._other(v)
        if isinstance(v, float):
            return v if math.isfinite(v) else {"float": "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")}
        if isinstance(v, torch.fx.Node):
            if not self.nodes_allowed:
                raise Uncacheable("a node in metadata")
            return {"node": v.name}
        if isinstance(v, torch.Size):
            return {"size": [self(x) for x in v]}
        if isinstance(v, tuple) and type(v) is tuple:
            return {"tuple": [self(x) for x in v]}
        if isinstance(v, list):  # FX keeps lists as immutable_list
            return [self(x) for x in v]
        if isinstance(v, dict):
            return {"dict": [[self(k), self(x)] for k, x in v.items()]}
        return self._other(v)

    def _other(self, v: Any) -> Any:
        for kind in (torch.dtype, torch.memory_format, torch.layout):
            if isinstance(v, kind):
                return {kind.__name__: str(v).removeprefix("torch.")}
        if isinstance(v, torch.device):
            return {"device": str(v)}
        if isinstance(v, slice):
            return {"slice": [self(v.start), self(v.stop), self(v.step)]}
        if v is Ellipsis:
            return {"ellipsis": None}
        if isinstance(v, complex):
            return {"complex": [self(v.real), self(v.imag)]}
        if id(v) in self.names:
            return {"ref": self.names[id(v)]}
        raise Uncacheable(f"{type(v).__name__} is not data")


class _Decoder:
    """JSON data → values; nodes from ``nodes``, references from ``names`` (nothing else resolves)."""

    def __init__(self, nodes: dict[str, torch.fx.Node], names: dict[str, Any]):
        self.nodes, self.names = nodes, names

    def __call__(self, v: Any) -> Any:
        if v is None or type(v) in (bool, int, str, float):
            return v
        if isinstance(v, list):
            return [self(x) for x in v]
        if not isinstance(v, dict) or len(v) != 1:
            raise Untrusted(f"not an entry value: {type(v).__name__}")
        (tag, x), = v.items()
        if tag == "node" and isinstance(x, str) and x in self.nodes:
            return self.nodes[x]
        if tag in ("tuple", "size"):
            items = tuple(self(i) for i in self._list(x))
            return torch.Size(items) if tag == "size" else items
        if tag == "dict":
            return {self(k): self(i) for k, i in self._list(x)}
        if tag == "float" and isinstance(x, str) and x in _NON_FINITE:
            return _NON_FINITE[x]
        if tag in ("dtype", "memory_format", "layout"):
            value = getattr(torch, x, None) if isinstance(x, str) else None
            if not isinstance(value, getattr(torch, tag)):
                raise Untrusted(f"not a {tag}: {x!r}")
            return value
        if tag == "device":
            return torch.device(str(x))
        if tag == "slice":
            return slice(*(self(i) for i in self._list(x, 3)))
        if tag == "ellipsis":
            return Ellipsis
        if tag == "complex":
            return complex(*(float(self(i)) for i in self._list(x, 2)))
        if tag == "ref" and x in self.names:
            return self.names[x]
        raise Untrusted(f"unknown value {tag!r}: {str(x)[:80]!r}")

    @staticmethod
    def _list(x: Any, length: int | None = None) -> list:
        if not isinstance(x, list) or (length is not None and len(x) != length):
            raise Untrusted("a malformed value")
        return x


def _plain_meta(node: torch.fx.Node, encode: _Encoder) -> dict[str, Any]:
    """Metadata that is data (stack traces, module paths, recompute tags, names the vocabulary
    knows); the rest is debugging information that a rebuilt graph can do without."""
    out = {}
    for k, v in node.meta.items():
        if k in _FAKE_KEYS:
            continue
        try:
            out[k] = encode(v)
            json.dumps(out[k])
        except (Uncacheable, TypeError, ValueError, RecursionError):  # left out, by design
            out.pop(k, None)
    return out


def dump_graph(gm: torch.fx.GraphModule, vocabulary: Vocabulary) -> Any:
    """The graph of ``gm`` as JSON data; :class:`Uncacheable` when some node cannot be written as
    data or names a target ``vocabulary`` would not resolve when read back."""
    if not compat.has_plain_codegen(gm.graph):
        raise Uncacheable("the graph has a custom code generator (pytree inputs or outputs)")
    encode, meta = _Encoder(None), _Encoder(vocabulary.meta, nodes_allowed=False)
    nodes = []
    for n in gm.graph.nodes:
        target = n.target
        if n.op == "call_function":
            name = qualified_name(target)
            if vocabulary.calls.get(name) is not target:
                raise Uncacheable(f"call target {name or target!r} is not one the cache resolves")
            target = name
        elif n.op == "call_method" and target not in vocabulary.methods:
            raise Uncacheable(f"method {target!r} is not one the cache resolves")
        elif n.op in ("get_attr", "call_module") and target not in vocabulary.attributes:
            raise Uncacheable(f"attribute {target!r} is not one of the compiled graph's")
        nodes.append({"op": n.op, "name": n.name, "target": target, "args": encode(n.args),
                      "kwargs": encode(dict(n.kwargs)), "meta": {} if n.op == "placeholder" else _plain_meta(n, meta)})
    return nodes


_OPS = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output")


def _checked(entry: Any, vocabulary: Vocabulary) -> tuple[str, str, Any]:
    """A stored node's op, name and target, the target resolved in ``vocabulary``."""
    if not isinstance(entry, dict) or entry.get("op") not in _OPS or not isinstance(entry.get("target"), str) \
            or not isinstance(entry.get("name"), str):
        raise Untrusted("not a node")
    op, name, target = entry["op"], entry["name"], entry["target"]
    if op == "call_function":
        if target not in vocabulary.calls:
            raise Untrusted(f"call target {target!r} is not in the vocabulary")
        return op, name, vocabulary.calls[target]
    if op == "call_method" and target not in vocabulary.methods:
        raise Untrusted(f"method {target!r} is not in the vocabulary")
    if op in ("get_attr", "call_module") and target not in vocabulary.attributes:
        raise Untrusted(f"attribute {target!r} is not one of the compiled graph's")
    return op, name, target


def load_graph(data: Any, like: torch.fx.GraphModule, vocabulary: Vocabulary, example_inputs: Sequence[Any],
               dialect: str) -> torch.fx.GraphModule:
    """Rebuild a stored graph over ``like``'s parameters and placeholders (``like`` is the graph the
    entry was keyed on), with fresh fake values. :class:`Untrusted` for a name outside
    ``vocabulary`` or data that is not an entry; other errors for anything inconsistent."""
    graph = torch.fx.Graph()
    nodes: dict[str, torch.fx.Node] = {}
    args_of, meta_of = _Decoder(nodes, {}), _Decoder(nodes, vocabulary.meta)
    placeholders = iter(like.graph.find_nodes(op="placeholder"))
    if not isinstance(data, list):
        raise Untrusted("the graph is not a node list")
    for entry in data:
        op, name, target = _checked(entry, vocabulary)
        args, kwargs = args_of(entry.get("args")), args_of(entry.get("kwargs"))
        if not isinstance(args, tuple) or not isinstance(kwargs, dict) or not isinstance(entry.get("meta"), dict):
            raise Untrusted("malformed arguments")
        original = next(placeholders, None) if op == "placeholder" else None
        if op == "placeholder" and original is None:
            raise ValueError("the stored graph has more inputs than the graph being compiled")
        node = graph.create_node(op, target, args, kwargs, name=name,
                                 type_expr=original.type if original is not None else None)
        if node.name != name:
            raise ValueError(f"node {name!r} came back as {node.name!r}")
        nodes[name] = node
        if original is not None:
            node.meta.update(original.meta)
        else:
            node.meta.update({k: meta_of(v) for k, v in entry["meta"].items()})
    if next(placeholders, None) is not None:
        raise ValueError("the stored graph has fewer inputs than the graph being compiled")
    graph.lint()
    gm = torch.fx.GraphModule(like, graph)
    refresh_fake_values(gm, example_inputs, dialect)
    return gm
