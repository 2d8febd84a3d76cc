"""Chosen e-nodes → a fresh FX GraphModule.

Each chosen e-class becomes at most one FX node (shared subterms are emitted once). A class whose
chosen e-node is exactly the term an original FX node lowered to keeps that node: same target and
spelling, name, stack trace and metadata. New nodes are spelled in plain Torch-IR and get their fake
values from a propagation pass over the new graph. In a graph with symbolic sizes every size argument
is read back from its engine encoding and computed from the new graph's inputs (``eqsat_torch.lowering.symbolic``).
"""
from __future__ import annotations

import ast
import functools
import math
import operator
from typing import Any, Sequence

import networkx as nx
import torch
import torch.nn.functional as F
from torch.fx.node import map_aggregate

from eqsat import ops
from eqsat.ops import Ctor, Role
from eqsat.serialized import ROOT, Choice, EGraphView, ENode
from eqsat.terms import Ref

from eqsat_torch.raising import aten_spelling
from eqsat_torch.inductor import compat
from eqsat_torch.lowering.lowered import Lowered, OpaqueSpec, Slot, TupleVal, Unsupported
from eqsat_torch.lowering.symbolic import SymNodes, SymScalar, fake_inputs, shape_env_of
from eqsat_torch.lowering.targets import torch_callable
from eqsat_torch.safety.context import Context

_OPERATOR_OF = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
    "pow": operator.pow, "floor_divide": operator.floordiv, "remainder": operator.mod,
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
    "ge": operator.ge, "bitwise_and": operator.and_, "bitwise_or": operator.or_, "bitwise_xor": operator.xor,
}


@functools.lru_cache(maxsize=4)
def _torch_targets(version: int) -> dict[str, str]:
    """Constructors with their own registry row, raised as that row's Torch-IR target."""
    return {op.ctor: op.torch for op in ops.ALL_OPS if op.torch is not None and op.ctor not in ops.KEYED_POINTWISE
            and op.ctor not in (Ctor.REDUCE, Ctor.SOFTMAX, Ctor.LAYER_NORM)}


# Per dialect, constructors spelled differently from the Torch-IR default below.
_SPELLINGS = {"torch": lambda: {}, "aten": aten_spelling.spelling}
# Meta keys a fresh node's fake value goes under: Dynamo reads example_value, Inductor val.
_VALUE_KEYS = {"torch": ("val", "example_value"), "aten": ("val",)}
_SPECIAL_FLOATS = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def resolve_pointwise(name: str):
    op = ops.BY_NAME.get(name)
    if op is not None and op.torch is not None:
        return torch_callable(op.torch)
    for ns in (torch, F, torch.special):
        fn = getattr(ns, name, None)
        if callable(fn):
            return fn
    raise KeyError(f"no torch function for pointwise op {name!r}")


def _scalar(text: str):
    return _SPECIAL_FLOATS[text] if text in _SPECIAL_FLOATS else ast.literal_eval(text)


