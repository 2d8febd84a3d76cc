"""FX graph → egglog terms: one ``let`` per node, shape/dtype facts, unknown ops as ``Opaque``.

Every spelling of an op lowers to one canonical term (negative dims normalised, split sizes and view
shapes resolved from the recorded fake values), so rules match syntactically. What we do not know
becomes ``Opaque`` and round-trips exactly. Graphs we cannot prove safe to rewrite (mutation,
non-tensor values we cannot fold, sizes the symbolic encoding cannot hold) raise :class:`Unsupported`,
and the caller keeps the original graph. Symbolic sizes are encoded by ``eqsat_torch.lowering.symbolic`` (every size below is an
engine integer: a literal, or an encoded linear form over the graph's symbols); a node whose size
depends on data (an unbacked symbol) is lowered as opaque, and so is every op that would need it.
The per-op converters live in ``converters``, the analyses that pick nodes to keep opaque in
``layout_pins``, ``random_nodes`` and ``grad_dead``.
"""
from __future__ import annotations

from typing import Any, Sequence

import torch
from torch.fx.node import map_aggregate

from eqsat import ops
from eqsat.deadline import Deadline
from eqsat.sizes import SizeOverflow
from eqsat.terms import Ref, Term, TList, render

from eqsat_torch.lowering import attention
from eqsat_torch.inductor import compat
from eqsat_torch.lowering.converters import ELEMENTWISE_EXTREMA, _lower_pointwise, handlers
from eqsat_torch.lowering.grad_dead import grad_live
from eqsat_torch.lowering.layout_pins import layout_pinned, view_outputs_pinned
from eqsat_torch.lowering.lowered import Lowered, OpaqueSpec, Slot, TupleVal, Unsupported, _norm_dim, dtype_name
from eqsat_torch.lowering.node_values import _arg, _backed_int, _leaves, _requires_grad, _static_scalar, _unbacked
from eqsat_torch.lowering.random_nodes import RANDOM_NAMES, is_random
from eqsat_torch.lowering.symbolic import SymbolicSizes, SymScalar, UnbackedSize, fake_inputs
from eqsat_torch.lowering.targets import INPLACE_OPERATORS, canonical_name, target_label
from eqsat.ops import Ctor

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


# Nodes lowered between two looks at the clock (~0.1 ms a node: a 16k-node graph took 1.2-3.8 s).
CLOCK_NODES = 256


class _Lowerer:
    def __init__(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any], deadline: Deadline | None = None,
                 user_outputs: int | None = None):
        self.gm = gm
        self.user_outputs = user_outputs
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
            return self.emit(Term(Ctor.SCALAR, (f"sym:{v.size}",)), (), "scalar")
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            if not isinstance(v, bool):
                raise Unsupported(f"operand {v!r} is neither a tensor nor a number")
        # A float operand can promote an integer tensor; an int/bool one never changes a non-bool dtype.
        return self.emit(Term(Ctor.SCALAR, (repr(v),)), (), "scalar_float" if isinstance(v, float) else "scalar")

    def none(self) -> Ref:
        return self.emit(Term(Ctor.NONE, ()), (), "scalar")

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
        if any(n.op == "call_function" and compat.is_aten(n.target) for n in nodes):
            self.out.dialect = "aten"
        self.pinned = layout_pinned(nodes) | view_outputs_pinned(self.gm.graph, self.user_outputs)
        placeholder_i = 0
        for i, n in enumerate(nodes):
            if self.deadline is not None and i % CLOCK_NODES == 0:
                self.deadline.check("lower")
            if n.op == "placeholder":
                self.out.placeholders.append(n)
                example = self.example_inputs[placeholder_i] if placeholder_i < len(self.example_inputs) else None
                placeholder_i += 1
                self.values[n] = self.source(n, Ctor.INPUT, isinstance(example, torch.nn.Parameter))
            elif n.op == "get_attr":
                self.values[n] = self.source(n, Ctor.PARAM, True)
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
        ref = self.emit(Term(ctor, (n.target if ctor == Ctor.PARAM else n.name,)), shape, dtype_name(val.dtype))
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
            return self.emit(Term(Ctor.UNARY, ("detach", v)), self.out.shapes.get(v.let), self.out.dtypes.get(v.let))
        if isinstance(v, TupleVal):
            return TupleVal(lambda i: self.detached(v.piece(i)), v.n, v.tup)
        if isinstance(v, (tuple, list)):
            return type(v)(self.detached(p) for p in v)
        return v
    is_random = staticmethod(is_random)

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
        tup = self.emit(Term(Ctor.OPAQUE, (key, TList(tuple(tensors)))))
        if not no_grad:  # n's own copy reads what n read in its region
            self.out.node_of_let.setdefault(tup.let, n)
        if effectful:
            self.out.roots.append(tup.let)
        if out in ("tensor", "scalar"):
            return self.emit(Term(Ctor.GET, (tup, 0)))
        if out == "tuple":
            k = len(val)

            def piece(i: int) -> Any:
                i = _norm_dim(i, k)
                return self.emit(Term(Ctor.GET, (tup, i))) if isinstance(val[i], torch.Tensor) else val[i]

            return TupleVal(piece, k, tup)
        return None



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


def lower(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], deadline: Deadline | None = None,
          user_outputs: int | None = None) -> Lowered:
    """Lower a Torch-IR (or Aten-IR) graph to a term program; raises :class:`Unsupported` for unsafe graphs
    and ``OutOfTime`` when ``deadline`` runs out (a half-lowered graph is unusable). ``user_outputs``:
    how many of the output leaves the user sees (None: all; the rest are saved for a backward; 0 for
    a region's, which feed later regions)."""
    return _Lowerer(gm, example_inputs, deadline, user_outputs).run()
