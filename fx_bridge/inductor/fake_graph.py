"""The graph a probe measures: a copy of the caller's graph and inputs on fake ``cuda`` tensors
(parameters lifted to inputs, or folded under freezing; factory calls and devices moved to ``cuda``)."""
from __future__ import annotations

import operator
from typing import Any, Sequence

import torch
import torch.utils._pytree as pytree

from eqsat_torch.inductor.launches import ProbeError


_CUDA = torch.device("cuda", 0)


# -- the graph on fake cuda tensors ----------------------------------------------------------------
def _fake_copy(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], dialect: str, frozen: bool = False,
               move: bool = True):
    """A copy of ``gm`` whose tensor attributes are inputs, and fake inputs of the same sizes,
    strides and dtypes, none requiring grad (on a CPU-only build a fake cuda tensor that requires
    grad aborts the process). A program with no cuda input (traced on the CPU) is moved to cuda:
    its inputs, device literals and factories, unless ``move`` is off (a CPU probe). ``frozen``: what only parameters feed is folded, and
    the positions of the inputs that are then constants (parameters, attributes, folded values) are
    returned too (``_freezing_patterns`` needs them)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    tensors = [x for x in example_inputs if isinstance(x, torch.Tensor)]
    if any(not isinstance(s, int) for x in tensors for s in (*x.shape, *x.stride())):
        raise ProbeError("symbolic sizes are not probed")
    if any(n.op == "call_module" for n in gm.graph.nodes):
        raise ProbeError("call_module nodes are not probed (their parameters would stay on the host)")
    move = move and not any(x.device.type == "cuda" for x in tensors)
    graph = torch.fx.Graph()
    graph.output(tuple(pytree.tree_leaves(graph.graph_copy(gm.graph, {}))))  # Inductor wants them flat
    attrs = _lift_attributes(gm, graph)
    folded, params = [], set()
    if frozen:
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        params = {p for i, (p, x) in enumerate(zip(placeholders, (*attrs, *example_inputs)))
                  if i < len(attrs) or isinstance(x, torch.nn.Parameter)}  # attributes are constants too
        folded = _fold_parameters(graph, params)
    if move:
        _move_to_cuda(graph, dialect)
    mode = FakeTensorMode()
    with mode:
        inputs = [_fake(x, _CUDA if move else x.device) for x in (*attrs, *example_inputs, *folded)]
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    constants = frozenset(i for i, n in enumerate(placeholders)
                          if n in params or n.name.startswith("_probe_folded_")) if frozen else frozenset()
    return mode, torch.fx.GraphModule(torch.nn.Module(), graph), inputs, constants


def _fold_parameters(graph: torch.fx.Graph, params: set[torch.fx.Node]) -> list[torch.Tensor]:
    """Freezing: every tensor computed from parameters alone (a cat of weights, a transposed weight)
    is a constant Inductor folds before it schedules, so it launches nothing. Each such value read by
    the rest of the graph becomes a trailing input; their traced values, in order. A value with no
    traced tensor metadata stays computed (it is then counted, as it was before this fold)."""
    constant = set(params)
    for node in graph.nodes:
        inputs = node.all_input_nodes
        value = node.meta.get("example_value", node.meta.get("val"))
        if node.op in ("call_function", "call_method") and inputs and constant.issuperset(inputs) \
                and isinstance(value, torch.Tensor):
            constant.add(node)
    read = [n for n in graph.nodes if n in constant and n not in params
            and any(u not in constant for u in n.users)]
    last = [n for n in graph.nodes if n.op == "placeholder"][-1]
    values = []
    for node in reversed(read):       # each inserted right after the last input: reversed keeps order
        with graph.inserting_after(last):
            placeholder = graph.placeholder(f"_probe_folded_{node.name}")
        placeholder.meta = dict(node.meta)
        node.replace_all_uses_with(placeholder)
        values.append(node.meta.get("example_value", node.meta.get("val")))
    graph.eliminate_dead_code()
    return values[::-1]


def _fake(x: Any, device: torch.device) -> Any:
    if not isinstance(x, torch.Tensor):
        return x
    return torch.empty_strided(tuple(x.shape), tuple(x.stride()), dtype=x.dtype, device=device)


def _lift_attributes(gm: torch.fx.GraphModule, graph: torch.fx.Graph) -> list[torch.Tensor]:
    """Turn every tensor ``get_attr`` of ``graph`` into a leading placeholder; their values, in order.
    Parameters of a Dynamo graph without inlined modules, and frozen weights, live there."""
    nodes = [n for n in graph.nodes if n.op == "get_attr" and isinstance(_attr(gm, n.target), torch.Tensor)]
    first = next(iter(graph.nodes), None)
    for i, node in enumerate(nodes):
        with graph.inserting_before(first):
            placeholder = graph.placeholder(f"_probe_attr_{i}")
        placeholder.meta = dict(node.meta)
        node.replace_all_uses_with(placeholder)
    for node in nodes:
        graph.erase_node(node)
    return [_attr(gm, n.target) for n in nodes]


def _attr(gm: torch.nn.Module, target: str) -> Any:
    value: Any = gm
    for part in target.split("."):
        value = getattr(value, part)
    return value


def _move_to_cuda(graph: torch.fx.Graph, dialect: str) -> None:
    """Device literals (``aten.full(..., device=cpu)``, ``.to(device)``) say cuda, and in Torch IR a
    factory called without a device gets one; the traced values' metadata is dropped (stale)."""
    def to_cuda(a: Any) -> Any:
        return _CUDA if isinstance(a, torch.device) and a.type == "cpu" else a

    for node in graph.nodes:
        for key in ("val", "example_value", "tensor_meta"):
            node.meta.pop(key, None)
        if node.op not in ("call_function", "call_method"):
            continue
        node.args = torch.fx.node.map_aggregate(node.args, to_cuda)
        kwargs = dict(torch.fx.node.map_aggregate(node.kwargs, to_cuda))
        if kwargs.get("device") == "cpu" or dialect == "torch" and "device" not in kwargs and _factory(node):
            kwargs["device"] = _CUDA
        node.kwargs = kwargs