class _Raiser:
    def __init__(self, low: Lowered, view: EGraphView, choice: Choice, fx_of_enode: dict[str, torch.fx.Node]):
        self.low, self.view, self.choice, self.fx_of_enode = low, view, choice, fx_of_enode
        self.graph = torch.fx.Graph()
        self.env: dict[str, Any] = {}
        self.placeholders: dict[str, torch.fx.Node] = {}
        self._name: str | None = None
        self.spelling = _SPELLINGS[low.dialect]()
        self.targets = _torch_targets(ops.version())
        self.sym: SymNodes | None = None  # set once the placeholders exist
        self.bypassed: list[torch.fx.Node] = []  # views a unary was moved below (``_below_view``)
        self._from_term: set[str] = set()  # classes whose original node is not copied (``emit_all``)

    def size(self, v: Any) -> Any:
        """A literal argument as raising writes it: an encoded symbolic size becomes a ``Linear``."""
        if not self.low.sizes:
            return v
        if isinstance(v, int) and not isinstance(v, bool):
            return self.low.sizes.table.linear(v)
        if isinstance(v, tuple) and all(isinstance(i, int) for i in v):
            return tuple(self.low.sizes.table.linear(i) for i in v)
        return v

    def _class_of(self, ref: Ref) -> str:
        return self.view.lets[ref.let]

    def _original_of(self, cls: str) -> torch.fx.Node | None:
        return self.fx_of_enode.get(self.choice[cls])

    def _copy_inputs(self, orig: torch.fx.Node) -> list[str] | None:
        """Classes of an original node's tensor inputs; None when it reads a multi-output value or a
        class the extracted program does not compute (then the node is rebuilt from its term)."""
        classes = []
        for a in orig.all_input_nodes:
            v = self.low.read(orig, a)
            if isinstance(v, TupleVal):
                return None
            if isinstance(v, Ref):
                if self._class_of(v) not in self.choice:
                    return None
                classes.append(self._class_of(v))
        return classes

    # -- emission --------------------------------------------------------------------------------
    def _copied_inputs(self, cls: str) -> list[str] | None:
        """The classes a copy of ``cls``'s original node reads; None when it is built from its term."""
        orig = self._original_of(cls)
        if orig is None or orig.op == "placeholder" or cls in self._from_term:
            return None
        return self._copy_inputs(orig)

    def deps(self, cls: str) -> list[str]:
        copy_in = self._copied_inputs(cls)
        if copy_in is not None:
            return copy_in
        return list(dict.fromkeys(self.view.nodes[self.choice[cls]].children))

    def emit_all(self, roots: Sequence[str]) -> None:
        """Build every class the roots need, producers first (classes already built are leaves). A
        copied original can read its own class: ``narrow(p, 1, 0, 1)`` of a one-wide piece ``p`` of
        ``split(x, 1, 1)`` is ``p`` (soak seed 3001295), and the two nodes share one e-node. The chosen
        terms form no cycle, so the classes on a cycle of copies are built from their terms."""
        while True:
            g = nx.DiGraph()
            g.add_edges_from((ROOT, r) for r in roots)
            g.add_edges_from((c, d) for c in self.choice if c not in self.env for d in self.deps(c))
            try:
                cycle = nx.find_cycle(g, ROOT)
            except nx.NetworkXNoCycle:
                break
            self._from_term.update(c for c, _ in cycle)
        for cls in nx.dfs_postorder_nodes(g, ROOT):
            if cls is not ROOT and cls not in self.env:
                self.env[cls] = self.build(cls)

    def build(self, cls: str) -> Any:
        orig = self._original_of(cls)
        if self._copied_inputs(cls) is not None:
            return self._copy(orig)
        self._name = orig.name if orig is not None else None
        e = self.view.nodes[self.choice[cls]]
        view = self._view_of_computed(e.args[1]) if e.ctor == Ctor.UNARY else None
        value = self.from_term(e) if view is None else self._below_view(self.size(e.args[0][1]), view)
        if isinstance(value, torch.fx.Node) and orig is not None and self._name is None:
            value.meta.update({k: v for k, v in orig.meta.items() if k not in ("val", "example_value", "tensor_meta")})
        self._name = None
        return value

    def _copy(self, orig: torch.fx.Node) -> torch.fx.Node:
        def arg(a):
            v = self.low.read(orig, a)
            if isinstance(v, Ref):
                return self.env[self._class_of(v)]
            return self.sym.args(v) if self.low.sizes else v

        return self.graph.node_copy(orig, arg)

    def _under_no_grad(self, make) -> torch.fx.Node:
        """A view made inside a ``no_grad`` region and read outside it, made inside one again
        (``lower._Lowerer.escaped``); a region per node: what the rest of the graph computes inside
        a region reads its inputs through ``detach`` and needs none."""
        switch = compat.grad_mode_switch()
        self.graph.call_function(switch, (False,))
        node = make()
        self.graph.call_function(switch, (True,))
        return node

    def node(self, op: str, target, args: tuple, kwargs: dict | None = None) -> torch.fx.Node:
        """Create a node, taking the pending original name (only the outermost node gets it)."""
        name, self._name = self._name, None
        if self.low.sizes:
            args, kwargs = self.sym.args(tuple(args)), self.sym.args(kwargs or {})
        return self.graph.create_node(op, target, tuple(args), kwargs or {}, name=name)

    def call(self, target, *args, **kwargs) -> torch.fx.Node:
        return self.node("call_function", target, args, kwargs)

    def from_term(self, e: ENode) -> Any:
        a = [self.env[v] if kind == "class" else self.size(v) for kind, v in e.args]
        c = e.ctor
        if c in self.spelling:
            return self.spelling[c](self, a)
        if c == Ctor.INPUT:
            return self.placeholders[a[0]]
        if c == Ctor.PARAM:
            return self.node("get_attr", a[0], ())
        if c == Ctor.SCALAR:
            return self.sym.arg(SymScalar(int(a[0][4:]))) if a[0].startswith("sym:") else _scalar(a[0])
        if c == Ctor.NONE:
            return None
        if c == Ctor.NIL:
            return []
        if c == Ctor.CONS:
            return [a[0]] + a[1]
        if c in Role.KEYED_POINTWISE:
            return self.pointwise(a[0], a[1:])
        if c == Ctor.REDUCE:
            name, attrs = self.low.keys.decode(a[0])
            row = ops.BY_NAME[name]
            dim = a[2][0] if row.one_dim else list(a[2])
            return self.call(torch_callable(row.torch), a[1], dim=dim, keepdim=bool(a[3]), **attrs)
        if c == Ctor.SOFTMAX:
            return self.call(torch_callable(ops.BY_NAME[a[0]].torch), a[1], a[2])
        if c == Ctor.LAYER_NORM:
            return self.call(torch_callable(ops.BY_NAME["layer_norm"].torch), a[0], list(a[1]), a[2], a[3], float(a[4]))
        if c in self.targets:
            return self.torch_call(self.targets[c], a)
        if c == Ctor.OPAQUE:
            return self.opaque(self.low.opaque[a[0]], a[1])
        if c == Ctor.GET:
            tup = self.view.nodes[self.choice[e.args[0][1]]]
            if tup.ctor == Ctor.OPAQUE and self.low.opaque[tup.args[0][1]].out in ("tensor", "scalar"):
                return a[0]
            return self.call(operator.getitem, a[0], a[1])
        raise NotImplementedError(f"cannot raise constructor {c}")

    def _view_of_computed(self, arg: tuple[str, str]) -> torch.fx.Node | None:
        """The FX view a unary reads, when it reshapes a tensor this graph computes (a chain of views
        whose root is no input or parameter) and takes that tensor as its first argument."""
        kind, cls = arg
        if kind != "class" or self.view.nodes[self.choice[cls]].ctor != Ctor.VIEW:
            return None
        fx_view, source = self.env[cls], self.view.nodes[self.choice[cls]].args[0]
        if not (isinstance(fx_view, torch.fx.Node) and fx_view.args and source[0] == "class"
                and fx_view.args[0] is self.env.get(source[1])):
            return None
        while kind == "class" and self.view.nodes[self.choice[cls]].ctor == Ctor.VIEW:  # to the chain's root
            kind, cls = self.view.nodes[self.choice[cls]].args[0]
        root = self.view.nodes[self.choice[cls]].ctor if kind == "class" else None
        return fx_view if root is not None and root not in (Ctor.INPUT, Ctor.PARAM) else None

    def _below_view(self, key: str, view: torch.fx.Node) -> torch.fx.Node:
        """``unary(reshape(y, s))`` emitted as ``reshape(unary(y), s)``. Equal values, but Inductor fuses
        a norm's or reduction's epilogue only in the producer's iteration space: on the H200 a tanh
        after the reshape of batched layer norms kept the norm's statistics in a kernel of their own
        (4 forward kernels; 3 with the tanh before the reshape)."""
        name, self._name = self._name, None
        self.bypassed.append(view)
        inner = self.pointwise(key, [view.args[0]])
        return self.graph.create_node(view.op, view.target, (inner, *view.args[1:]), dict(view.kwargs), name=name)

    def torch_call(self, target: str, args: list) -> torch.fx.Node:
        """A row's Torch-IR target (``Tensor.x`` is a method) with int-list arguments as lists."""
        args = [list(x) if isinstance(x, tuple) else x for x in args]
        if target.startswith("Tensor."):
            return self.node("call_method", target.removeprefix("Tensor."), tuple(args))
        return self.call(torch_callable(target), *args)

    def pointwise(self, key: str, operands: list) -> torch.fx.Node:
        name, attrs = self.low.keys.decode(key)
        if self.low.dialect == "aten":
            return aten_spelling.pointwise(self, name, attrs, operands)
        if name == "to_dtype":
            return self.node("call_method", "to", (operands[0],), {"dtype": attrs["dtype"]})
        if name == "detach":
            return self.node("call_method", "detach", (operands[0],))
        if not isinstance(operands[0], torch.fx.Node) and not attrs and name in _OPERATOR_OF:
            return self.call(_OPERATOR_OF[name], *operands)
        return self.call(resolve_pointwise(name), *operands, **attrs)

    def opaque(self, spec: OpaqueSpec, tensors: list) -> torch.fx.Node:
        def fill(x):
            return tensors[x.index] if isinstance(x, Slot) else x

        def make():
            return self.node(spec.op, spec.target, map_aggregate(spec.args, fill), map_aggregate(spec.kwargs, fill))

        return self._under_no_grad(make) if spec.no_grad else make()

    def output(self) -> None:
        self.graph.output(map_aggregate(
            self.low.output, lambda x: self.env[self._class_of(x)] if isinstance(x, Ref) else x))


