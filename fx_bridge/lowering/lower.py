"""FX graph → egglog terms: one ``let`` per node, shape/dtype facts, unknown ops as ``Opaque``.

Every spelling of an op lowers to one canonical term (negative dims normalised, split sizes and view
shapes resolved from the recorded fake values), so rules match syntactically. What we do not know
becomes ``Opaque`` and round-trips exactly. Graphs we cannot prove safe to rewrite (mutation,
non-tensor values we cannot fold, sizes the symbolic encoding cannot hold) raise :class:`Unsupported`,
and the caller keeps the original graph. Symbolic sizes are encoded by ``eqsat_torch.lowering.symbolic`` (every size below is an
engine integer: a literal, or an encoded linear form over the graph's symbols); a node whose size
depends on data (an unbacked symbol) is lowered as opaque, and so is every op that would need it.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch
from torch.fx.node import map_aggregate

from eqsat import ops
from eqsat.deadline import Deadline
from eqsat.sizes import SizeOverflow
from eqsat.terms import IVec, KeyTable, Program, Ref, Term, TList, render

from eqsat_torch.lowering import attention
from eqsat_torch.inductor import compat
from eqsat_torch.lowering.symbolic import SymbolicSizes, SymScalar, UnbackedSize, fake_inputs
from eqsat_torch.lowering.targets import INPLACE_OPERATORS, canonical_name, target_label

# Ops whose result depends on their input's memory layout (storage, offset, strides), not only on
# its values. Everything their input aliases is pinned: lowered as a unique opaque term, so no rule
# can replace it and it is raised exactly as eager computed it.
LAYOUT_READERS = {"as_strided", "as_strided_copy", "as_strided_scatter", "stride", "storage_offset",
                  "data_ptr", "untyped_storage", "is_contiguous", "set_"}

RANDOM_NAMES = {
    "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout", "rand",
    "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm", "bernoulli", "multinomial",
    "normal", "poisson", "native_dropout",
}


class Unsupported(Exception):
    """The graph is outside what the optimizer can rewrite safely; the reason says why."""


# Modules of the calls ``torch.func`` transforms (vmap, grad, jacrev, ...) leave in a Dynamo graph:
# between them values are batched or grad-wrapped tensors that only exist inside the transform's
# interpreter, so the graph cannot be run outside it (fake propagation) nor rewritten as plain tensors.
FUNCTORCH_MODULES = ("torch._functorch", "torch._C._functorch")


def refuse_functorch(gm: torch.fx.GraphModule) -> None:
    """Raise :class:`Unsupported` naming the first ``torch.func`` transform call in ``gm``."""
    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    transforms = {t for t in {n.target for n in calls}  # each target once: a pass that must stay cheap
                  if (getattr(t, "__module__", None) or "").startswith(FUNCTORCH_MODULES)}
    if transforms:
        n = next(n for n in calls if n.target in transforms)
        raise Unsupported(f"torch.func transform inside the graph ({n.name}: {target_label(n)}): "
                          "its batched or grad-wrapped tensors are not plain tensors")


@dataclass
class TupleVal:
    """A multi-output value: ``piece(i)`` is the Ref of output i (bound lazily)."""

    piece: Callable[[int], Ref]
    n: int
    tup: Ref  # the TTuple term the pieces are read from


@dataclass
class OpaqueSpec:
    """How to rebuild an opaque node: its FX op and target, args with tensor slots, output kind."""

    op: str
    target: Any
    args: tuple
    kwargs: dict
    out: str  # "tensor" | "tuple" | "none" | "scalar" (a data-dependent SymInt/SymBool/SymFloat)
    label: str
    no_grad: bool = False  # a view made inside a ``no_grad`` region: raised inside one (``_Lowerer.escaped``)


@dataclass
class Slot:
    index: int


@dataclass
class Lowered:
    gm: torch.fx.GraphModule
    program: Program = field(default_factory=Program)         # lets and facts, for Session.load
    roots: list[str] = field(default_factory=list)           # lets the program must produce
    output: Any = None                                       # output structure with Ref/const leaves
    node_of_let: dict[str, torch.fx.Node] = field(default_factory=dict)
    originals: dict[str, Term] = field(default_factory=dict)
    keys: KeyTable = field(default_factory=KeyTable)
    opaque: dict[str, OpaqueSpec] = field(default_factory=dict)
    placeholders: list[torch.fx.Node] = field(default_factory=list)
    shapes: dict[str, tuple] = field(default_factory=dict)
    dtypes: dict[str, str] = field(default_factory=dict)
    params: set[str] = field(default_factory=set)
    values: dict[torch.fx.Node, Any] = field(default_factory=dict)  # FX node → Ref/TupleVal/const
    dialect: str = "torch"                                   # "torch" (Dynamo) | "aten" (post-grad)
    sizes: SymbolicSizes = field(default_factory=SymbolicSizes)  # encoding of symbolic sizes
    reads: dict[torch.fx.Node, dict[torch.fx.Node, Any]] = field(default_factory=dict)  # reads across a no_grad boundary
    grad_dead: set[str] = field(default_factory=set)  # lets that require grad yet pass none to an output

    def read(self, n: torch.fx.Node, a: torch.fx.Node) -> Any:
        """What node ``n`` read for its input ``a``: inside a ``no_grad`` region a value carrying
        autograd history is read through ``detach``, outside one a view made inside it is read as
        its remake (``_Lowerer.escaped``); a copy of ``n`` must read that too."""
        return self.reads.get(n, {}).get(a, self.values.get(a))

    @property
    def num_terms(self) -> int:
        return len(self.originals)


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _norm_dim(d: int, rank: int) -> int:
    if not -max(rank, 1) <= d < max(rank, 1):
        raise Unsupported(f"dim {d} out of range for rank {rank}")
    return d % rank if rank else 0


# Nodes lowered between two looks at the clock (~0.1 ms a node: a 16k-node graph took 1.2-3.8 s).
CLOCK_NODES = 256


class _Lowerer:
    def __init__(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any], deadline: Deadline | None = None):
        self.gm = gm
        self.deadline = deadline
        self.out = Lowered(gm)
        self.example_inputs = list(example_inputs)
        self.values: dict[torch.fx.Node, Any] = self.out.values
        self._count = 0
        self._memo: dict[str, Ref] = {}
        self.float_keys: set[str] = set()
        self.pinned: set[torch.fx.Node] = set()
        self.input_writes: set[torch.fx.Node] = set()  # kept as effects, see confined_input_write
        # Grad mode: the one the graph is compiled (and run) under, and the current one. Inside a
        # ``no_grad`` block every value from outside that carries autograd history is read through
        # ``detach``, so no rewrite can move a computation across the block's boundary.
        self.grad_base = self.grad = torch.is_grad_enabled()
        self.grad_carrying: set[torch.fx.Node] = set()
        self.no_grad_views: set[torch.fx.Node] = set()
        self.escapes: dict[torch.fx.Node, Any] = {}
        self.grad_switch, self.inference_mode = compat.grad_mode_switch(), compat.inference_mode_targets()

    # -- emitting --------------------------------------------------------------------------------
    def emit(self, term: Term, shape: Sequence[int] | None = None, dtype: str | None = None) -> Ref:
        """Bind a term with ``let`` (hash-consed: the same term text gives the same Ref)."""
        text = render(term)
        if text in self._memo:
            return self._memo[text]
        self._count += 1
        ref = self.out.program.let(f"$t{self._count}", term)
        self._memo[text] = ref
        self.out.originals[ref.let] = term
        if shape is not None:
            self.set_facts(ref, tuple(shape), dtype)
        return ref

    def set_facts(self, ref: Ref, shape: tuple, dtype: str | None) -> None:
        if ref.let in self.out.shapes:
            return
        self.out.shapes[ref.let] = shape
        self.out.program.set_shape(ref, shape)
        if dtype is not None:
            self.out.dtypes[ref.let] = dtype
            self.out.program.set_dtype(ref, dtype)

    def shape(self, ref: Ref) -> tuple:
        try:
            return self.out.shapes[ref.let]
        except KeyError:
            raise Unsupported(f"no static shape for {ref.let}") from None

    def size(self, s: Any) -> int:
        """The engine integer of a size: an int, a SymInt or a lowered ``SymScalar``."""
        if isinstance(s, SymScalar):
            return s.size
        try:
            return self.out.sizes.size(s)
        except SizeOverflow as e:
            raise Unsupported(f"symbolic size: {e}") from None

    def sizes_of(self, shape: Sequence[Any]) -> tuple[int, ...]:
        return tuple(self.size(s) for s in shape)

    def scalar(self, v: Any) -> Ref:
        if isinstance(v, SymScalar):
            return self.emit(Term("Scalar", (f"sym:{v.size}",)), (), "scalar")
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            if not isinstance(v, bool):
                raise Unsupported(f"operand {v!r} is neither a tensor nor a number")
        # A float operand can promote an integer tensor; an int/bool one never changes a non-bool dtype.
        return self.emit(Term("Scalar", (repr(v),)), (), "scalar_float" if isinstance(v, float) else "scalar")

    def none(self) -> Ref:
        return self.emit(Term("NoneT", ()), (), "scalar")

    def operand(self, v: Any) -> Ref:
        if isinstance(v, Ref):
            return v
        return self.scalar(v)

    # -- driver ----------------------------------------------------------------------------------
    def run(self) -> Lowered:
        nodes = list(self.gm.graph.nodes)
        if any(n.op != "output" and n.users and compat.node_value(n) is None for n in nodes):
            compat.propagate_fake(self.gm, fake_inputs(self.gm, self.example_inputs))
        self.check_supported(nodes)
        self.pinned = layout_pinned(nodes)
        if any(n.op == "call_function" and compat.is_aten(n.target) for n in nodes):
            self.out.dialect = "aten"
        placeholder_i = 0
        for i, n in enumerate(nodes):
            if self.deadline is not None and i % CLOCK_NODES == 0:
                self.deadline.check("lower")
            if n.op == "placeholder":
                self.out.placeholders.append(n)
                example = self.example_inputs[placeholder_i] if placeholder_i < len(self.example_inputs) else None
                placeholder_i += 1
                self.values[n] = self.source(n, "Input", isinstance(example, torch.nn.Parameter))
            elif n.op == "get_attr":
                self.values[n] = self.source(n, "Param", True)
            elif n.op == "output":
                self.lower_output(n)
            elif self.switches_grad_mode(n):
                self.values[n] = None
            else:
                self.values[n] = self.lower_call(n)
                self.bind_node(n)
            if self.grad_base and _requires_grad(compat.node_value(n)):
                self.grad_carrying.add(n)
                if not self.grad:  # a view made in a no_grad region (see ``escaped``)
                    self.no_grad_views.add(n)
        self.out.grad_dead = self.grad_dead(nodes)
        return self.out

    def grad_dead(self, nodes: list[torch.fx.Node]) -> set[str]:
        """Lets of values that carry autograd history but pass no gradient to an output: every path
        to one leaves autograd (a ``no_grad`` region's read, a comparison). Eager leaves the ``.grad``
        of leaves reaching only those ``None``; stacked with a value that does pass gradient (a
        horizontal fusion), they would get zeros. A let is dead only if every node bound to it is."""
        live = grad_live(nodes, self.grad_carrying)

        def lets(ns) -> set[str]:
            vs = [self.values.get(n) for n in ns]
            return {v.let if isinstance(v, Ref) else v.tup.let for v in vs if isinstance(v, (Ref, TupleVal))}
        return lets(self.grad_carrying - live) - lets(live)

    def switches_grad_mode(self, n: torch.fx.Node) -> bool:
        """A ``no_grad`` / ``enable_grad`` boundary: not lowered; the mode it sets is tracked. Grad
        enabled under a graph compiled without it, and ``inference_mode`` (whose tensors may not
        enter autograd afterwards), are left to eager."""
        if n.op != "call_function":
            return False
        if n.target in self.inference_mode:
            raise Unsupported(f"inference_mode block inside the graph ({n.name})")
        if n.target is not self.grad_switch:
            return False
        flag = n.args[0] if n.args else n.kwargs.get("mode")
        if not isinstance(flag, bool):
            raise Unsupported(f"grad mode set to {flag!r} at {n.name}")
        if flag and not self.grad_base:
            raise Unsupported(f"grad enabled at {n.name} in a graph compiled with grad disabled")
        self.grad = flag
        return True

    def source(self, n: torch.fx.Node, ctor: str, is_param: bool) -> Any:
        val = compat.node_value(n)
        if isinstance(val, torch.SymInt):
            return self.sym_scalar(n, val)
        if not isinstance(val, torch.Tensor):
            if val is None or isinstance(val, (int, float, bool)):
                return val
            raise Unsupported(f"input {n.name} is a {type(val).__name__}")
        try:
            shape = self.sizes_of(val.shape)
        except UnbackedSize:
            raise Unsupported(f"input {n.name} has a data-dependent size") from None
        ref = self.emit(Term(ctor, (n.target if ctor == "Param" else n.name,)), shape, dtype_name(val.dtype))
        if is_param:
            self.out.params.add(ref.let)
            self.out.program.mark_param(ref)
        self.out.node_of_let.setdefault(ref.let, n)
        return ref

    def sym_scalar(self, n: torch.fx.Node, val: Any) -> SymScalar:
        try:
            return SymScalar(self.size(val))
        except UnbackedSize:
            raise Unsupported(f"data-dependent scalar at {n.name}") from None

    def bind_node(self, n: torch.fx.Node) -> None:
        """Attach the node's recorded shape to its term and remember which node it was. A shape the
        handler derived (a symbolic slice bound, say) must be the recorded one."""
        v = self.values[n]
        val = compat.node_value(n)
        if isinstance(v, Ref) and isinstance(val, torch.Tensor) and not _unbacked(val):
            shape = self.sizes_of(val.shape)
            if self.out.shapes.get(v.let, shape) != shape:
                raise Unsupported(f"{n.name}: lowered shape {self.out.shapes[v.let]} is not the recorded {shape}")
            self.set_facts(v, shape, dtype_name(val.dtype))
            self.out.node_of_let.setdefault(v.let, n)

    def check_supported(self, nodes: list[torch.fx.Node]) -> None:
        symbolic = False
        for n in nodes:
            val = compat.node_value(n)
            leaves: list = []
            map_aggregate(val, leaves.append)
            for leaf in leaves:
                symbolic = symbolic or compat.is_symbolic(leaf) or (
                    isinstance(leaf, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in leaf.shape))
            if n.op in ("call_function", "call_method") and self.is_mutation(n):
                if not self.confined_input_write(n):
                    raise Unsupported(f"mutation at {n.name} ({target_label(n)})")
                self.input_writes.add(n)
        self.out.sizes = SymbolicSizes(symbolic)

    @staticmethod
    def confined_input_write(n: torch.fx.Node) -> bool:
        """An in-place op on an input, parameter or buffer that nothing else in the graph reads, whose
        result is unused (BatchNorm's ``num_batches_tracked += 1``): when it runs relative to the
        rest cannot change any value, so it is kept as an effect (an opaque root, run exactly once)
        and the rest of the graph is optimized. Any other mutation skips the graph."""
        target = n.args[0] if n.args else None
        return (not n.users and isinstance(target, torch.fx.Node) and target.op in ("placeholder", "get_attr")
                and set(target.users) == {n})

    @staticmethod
    def is_mutation(n: torch.fx.Node) -> bool:
        """Asked of the op's schema, not its spelling: ``operator.and_`` (``a & b``) is pure,
        ``operator.iand``, ``Tensor.add_`` and ``aten.add_.Tensor`` write their first argument."""
        if n.kwargs.get("inplace") is True or "out" in n.kwargs:
            return True
        if n.op == "call_function" and getattr(n.target, "__module__", None) == "_operator":
            return n.target in INPLACE_OPERATORS
        if n.op == "call_function" and compat.is_aten(n.target):
            return compat.aten_schema_is_mutable(n.target)
        name = n.target if n.op == "call_method" else getattr(n.target, "__name__", "")
        if not isinstance(name, str):
            return False
        writes = compat.aten_name_writes_inputs(name)
        # A name aten does not know is judged by the in-place naming convention, to stay safe.
        return writes if writes is not None else name.endswith("_") and not name.endswith("__")

    def lower_output(self, n: torch.fx.Node) -> None:
        if self.grad != self.grad_base:
            raise Unsupported("the graph ends in another grad mode than it starts in")

        def leaf(x):
            if isinstance(x, torch.fx.Node):
                v = self.value_of(x)
                if isinstance(v, TupleVal):
                    v = tuple(v.piece(i) for i in range(v.n))
                    self.out.roots.extend(r.let for r in v if isinstance(r, Ref))
                elif isinstance(v, Ref):
                    self.out.roots.append(v.let)
                return v
            return x

        self.out.output = map_aggregate(n.args[0], leaf)

    # -- calls -----------------------------------------------------------------------------------
    def lower_call(self, n: torch.fx.Node) -> Any:
        val = compat.node_value(n)
        name = canonical_name(n)
        if isinstance(val, (int, float, bool)) and not isinstance(val, torch.Tensor) and name in (
                "size", "dim", "numel", "add", "sub", "mul", "floor_divide", "getitem", "div"):
            return val  # static shape arithmetic: folded into its consumers
        if _backed_int(val) or (isinstance(val, (tuple, list)) and val and all(
                isinstance(v, (int, torch.SymInt)) and not isinstance(v, bool) for v in val)
                and any(isinstance(v, torch.SymInt) for v in val) and all(map(_backed_int, val))):
            # symbolic size arithmetic (``x.size(0)``, ``s0 * 2``, ``x.shape``): its value is an
            # expression over the graph's symbols, rebuilt from the inputs wherever it is needed
            return map_aggregate(val, lambda v: self.sym_scalar(n, v) if isinstance(v, torch.SymInt) else v)
        args = map_aggregate(n.args, lambda x: self.value_of(x, n))
        kwargs = dict(map_aggregate(dict(n.kwargs), lambda x: self.value_of(x, n)))
        if _unbacked(val) or any(isinstance(r, Ref) and r.let not in self.out.shapes
                                 for r in _leaves((args, kwargs))):
            return self.opaque(n, args, kwargs)  # a data-dependent size: nothing to rewrite here
        if not args:  # torch.split(tensor=x, ...), torch.unbind(input=x): the tensor goes first
            first = next((k for k in ("input", "tensor", "self") if k in kwargs), None)
            if first is not None:
                args = (kwargs.pop(first),)
        if n in self.pinned or n in self.input_writes:
            return self.opaque(n, args, kwargs)
        extremum = ELEMENTWISE_EXTREMA.get(name or target_label(n).rsplit(".", 1)[-1])
        if extremum and len(args) == 2 and not kwargs and all(isinstance(a, Ref) for a in args):
            name = extremum
        if name is not None and not self.is_random(n, name):
            handler = handlers().get(name)
            if handler is None and ops.pointwise_arity(name) is not None:
                handler = _lower_pointwise
            if handler is not None:
                result = handler(self, n, name, args, kwargs)
                if result is not NotImplemented:
                    return result
        return self.opaque(n, args, kwargs)

    def value_of(self, x: Any, reader: torch.fx.Node | None = None) -> Any:
        if isinstance(x, torch.fx.Node):
            if self.grad and x in self.no_grad_views:
                read = self.escaped(x)
            elif not self.grad and x in self.grad_carrying:
                read = self.detached(self.values[x])
            else:
                return self.values[x]
            if reader is not None:
                self.out.reads.setdefault(reader, {})[x] = read
            return read
        return x

    def escaped(self, n: torch.fx.Node) -> Any:
        """A view made inside a ``no_grad`` region of a value carrying autograd history, read outside
        the region (or returned): eager's has ``requires_grad`` (a leaf without history), a view of
        the ``detach`` the region reads would not. So it is made again, of the value itself, as an
        opaque node raised inside a ``no_grad`` region (the region's own reads keep the cut view)."""
        if n not in self.escapes:
            def raw(a):
                if not isinstance(a, torch.fx.Node):
                    return a
                return self.escaped(a) if a in self.no_grad_views else self.values[a]

            args, kwargs = map_aggregate(n.args, raw), dict(map_aggregate(dict(n.kwargs), raw))
            if canonical_name(n) == "getitem" and len(args) == 2 and isinstance(args[0], TupleVal) and isinstance(args[1], int):
                v = args[0].piece(args[1])  # a piece of an escaped tuple: no tensor op of its own
            else:
                v = self.opaque(n, args, kwargs, no_grad=True)
            val = compat.node_value(n)
            if isinstance(v, Ref) and isinstance(val, torch.Tensor) and not _unbacked(val):
                self.set_facts(v, self.sizes_of(val.shape), dtype_name(val.dtype))
            self.escapes[n] = v
        return self.escapes[n]

    def detached(self, v: Any) -> Any:
        """``v`` read inside a ``no_grad`` block: the same values, without autograd history."""
        if isinstance(v, Ref):
            return self.emit(Term("Unary", ("detach", v)), self.out.shapes.get(v.let), self.out.dtypes.get(v.let))
        if isinstance(v, TupleVal):
            return TupleVal(lambda i: self.detached(v.piece(i)), v.n, v.tup)
        if isinstance(v, (tuple, list)):
            return type(v)(self.detached(p) for p in v)
        return v

    @staticmethod
    def is_random(n: torch.fx.Node, name: str) -> bool:
        if name == "dropout":
            p = _arg(n.args, n.kwargs, 1, "p", 0.5)
            training = _arg(n.args, n.kwargs, 2, "training", n.op == "call_function")
            return bool(training) and p != 0
        return name in RANDOM_NAMES

    def opaque(self, n: torch.fx.Node, args: Any, kwargs: Any, no_grad: bool = False) -> Any:
        val = compat.node_value(n)
        tensors: list[Ref] = []

        def slot(x):
            if isinstance(x, TupleVal):
                return tuple(slot(x.piece(i)) for i in range(x.n))
            if isinstance(x, Ref):
                tensors.append(x)
                return Slot(len(tensors) - 1)
            return x

        t_args = map_aggregate(args, slot)
        t_kwargs = map_aggregate(kwargs, slot)
        if isinstance(val, torch.Tensor):
            out = "tensor"
        elif isinstance(val, (tuple, list)) and any(isinstance(v, torch.Tensor) for v in val) and all(
                isinstance(v, torch.Tensor) or _static_scalar(v) for v in val):
            out = "tuple"  # native_layer_norm_backward's None grads, SDPA's int seeds: constants
        elif val is None and not n.users:
            out = "none"
        elif compat.is_symbolic(val):
            out = "scalar"  # data-dependent (``.item()``, ``u0 >= 0``): computed as eager does
        else:
            raise Unsupported(f"{n.name} ({target_label(n)}) returns {type(val).__name__}")
        label = target_label(n) + (ops.DECOMPOSED_ATTENTION if _decomposed_on_cuda(n) else "")
        effectful = (self.is_random(n, canonical_name(n) or "") or out == "none" or n in self.input_writes
                     or compat.aten_is_random(n.target) or label.split(".")[-1] in RANDOM_NAMES)
        unique = effectful or n in self.pinned
        ident = (label, repr(t_args), repr(sorted(t_kwargs.items())), out, n.name if unique else "",
                 *(("no_grad",) if no_grad else ()))
        key = self.out.keys.key(f"{ops.OPAQUE_KEY_PREFIX}{label}", {"sig": ident})
        self.out.opaque.setdefault(key, OpaqueSpec(n.op, n.target, t_args, t_kwargs, out, label, no_grad))
        tup = self.emit(Term("Opaque", (key, TList(tuple(tensors)))))
        if not no_grad:  # n's own copy reads what n read in its region
            self.out.node_of_let.setdefault(tup.let, n)
        if effectful:
            self.out.roots.append(tup.let)
        if out in ("tensor", "scalar"):
            return self.emit(Term("Get", (tup, 0)))
        if out == "tuple":
            k = len(val)

            def piece(i: int) -> Any:
                i = _norm_dim(i, k)
                return self.emit(Term("Get", (tup, i))) if isinstance(val[i], torch.Tensor) else val[i]

            return TupleVal(piece, k, tup)
        return None


def _leaves(x: Any) -> list:
    out: list = []
    map_aggregate(x, out.append)
    return out


# Node meta of a window's node (``eqsat_torch.scale.regions``) whose value passes no gradient to the outputs of
# the whole graph: in the window it may be an output (read by a later window's ``no_grad`` region),
# which says nothing of its gradient.
GRAD_DEAD = "eqsat_grad_dead"


def grad_live(nodes: list[torch.fx.Node], carrying: set[torch.fx.Node]) -> set[torch.fx.Node]:
    """The nodes of ``carrying`` with a path to an output through ``carrying`` alone; an output edge of
    a node marked ``GRAD_DEAD`` is no such path."""
    live: set[torch.fx.Node] = set()
    for n in reversed(nodes):
        if n in carrying and any(u in live or (u.op == "output" and not n.meta.get(GRAD_DEAD)) for u in n.users):
            live.add(n)
    return live


def grad_dead_nodes(gm: torch.fx.GraphModule) -> set[torch.fx.Node]:
    """Nodes whose value requires grad yet passes none to the graph's outputs (as ``Lowered.grad_dead``,
    for a whole graph before it is cut into windows)."""
    if not torch.is_grad_enabled():
        return set()
    nodes = list(gm.graph.nodes)
    carrying = {n for n in nodes if n.op != "output" and _requires_grad(compat.node_value(n))}
    return carrying - grad_live(nodes, carrying)


def _requires_grad(val: Any) -> bool:
    return any(isinstance(t, torch.Tensor) and t.requires_grad for t in _leaves(val))


def _backed_int(v: Any) -> bool:
    """A SymInt with a hint: an expression over the graph's size symbols, rebuilt where needed."""
    return isinstance(v, torch.SymInt) and compat.symint_hint(v) is not None


def _unbacked(val: Any) -> bool:
    """A value that depends on data: a symbolic scalar without a hint (or a SymBool/SymFloat), or a
    tensor with such a size. Its node is opaque, and so is every op reading it."""
    for leaf in _leaves(val):
        sizes = list(leaf.shape) if isinstance(leaf, torch.Tensor) else [leaf]
        if any(compat.is_symbolic(s) and not _backed_int(s) for s in sizes):
            return True
    return False


def _static_scalar(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float, bool)) and not compat.is_symbolic(v))


def _decomposed_on_cuda(n: torch.fx.Node) -> bool:
    """An attention call CUDA runs as two ``bmm`` and a softmax, not one fused kernel, by the layouts
    Dynamo recorded (the GPU cost model prices it so; ``attention.cuda_fuses``)."""
    if target_label(n).rsplit(".", 1)[-1] != ops.SDPA_NAME:
        return False
    q, k, v, mask = (_arg(n.args, n.kwargs, i, name) for i, name in enumerate(("query", "key", "value", "attn_mask")))
    vals = [compat.node_value(x) if isinstance(x, torch.fx.Node) else x for x in (q, k, v, mask)]
    if not all(isinstance(t, torch.Tensor) for t in vals[:3]) or not isinstance(vals[3], (torch.Tensor, type(None))):
        return False
    return not attention.cuda_fuses(*vals, enable_gqa=bool(n.kwargs.get("enable_gqa", False)))


def _arg(args: Sequence, kwargs: dict, pos: int, name: str, default: Any = None) -> Any:
    if len(args) > pos:
        return args[pos]
    return kwargs.get(name, default)


def _varargs(args: Sequence, start: int) -> list:
    """``x.view(2, 3)`` and ``x.view((2, 3))`` both give [2, 3]."""
    rest = list(args[start:])
    if len(rest) == 1 and isinstance(rest[0], (list, tuple, torch.Size)):
        return list(rest[0])
    return rest


def _out_meta(lw: "_Lowerer", n: torch.fx.Node) -> tuple[tuple, str]:
    val = compat.node_value(n)
    return lw.sizes_of(val.shape), dtype_name(val.dtype)


# -- handlers: (lowerer, node, name, args, kwargs) → value; NotImplemented → opaque ----------------
def _lower_pointwise(lw: _Lowerer, n, name, args, kwargs):
    arity = ops.pointwise_arity(name)
    if len(args) < arity:
        operands = list(args) + [kwargs.pop(k) for k in ("other", "exponent", "end", "weight") if k in kwargs]
        operands += [kwargs.pop(k) for k in ("input", "self") if k in kwargs]
        if len(operands) < arity:
            return NotImplemented
        args, rest = tuple(operands[:arity]), ()
    else:
        args, rest = tuple(args[:arity]), tuple(args[arity:])
    row = ops.BY_NAME[name]
    params = row.params
    if len(rest) > len(params):
        return NotImplemented
    attrs = dict(zip(params, rest))
    attrs.update({k: v for k, v in kwargs.items() if k not in ("input", "self")})
    defaults = dict(row.defaults)  # an attribute at its default is no part of the key
    attrs = {k: v for k, v in attrs.items() if not (k in defaults and v == defaults[k] and type(v) is type(defaults[k]))}
    if any(isinstance(v, (Ref, TupleVal, torch.fx.Node, SymScalar)) for v in attrs.values()):
        return NotImplemented  # tensor-valued attributes (clamp(min=t)) stay opaque
    if not any(isinstance(a, Ref) for a in args):
        return NotImplemented
    try:
        operands = tuple(lw.operand(a) for a in args)
    except Unsupported:
        return NotImplemented
    ctor = {1: "Unary", 2: "Binary", 3: "Ternary"}[arity]
    key = lw.out.keys.key(name, attrs)
    if key != name and ops.keeps_dtype(name) and key not in lw.float_keys:
        lw.float_keys.add(key)  # the analysis only knows plain names: this key keeps a float dtype too
        lw.out.program.keeps_dtype(key)
    return lw.emit(Term(ctor, (key,) + operands))


def _to_dtype(lw: _Lowerer, n, name, args, kwargs):
    x = args[0]
    if not isinstance(x, Ref):
        return NotImplemented
    val = compat.node_value(n)
    src = lw.out.dtypes.get(x.let)
    in_val = compat.node_value(n.args[0])
    if not isinstance(val, torch.Tensor) or getattr(in_val, "device", None) != val.device:
        return NotImplemented
    if kwargs.get("memory_format") is not None or kwargs.get("copy"):
        return NotImplemented
    if dtype_name(val.dtype) == src:
        return x
    return lw.emit(Term("Unary", (lw.out.keys.key("to_dtype", {"dtype": val.dtype}), x)))


def _identity_unless_random(lw, n, name, args, kwargs):
    return args[0] if isinstance(args[0], Ref) else NotImplemented


def _detach(lw, n, name, args, kwargs):
    return lw.emit(Term("Unary", ("detach", args[0])))


def _copy(lw, n, name, args, kwargs):
    if kwargs.get("memory_format") not in (None, torch.contiguous_format) or not isinstance(args[0], Ref):
        return NotImplemented
    return lw.emit(Term("Contiguous", (args[0],)))


def _view_like(lw, n, name, args, kwargs):
    x = args[0]
    if not isinstance(x, Ref) or any(isinstance(a, torch.dtype) for a in list(args[1:]) + list(kwargs.values())):
        return NotImplemented  # x.view(dtype) reinterprets bits
    shape, dtype = _out_meta(lw, n)
    if shape == lw.shape(x):
        return x
    return lw.emit(Term("View", (x, IVec(shape))))


def _expand(lw, n, name, args, kwargs):
    x = args[0]
    if not isinstance(x, Ref):
        return NotImplemented
    shape, _ = _out_meta(lw, n)
    if shape == lw.shape(x):
        return x
    return lw.emit(Term("Expand", (x, IVec(shape))))


def _permute_of(lw, x: Ref, perm: Sequence[int]) -> Ref:
    rank = len(lw.shape(x))
    perm = tuple(_norm_dim(int(p), rank) for p in perm)
    if sorted(perm) != list(range(rank)):
        raise Unsupported(f"bad permutation {perm}")
    if perm == tuple(range(rank)):
        return x
    return lw.emit(Term("Permute", (x, IVec(perm))))


def _permute(lw, n, name, args, kwargs):
    x = args[0]
    rank = len(lw.shape(x))
    if name == "permute":
        perm = _varargs(args, 1) or list(kwargs.get("dims", ()))
    elif name == "t":
        perm = [1, 0] if rank == 2 else list(range(rank))
    elif name == "transpose":
        a = _norm_dim(_arg(args, kwargs, 1, "dim0"), rank)
        b = _norm_dim(_arg(args, kwargs, 2, "dim1"), rank)
        perm = list(range(rank))
        perm[a], perm[b] = perm[b], perm[a]
    else:  # movedim(x, source, destination)
        src, dst = _arg(args, kwargs, 1, "source"), _arg(args, kwargs, 2, "destination")
        src = [src] if isinstance(src, int) else list(src)
        dst = [dst] if isinstance(dst, int) else list(dst)
        src = [_norm_dim(s, rank) for s in src]
        dst = [_norm_dim(d, rank) for d in dst]
        perm = [-1] * rank
        for s, d in zip(src, dst):
            perm[d] = s
        rest = iter(i for i in range(rank) if i not in src)
        perm = [p if p >= 0 else next(rest) for p in perm]
    return _permute_of(lw, x, perm)


def _unsqueeze(lw, n, name, args, kwargs):
    x = args[0]
    d = _norm_dim(_arg(args, kwargs, 1, "dim"), len(lw.shape(x)) + 1)
    return lw.emit(Term("Unsqueeze", (x, d)))


def _squeeze_dims(lw, x: Ref, dims: Sequence[int]) -> Ref:
    shape = list(lw.shape(x))
    dtype = lw.out.dtypes.get(x.let)
    for d in sorted({_norm_dim(d, len(shape)) for d in dims if shape}, reverse=True):
        if shape[d] == 1:
            shape.pop(d)
            x = lw.emit(Term("Squeeze", (x, d)), shape, dtype)
    return x


def _squeeze(lw, n, name, args, kwargs):
    x = args[0]
    dims = _arg(args, kwargs, 1, "dim")
    rank = len(lw.shape(x))
    if dims is None:
        dims = range(rank)
    elif isinstance(dims, int):
        dims = [dims]
    return _squeeze_dims(lw, x, list(dims))


def _pad(lw, n, name, args, kwargs):
    """Zero padding by static amounts; other modes, values and negative pads (crops) stay opaque."""
    x, pads = args[0], list(_arg(args, kwargs, 1, "pad", ()))
    mode = "constant" if name == "constant_pad_nd" else _arg(args, kwargs, 2, "mode", "constant")
    value = _arg(args, kwargs, 2 if name == "constant_pad_nd" else 3, "value")
    if (not isinstance(x, Ref) or mode != "constant" or value not in (None, 0) or len(pads) % 2
            or len(pads) > 2 * len(lw.shape(x)) or not all(type(p) is int and p >= 0 for p in pads)):
        return NotImplemented
    return lw.emit(Term("Pad", (x, IVec(tuple(lw.size(p) for p in pads)))))


def _narrow_ref(lw, x: Ref, d: int, start: int, length: int) -> Ref:
    shape = list(lw.shape(x))
    if start == 0 and length == shape[d]:
        return x
    shape[d] = length
    return lw.emit(Term("Narrow", (x, d, start, length)), shape, lw.out.dtypes.get(x.let))


def _narrow(lw, n, name, args, kwargs):
    x = args[0]
    shape = lw.shape(x)
    d = _norm_dim(_arg(args, kwargs, 1, "dim"), len(shape))
    start, length = _arg(args, kwargs, 2, "start"), _arg(args, kwargs, 3, "length")
    if isinstance(start, int) and start < 0:
        start = start + shape[d]
    if not all(isinstance(v, (int, SymScalar)) for v in (start, length)):
        return NotImplemented
    start, length = lw.size(start), lw.size(length)
    if lw.out.sizes and (lw.out.sizes.table.hint(start) or 0) < 0:
        return NotImplemented  # a symbolic start counted from the end: opaque
    return _narrow_ref(lw, x, d, start, length)


def _select_ref(lw, x: Ref, d: int, i: int) -> Ref:
    shape = lw.shape(x)
    i = i + shape[d] if i < 0 else i
    if not 0 <= i < shape[d]:
        raise Unsupported(f"index {i} out of range")
    return _squeeze_dims(lw, _narrow_ref(lw, x, d, i, 1), [d]) if shape[d] != 1 else _squeeze_dims(lw, x, [d])


def _select(lw, n, name, args, kwargs):
    x = args[0]
    d = _norm_dim(_arg(args, kwargs, 1, "dim"), len(lw.shape(x)))
    return _select_ref(lw, x, d, _arg(args, kwargs, 2, "index"))


def _index(lw, x: Ref, idx: Any) -> Any:
    """Basic tensor indexing (ints, unit-step slices, None, ...) as narrow/squeeze/unsqueeze."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    if any(not (isinstance(i, (int, slice)) or i is None or i is Ellipsis) or isinstance(i, bool) for i in idx):
        return NotImplemented
    if any(isinstance(i, slice) and not all(isinstance(b, int) or b is None for b in (i.start, i.stop, i.step))
           for i in idx):
        return NotImplemented  # symbolic slice bounds: opaque
    rank = len(lw.shape(x))
    used = sum(1 for i in idx if i is not None and i is not Ellipsis)
    if idx.count(Ellipsis) > 1 or used > rank:
        return NotImplemented
    if Ellipsis in idx:
        k = idx.index(Ellipsis)
        idx = idx[:k] + (slice(None),) * (rank - used) + idx[k + 1:]
    d = 0
    selects: list[int] = []
    dtype = lw.out.dtypes.get(x.let)
    for i in idx:
        if i is None:
            shape = list(lw.shape(x))
            shape.insert(d, 1)
            x = lw.emit(Term("Unsqueeze", (x, d)), shape, dtype)
        elif isinstance(i, int):
            selects.append(d)
            x = _narrow_int(lw, x, d, i)
        else:
            start, stop, step = i.indices(lw.shape(x)[d])
            if step != 1:
                return NotImplemented
            x = _narrow_ref(lw, x, d, start, max(stop - start, 0))
        d += 1
    return _squeeze_dims(lw, x, selects)


def _narrow_int(lw, x: Ref, d: int, i: int) -> Ref:
    size = lw.shape(x)[d]
    i = i + size if i < 0 else i
    if not 0 <= i < size:
        raise Unsupported(f"index {i} out of range")
    return _narrow_ref(lw, x, d, i, 1)


def _getitem(lw, n, name, args, kwargs):
    obj, idx = args
    if isinstance(obj, TupleVal):
        return obj.piece(idx)
    if isinstance(obj, Ref):
        if any(isinstance(i, (Ref, TupleVal)) for i in (idx if isinstance(idx, tuple) else (idx,))):
            return NotImplemented
        return _index(lw, obj, idx)
    if isinstance(obj, (list, tuple)):
        return obj[idx]
    return NotImplemented


def _split(lw, n, name, args, kwargs):
    x = args[0]
    if not isinstance(x, Ref):
        return NotImplemented
    val = compat.node_value(n)
    shape = lw.shape(x)
    default_dim = 0
    dim_pos = {"split": 2, "split_with_sizes": 2, "chunk": 2, "unbind": 1}[name]
    d = _norm_dim(_arg(args, kwargs, dim_pos, "dim", default_dim), len(shape))
    sizes = tuple(lw.size(t.shape[d]) if name != "unbind" else 1 for t in val)
    if sum(sizes) != shape[d]:
        return NotImplemented
    tup = lw.emit(Term("Split", (x, IVec(sizes), d)))
    if name != "unbind":  # unbind's own outputs are squeezed: not the Split tuple
        lw.out.node_of_let.setdefault(tup.let, n)
    dtype = lw.out.dtypes.get(x.let)

    def piece(i: int) -> Ref:
        s = list(shape)
        s[d] = sizes[i]
        ref = lw.emit(Term("Get", (tup, i)), s, dtype)
        return _squeeze_dims(lw, ref, [d]) if name == "unbind" else ref

    return TupleVal(lambda i: piece(_norm_dim(i, len(sizes))), len(sizes), tup)


def _tensor_list(lw, xs: Any) -> list[Ref] | None:
    if isinstance(xs, TupleVal):
        xs = [xs]
    if not isinstance(xs, (list, tuple)):
        return None
    out: list = []
    for x in xs:
        if isinstance(x, TupleVal):
            out.extend(x.piece(i) for i in range(x.n))
        else:
            out.append(x)
    return out if all(isinstance(x, Ref) for x in out) else None


def _cat(lw, n, name, args, kwargs):
    xs = _tensor_list(lw, _arg(args, kwargs, 0, "tensors"))
    if not xs:
        return NotImplemented
    shape, _ = _out_meta(lw, n)
    rank = len(shape)
    if any(len(lw.shape(x)) != (rank if name == "cat" else rank - 1) for x in xs):
        return NotImplemented  # legacy empty 1-D inputs to cat
    d = _norm_dim(_arg(args, kwargs, 1, "dim", 0), rank)
    ctor = "Cat" if name == "cat" else "Stack"
    return lw.emit(Term(ctor, (TList(tuple(xs)), d)))


def _reduce(lw, n, name, args, kwargs):
    x = args[0]
    if not isinstance(x, Ref):
        return NotImplemented
    rank = len(lw.shape(x))
    dims = _arg(args, kwargs, 1, "dim", None)
    keepdim = _arg(args, kwargs, 2, "keepdim", False)
    extra = {k: v for k, v in kwargs.items() if k not in ("dim", "keepdim", "input")}
    if len(args) > 3 or isinstance(dims, (torch.dtype,)) or any(isinstance(v, Ref) for v in extra.values()):
        return NotImplemented
    one_dim = ops.BY_NAME[name].one_dim  # prod: one int dim, or all of them (kept opaque)
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        if one_dim and dims is not None:
            return NotImplemented
        dims = list(range(rank))
    dims = [dims] if isinstance(dims, int) else list(dims)
    if one_dim and (len(dims) != 1 or _arg(args, kwargs, 1, "dim", None) is None):
        return NotImplemented
    dims = sorted({_norm_dim(d, rank) for d in dims}) if rank else []
    return lw.emit(Term("Reduce", (lw.out.keys.key(name, extra), x, IVec(tuple(dims)), int(bool(keepdim)))))


def _aten_softmax(lw, n, name, args, kwargs):
    """``aten._softmax(x, dim, half_to_float)``: the upcasting variant keeps its own spelling."""
    if len(args) != 3 or kwargs or not isinstance(args[0], Ref) or args[2]:
        return NotImplemented
    x, d, _ = args
    if not isinstance(d, int):
        return NotImplemented
    return lw.emit(Term("Softmax", (name.lstrip("_"), x, _norm_dim(d, len(lw.shape(x))))))


def _slice(lw, n, name, args, kwargs):
    """``aten.slice(x, dim=0, start=None, end=None, step=1)``, Python slice bounds, unit step only."""
    x = args[0]
    if not isinstance(x, Ref):
        return NotImplemented
    shape = lw.shape(x)
    d = _norm_dim(_arg(args, kwargs, 1, "dim", 0), len(shape))
    bounds = slice(_arg(args, kwargs, 2, "start"), _arg(args, kwargs, 3, "end"), _arg(args, kwargs, 4, "step", 1))
    if not all(isinstance(b, int) or b is None for b in (bounds.start, bounds.stop, bounds.step)):
        return NotImplemented
    start, stop, step = bounds.indices(shape[d])
    if step != 1:
        return NotImplemented
    return _narrow_ref(lw, x, d, start, max(stop - start, 0))


def _aten_to_copy(lw, n, name, args, kwargs):
    """``aten._to_copy`` is a dtype cast when it changes nothing but the dtype."""
    if set(kwargs) - {"dtype", "layout", "device", "memory_format"} or kwargs.get("layout") not in (None, torch.strided):
        return NotImplemented
    return _to_dtype(lw, n, name, args, {"memory_format": kwargs.get("memory_format")})


def _softmax(lw, n, name, args, kwargs):
    x = args[0]
    d = _arg(args, kwargs, 1, "dim")
    dtype = kwargs.get("dtype", args[3] if len(args) > 3 else None)
    if not isinstance(x, Ref) or d is None or dtype is not None:
        return NotImplemented
    return lw.emit(Term("Softmax", (name, x, _norm_dim(d, len(lw.shape(x))))))


def _layer_norm(lw, n, name, args, kwargs):
    x = args[0]
    shape = _arg(args, kwargs, 1, "normalized_shape")
    w, b = _arg(args, kwargs, 2, "weight"), _arg(args, kwargs, 3, "bias")
    eps = _arg(args, kwargs, 4, "eps", 1e-5)
    if not isinstance(x, Ref) or not all(isinstance(t, Ref) or t is None for t in (w, b)):
        return NotImplemented
    w, b = (t if t is not None else lw.none() for t in (w, b))
    return lw.emit(Term("LayerNorm", (x, IVec(lw.sizes_of(shape)), w, b, repr(float(eps)))))


def _matmul_like(lw, n, name, args, kwargs):
    """A matmul-like row's tensor operands in order (linear's bias may be None); scaled forms stay opaque."""
    row = ops.BY_NAME[name]
    arity = row.args.count(ops.TENSOR)
    xs = list(args[:arity])
    if row.ctor == "Linear":
        xs = [args[0], _arg(args, kwargs, 1, "weight"), _arg(args, kwargs, 2, "bias")]
        xs[2] = xs[2] if xs[2] is not None else lw.none()
    elif kwargs.get("beta", 1) != 1 or kwargs.get("alpha", 1) != 1 or len(args) > arity:
        return NotImplemented
    if len(xs) != arity or not all(isinstance(x, Ref) for x in xs):
        return NotImplemented
    return lw.emit(Term(row.ctor, tuple(xs)))


def _from_call(row: ops.Op, lw, n, name, args, kwargs):
    """A row's declarative call (``Op.call``): each term argument read by position or name, as its kind
    says; anything else (unknown keywords, extra or symbolic arguments) leaves the node opaque."""
    if set(kwargs) - {a.name for a in row.call} or (len(args) > len(row.call) and row.call[-1].kind != "sizes"):
        return NotImplemented
    out: list = []
    for pos, spec in enumerate(row.call):
        varargs = spec.kind == "sizes" and pos == len(row.call) - 1 and len(args) > pos
        v = _varargs(args, pos) if varargs else _arg(args, kwargs, pos, spec.name)
        if spec.kind == "tensor" and not isinstance(v, Ref):
            return NotImplemented
        if spec.kind == "sizes":
            if not isinstance(v, (list, tuple)) or len(v) != len(lw.shape(out[0])) or not all(
                    type(c) is int and c >= 1 for c in v):
                return NotImplemented
            v = IVec(tuple(v))
        out.append(v)
    return lw.emit(Term(row.ctor, tuple(out)))


def _fold_size(lw, n, name, args, kwargs):
    return compat.node_value(n)


def _narrow_like(lw, n, name, args, kwargs):
    """``narrow``, ``select`` and Aten's ``slice`` are all narrows."""
    return {"select": _select, "slice": _slice}.get(name, _narrow)(lw, n, name, args, kwargs)