def _factory(node: torch.fx.Node) -> bool:
    """A ``torch.*`` function that makes a tensor on the default device unless told otherwise."""
    name = getattr(node.target, "__name__", "")
    if node.op != "call_function" or getattr(torch, name, None) is not node.target or name.endswith("_like"):
        return False
    packet = getattr(torch.ops.aten, name, None)
    if not isinstance(packet, torch._ops.OpOverloadPacket):
        return name == "tensor"
    return any(a.name == "device" for ov in packet.overloads() for a in getattr(packet, ov)._schema.arguments)


def _getitem(x: Any, index: Any) -> Any:
    if not isinstance(x, torch.Tensor):
        return operator.getitem(x, index)
    view, advanced = _basic_index(x, index)
    return torch.ops.aten.index.Tensor(view, advanced) if advanced else view


def _setitem(x: Any, index: Any, value: Any) -> None:
    if not isinstance(x, torch.Tensor):
        return operator.setitem(x, index, value)
    aten = torch.ops.aten
    view, advanced = _basic_index(x, index)
    if not isinstance(value, torch.Tensor):
        value = aten.scalar_tensor.default(value, dtype=x.dtype, device=x.device)
    if advanced:
        aten.index_put_.default(view, advanced, value)
    else:
        aten.copy_.default(view, value)
    return None


def _basic_index(x: torch.Tensor, index: Any) -> tuple[torch.Tensor, list]:
    """The view that ints, slices, None and ``...`` make of ``x``, and the advanced (tensor) indices
    left for ``aten.index``, one per dim of that view (None where a dim is not indexed)."""
    items = index if isinstance(index, tuple) else (index,)
    items = tuple(torch.tensor(i) if isinstance(i, list) else i for i in items)
    if any(isinstance(i, bool) or isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in items):
        raise ProbeError("boolean indexing is not probed")
    used = sum(1 for i in items if i is not None and i is not Ellipsis)
    view, dim, advanced = x, 0, []
    for item in items:
        if item is Ellipsis:
            step = x.dim() - used
            advanced += [None] * step
            dim += step
        elif item is None:
            view = torch.ops.aten.unsqueeze.default(view, dim)
            advanced.append(None)
            dim += 1
        elif isinstance(item, slice):
            if item != slice(None):  # ``:`` is no op (CPython's indexing emits none either)
                view = torch.ops.aten.slice.Tensor(view, dim, item.start, item.stop,
                                                   1 if item.step is None else item.step)
            advanced.append(None)
            dim += 1
        elif isinstance(item, torch.Tensor):
            advanced.append(item)
            dim += 1
        else:
            view = torch.ops.aten.select.int(view, dim, item)
    if all(a is None for a in advanced):
        return view, []
    return view, advanced + [None] * (view.dim() - len(advanced))