def raise_graph(low: Lowered, view: EGraphView, choice: Choice, roots: Sequence[str],
                example_inputs: Sequence[Any], fx_of_enode: dict[str, torch.fx.Node]) -> torch.fx.GraphModule:
    """Build the GraphModule that computes ``low``'s outputs with the e-nodes in ``choice``;
    ``fx_of_enode`` names the original FX node of each input e-node (see ``eqsat.original.input_program``)."""
    r = _Raiser(low, view, choice, fx_of_enode)
    for ph in low.placeholders:
        new = r.graph.node_copy(ph, lambda a: a)
        r.placeholders[ph.name] = new
        v = low.values.get(ph)
        if isinstance(v, Ref):
            r.env.setdefault(view.lets[v.let], new)
    r.sym = SymNodes(r.graph, low.sizes, list(r.placeholders.values()),
                     [compat.node_value(ph) for ph in low.placeholders], low.dialect)
    r.emit_all(roots)
    r.output()
    for v in r.bypassed:  # views only the sunk unary read
        if not v.users:
            r.graph.erase_node(v)
    gm = torch.fx.GraphModule(low.gm, r.graph)
    refresh_fake_values(gm, example_inputs, low.dialect)
    return gm


# Views that need an operand they can view, and the reshape that copies where they cannot. Rules are
# true as values and may drop the copy that made a view's operand contiguous (``cat([x])`` → ``x`` of a
# transposed ``x``, ``stack(unbind(x))`` → ``x`` of a channels_last one, a preserve-format clone in one
# class with a contiguous one): the original view, kept, then reads a layout it cannot view.
_RESHAPE_OF = {("call_method", "view"): "reshape", ("call_method", "view_as"): "reshape_as",
               ("call_function", torch.Tensor.view): torch.Tensor.reshape,
               ("call_function", torch.ops.aten.view.default): torch.ops.aten.reshape.default,
               ("call_function", torch.ops.aten._unsafe_view.default): torch.ops.aten.reshape.default}