def _softmax_like(lw, n, name, args, kwargs):
    return (_aten_softmax if name.startswith("_") else _softmax)(lw, n, name, args, kwargs)


def _cast(lw, n, name, args, kwargs):
    return (_aten_to_copy if name == "_to_copy" else _to_dtype)(lw, n, name, args, kwargs)


# The converters a registry row names (``Op.lower``); a row with a declarative ``call`` is read by
# ``_from_call``, a pointwise row by ``_lower_pointwise``.
CONVERTERS: dict[str, Callable] = {
    "to_dtype": _cast, "copy": _copy, "view": _view_like, "expand": _expand, "permute": _permute,
    "unsqueeze": _unsqueeze, "squeeze": _squeeze, "narrow": _narrow_like, "getitem": _getitem, "split": _split,
    "cat": _cat, "pad": _pad, "reduce": _reduce, "softmax": _softmax_like, "layer_norm": _layer_norm,
    "matmul": _matmul_like,
}
# ``torch.min(a, b)`` / ``a.max(b)`` of two tensors are ``minimum`` / ``maximum`` (pointwise); with a
# dim or alone they are reductions and stay opaque. T5's relative position buckets take a ``torch.min``
# of two tensors: opaque, the GPU model planned it as an extern call, and Inductor fuses it into the
# attention's softmax (zoo T5, H200: two launches a stack the model counted and Inductor did not make).
ELEMENTWISE_EXTREMA = {"min": "minimum", "max": "maximum"}
# Torch-IR names that are no op of their own (``eqsat.ops.NON_OP_SPELLINGS``).
NON_OPS: dict[str, Callable] = {
    "dropout": _identity_unless_random, "positive": _identity_unless_random, "detach": _detach,
    "size": _fold_size, "dim": _fold_size, "numel": _fold_size,
}