def _reshape_unviewable(n: torch.fx.Node) -> bool:
    """Respell a view that failed as its reshape (not a view to a dtype: that reinterprets bits)."""
    target = _RESHAPE_OF.get((n.op, n.target))
    if target is None or any(isinstance(a, torch.dtype) for a in (*n.args[1:], *n.kwargs.values())):
        return False
    n.target = target
    n.meta.pop("example_value", None)  # its recorded value was a view: now a fresh copy
    return True


def _refuse_if_autocast_stops_it(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], e: Exception) -> None:
    """Raise :class:`Unsupported` where the program failed only because of the compile's autocast:
    its per-op policy refuses some dtypes (soak seed 3000284: a batched linear's ``stack`` of
    float16 pieces under CPU bfloat16 autocast, which eager never ran). Such a program is kept out,
    as a rewrite that changes which ops run must keep autocast's policy (``safety.context``)."""
    ctx = Context.capture()
    if not ctx.autocasting():
        return
    try:
        with ctx.for_aten().entered():
            compat.propagate_fake(gm, fake_inputs(gm, example_inputs), None)
    except Exception:  # noqa: BLE001 — it fails without autocast too: the original error stands
        return
    raise Unsupported(f"the rewritten program does not run under the compile's {ctx.describe()} "
                      f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})") from e


def refresh_fake_values(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], dialect: str) -> None:
    """Propagate fake values through ``gm``: every node's ``val`` comes from this one run (the
    aliasing check compares their storages), and nodes we created also get the key their dialect's
    compiler reads. A symbolic graph is traced over its own symbols, and must need no new guard. A
    view whose operand now has a layout it cannot view becomes a reshape (``_RESHAPE_OF``)."""
    inputs = fake_inputs(gm, example_inputs)
    shape_env = shape_env_of(inputs)
    respelled: list[torch.fx.Node] = []

    def mend(n: torch.fx.Node) -> bool:
        if not _reshape_unviewable(n):
            return False
        respelled.append(n)
        return True

    try:
        with compat.no_new_guards(shape_env):  # valid for every admitted size, or refused
            compat.propagate_fake(gm, inputs, mend)
    except Exception as e:
        if shape_env is None:
            _refuse_if_autocast_stops_it(gm, example_inputs, e)
            raise
        raise compat.NewGuard(f"the graph does not trace over symbolic sizes: {type(e).__name__}: "
                                    f"{str(e).splitlines()[0] if str(e) else ''}") from e
    for n in gm.graph.nodes:
        if "example_value" not in n.meta and n.op != "output":
            for key in _VALUE_KEYS[dialect]:
                n.meta[key] = n.meta.get("val")
    if respelled:
        gm.recompile()