@functools.lru_cache(maxsize=4)
def _handlers(version: int) -> dict[str, Callable]:
    table = dict(NON_OPS)
    for op in ops.ALL_OPS:
        converter = CONVERTERS[op.lower] if op.lower else functools.partial(_from_call, op) if op.call else None
        if converter is not None:
            for name in (op.name, *op.spellings, *(a.split(".")[0] for a in op.aten_spellings)):
                table.setdefault(name, converter)
    return table


def handlers() -> dict[str, Callable]:
    """Canonical name (a row's name, Torch-IR spelling or Aten packet) → its converter, from the rows."""
    return _handlers(ops.version())


def layout_pinned(nodes: Sequence[torch.fx.Node]) -> set[torch.fx.Node]:
    """Every node whose value shares storage with the input of a layout reader (``as_strided``, …),
    walking back through views, multi-output views (split) and their bases up to the node that
    allocated the storage (or a graph input, whose layout the caller fixes)."""
    pinned: set[torch.fx.Node] = set()
    for reader in nodes:
        if reader.op not in ("call_function", "call_method") or compat.op_basename(reader.target) not in LAYOUT_READERS:
            continue
        for src in reader.all_input_nodes:
            key = compat.storage_key(compat.node_value(src))
            stack = [src] if key is not None else []
            while stack:
                m = stack.pop()
                if m in pinned or m.op not in ("call_function", "call_method"):
                    continue
                pinned.add(m)
                stack.extend(a for a in m.all_input_nodes if _shares(a, key))
    return pinned


def _shares(n: torch.fx.Node, key: Any) -> bool:
    leaves: list = []
    map_aggregate(compat.node_value(n), leaves.append)
    return any(compat.storage_key(v) == key for v in leaves if isinstance(v, torch.Tensor))


def random_nodes(gm: torch.fx.GraphModule) -> set[torch.fx.Node]:
    """Nodes that draw from the random stream (dropout in training, rand*, bernoulli, ...)."""
    return {n for n in gm.graph.nodes if n.op in ("call_function", "call_method") and (
        compat.aten_is_random(n.target) or _Lowerer.is_random(n, canonical_name(n) or "")
        or target_label(n).split(".")[-1] in RANDOM_NAMES)}


def lower(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], deadline: Deadline | None = None) -> Lowered:
    """Lower a Torch-IR (or Aten-IR) graph to a term program; raises :class:`Unsupported` for unsafe graphs
    and ``OutOfTime`` when ``deadline`` runs out (a half-lowered graph is unusable)."""
    return _Lowerer(gm, example_inputs, deadline).run()
