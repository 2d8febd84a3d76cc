"""Every private torch API the bridge touches, in one place, so torch 2.11–2.14 differences stay here."""
from __future__ import annotations

import contextlib
import functools
import sys
from typing import Any, Callable, Sequence

import torch
from torch._inductor.custom_graph_pass import CustomGraphPass  # noqa: F401  (base of our post-grad pass)
from torch.fx.passes.fake_tensor_prop import FakeTensorProp


def node_value(node: torch.fx.Node) -> Any:
    """The fake value Dynamo (``example_value``) or AOTAutograd (``val``) recorded for a node."""
    if "example_value" in node.meta:
        return node.meta["example_value"]
    return node.meta.get("val")


def propagate_fake(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
                   mend: Callable[[torch.fx.Node], bool] | None = None) -> None:
    """Fill ``meta['val']`` for every node by running the graph on fake copies of the inputs. A node
    that raises is given to ``mend``, and run again when it says it changed the node."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    own = next((x.fake_mode for x in example_inputs if is_fake(x)), None)  # a symbolic graph's own fakes
    fake_mode = own or _detect_fake_mode(example_inputs) or FakeTensorMode(allow_non_fake_inputs=True)
    with fake_mode:
        fakes = [fake_mode.from_tensor(x) if isinstance(x, torch.Tensor) and not is_fake(x) else x
                 for x in example_inputs]
    # Symbolic sizes need the Python dispatcher, as in Dynamo's own trace (meta kernels of
    # composite ops such as baddbmm's expand only take SymInts through it).
    symbolic = own is not None and own.shape_env is not None
    with _python_dispatcher() if symbolic else contextlib.nullcontext():
        _FakeAttrsProp(gm, mode=fake_mode, mend=mend).propagate_dont_convert_inputs(*fakes)


def _python_dispatcher():
    from torch._dispatch.python import enable_python_dispatcher

    return enable_python_dispatcher()


class _FakeAttrsProp(FakeTensorProp):
    """FakeTensorProp that reads a graph attribute as a fake copy of it: under Inductor's
    ``freezing`` Dynamo makes parameters ``get_attr`` nodes holding the real tensors, which
    Dynamo's fake mode (no non-fake inputs allowed) refuses to compute with. Recorded values keep
    ``requires_grad`` (FakeTensorProp records detached copies): lowering reads it to know which
    values a ``no_grad`` region must read cut from autograd."""

    def __init__(self, gm, mode=None, mend: Callable[[torch.fx.Node], bool] | None = None):
        super().__init__(gm, mode=mode)
        self.mend = mend

    def run_node(self, n):
        try:
            result = super().run_node(n)
        except Exception:
            if self.mend is None or not self.mend(n):
                raise
            result = super().run_node(n)
        computed: list = []
        recorded: list = []
        torch.fx.node.map_aggregate(result, computed.append)
        torch.fx.node.map_aggregate(n.meta.get("val"), recorded.append)
        if len(computed) == len(recorded):
            for c, r in zip(computed, recorded):
                if isinstance(c, torch.Tensor) and c.requires_grad and isinstance(r, torch.Tensor) and r.is_leaf:
                    r.requires_grad_(True)
        return result

    def get_attr(self, target, args, kwargs):
        value = super().get_attr(target, args, kwargs)
        if isinstance(value, torch.Tensor) and not is_fake(value):
            return self._mode.from_tensor(value, static_shapes=True)
        return value


def is_fake(x: Any) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(x, FakeTensor)


def _detect_fake_mode(example_inputs: Sequence[Any]):
    from torch._guards import detect_fake_mode

    return detect_fake_mode(example_inputs)


def is_symbolic(x: Any) -> bool:
    """True for SymInt/SymFloat/SymBool values (dynamic shapes)."""
    return isinstance(x, (torch.SymInt, torch.SymFloat, torch.SymBool))


def function_namespaces() -> tuple:
    """Where Torch-IR call targets live: the public namespaces and the C++ builtins Dynamo records
    (``torch._C._nn.gelu``, ``torch._C._VariableFunctions.relu``)."""
    import torch.nn.functional as F

    return (torch, F, torch._C._nn, torch.special, torch.Tensor, torch._C._VariableFunctions)


def autocast_region_targets() -> tuple[Any, Any]:
    """The functions Dynamo records a ``with torch.autocast(...)`` block as: (enter, exit)."""
    from torch.amp import autocast_mode

    return autocast_mode._enter_autocast, autocast_mode._exit_autocast


def keep_dynamo_identity(src: torch.fx.GraphModule, dst: torch.fx.GraphModule) -> None:
    """Carry what marks ``src`` as Dynamo's graph over to its rewrite ``dst``: the module's ``meta``
    (``dynamo_compile_id``), ``_param_name_to_source`` and each placeholder's ``_dynamo_source``.
    AOTAutograd marks parameters static inputs only on a graph it knows as Dynamo's; without them
    CUDA graphs copy every parameter into the recorded graph at each replay (H200, BART: 93 inputs
    copied where Inductor alone copies 2)."""
    for key, value in src.meta.items():
        dst.meta.setdefault(key, value)
    if hasattr(src, "_param_name_to_source"):
        dst._param_name_to_source = src._param_name_to_source
    sources = {n.name: n._dynamo_source for n in src.graph.find_nodes(op="placeholder") if hasattr(n, "_dynamo_source")}
    for n in dst.graph.find_nodes(op="placeholder"):
        if n.name in sources:
            n._dynamo_source = sources[n.name]


def grad_mode_switch() -> Any:
    """What Dynamo records ``with torch.no_grad()`` / ``enable_grad()`` / ``set_grad_enabled(b)``
    as: a call of this function with the new mode, at the block's entry and exit."""
    return torch._C._set_grad_enabled


def inference_mode_targets() -> tuple[Any, ...]:
    """What Dynamo records ``with torch.inference_mode()`` as: (enter, exit), where they exist."""
    from torch.autograd import grad_mode

    return tuple(f for f in (getattr(grad_mode, "_enter_inference_mode", None),
                             getattr(grad_mode, "_exit_inference_mode", None)) if f is not None)


def inductor_freezes_params(config: dict | None = None) -> bool:
    """Inductor will fold parameters into constants (``freezing``, inference only): a cat of
    weights computed in the Dynamo graph then costs nothing at run time. ``config``: the patches
    the compile runs under (``torch.compile(options={"freezing": True})``)."""
    import torch._inductor.config as inductor_config

    return bool((config or {}).get("freezing", inductor_config.freezing)) and not torch.is_grad_enabled()


def reset_dynamo() -> None:
    """Forget every compiled frame and cached graph (between benchmark cases and tests)."""
    torch._dynamo.reset()


def compile_fx() -> Callable:
    """Inductor's entry point (``compile_fx``); imported lazily because it is heavy."""
    from torch._inductor.compile_fx import compile_fx as _compile_fx

    return _compile_fx


def is_aten(target: Any) -> bool:
    """True for an Aten-IR target (an ``OpOverload`` such as ``torch.ops.aten.add.Tensor``)."""
    return isinstance(target, torch._ops.OpOverload)


def aten_schema(op: Any) -> Any:
    """The ``FunctionSchema`` of an aten overload (arguments with names, types, mutability)."""
    return op._schema


def compile_fx_with_post_grad_pass(make_pass: Callable[[tuple], Any] | None, config: dict | None = None) -> Callable:
    """``compile_fx`` with ``make_pass(passes the user installed)`` as Inductor's post-grad pre-pass
    (None: no pass) and the Inductor ``config`` the user asked for (``mode=``, ``options=``).
    ``config_patches`` also wraps the lazily compiled backward, so both graphs of a step see it."""
    import torch._inductor.config as inductor_config

    patches = dict(config or {})
    if make_pass is not None:
        user = inductor_config.post_grad_custom_pre_pass
        user = tuple(user) if isinstance(user, (list, tuple)) else (user,) if user is not None else ()
        patches["post_grad_custom_pre_pass"] = make_pass(user)
    return functools.partial(compile_fx(), config_patches=patches) if patches else compile_fx()


def aot_backend(compiler: Callable[[torch.fx.GraphModule, Sequence[Any]], Callable],
                decompositions: dict | None = None) -> Callable:
    """A ``torch.compile`` backend running ``compiler`` on AOTAutograd's forward and backward Aten
    graphs without Inductor's decompositions (tests exercise post-grad passes cheaply this way), or
    with just ``decompositions`` (op → function). Input mutations stay in the graph as trailing
    ``copy_`` nodes, as Inductor asks for."""
    from torch._dynamo.backends.common import aot_autograd

    return aot_autograd(fw_compiler=compiler, bw_compiler=compiler, keep_inference_input_mutations=True,
                        **({"decompositions": decompositions} if decompositions else {}))


def skip_guard_latency_profile() -> None:
    """Dynamo times each new set of guards once, after flushing the CPU caches, for a debug log line
    and a metric (``CheckFunctionManager``: ~26 ms a compile on a 2-core CPU, 7 % of a soak case);
    a process compiling thousands of small graphs skips that timing. The guards are built and
    checked as before: only the timing reads 0."""
    import torch._dynamo.guards as guards

    if hasattr(guards, "profile_guard_manager"):
        guards.profile_guard_manager = lambda *args: 0.0


def inductor_decompositions(ops: Sequence[Any]) -> dict:
    """Inductor's own decompositions of ``ops`` (those it has), for a compile that imitates its graphs."""
    from torch._inductor.decomposition import select_decomp_table

    table = select_decomp_table()
    return {op: table[op] for op in ops if op in table}


def inductor_remove_noop_ops(graph: torch.fx.Graph) -> None:
    """Inductor's post-grad ``remove_noop_ops``: a clone, slice, cat of one input, … whose fake value
    is its input's (sizes, strides, dtype) becomes that input. It means not to make an output alias an
    input or another output anew, but reads the outputs' storages once, before it drops anything
    (``fx_bridge/safety/noop_outputs.py``). It runs after the custom pre-pass (ours)."""
    from torch._inductor.fx_passes.post_grad import remove_noop_ops

    remove_noop_ops(graph)


def inductor_reinplaceable_ops() -> dict[Any, tuple[int, ...]]:
    """The functional ops Inductor's post-grad ``reinplace_inplaceable_ops`` may run in place, with
    the positions of the arguments they would overwrite (the ``*_scatter`` ops before it rewrites
    them to its generalized scatter: their base)."""
    from torch._inductor.fx_passes import reinplace

    table = {target: (op.mutated_arg,) if isinstance(op.mutated_arg, int) else tuple(op.mutated_arg)
             for target, op in reinplace.inplaceable_ops.items()}
    table.update({target: (0,) for target in getattr(reinplace, "_SCATTER_OP_TO_VIEW", {})})
    return table


def aten_schema_is_mutable(target: Any) -> bool:
    schema = getattr(target, "_schema", None)
    return bool(schema is not None and schema.is_mutable)


def aten_name_writes_inputs(name: str) -> bool | None:
    """Whether the aten op called ``name`` (``add_``, ``__iand__``, ``copy_``) writes one of its
    positional arguments, asked of its schemas' alias annotations; ``out=`` overloads do not count
    (an ``out`` argument is keyword-only). None when aten has no op of that name."""
    packet = getattr(torch.ops.aten, name, None) if name.isidentifier() else None
    if not isinstance(packet, torch._ops.OpOverloadPacket):
        return None
    schemas = [getattr(packet, ov)._schema for ov in packet.overloads()]
    # ``aten.sort.int``/``.Tensor`` sort a Python list in place: a tensor op is judged by the
    # overloads taking a tensor first (all of them for list ops such as ``_foreach_add_``).
    on_tensors = [sc for sc in schemas if sc.arguments and isinstance(sc.arguments[0].type, torch.TensorType)]
    return any(a.alias_info is not None and a.alias_info.is_write and not a.kwarg_only
               for sc in on_tensors or schemas for a in sc.arguments)


def op_basename(target: Any) -> str:
    """The bare op name of a call target: ``as_strided`` for ``aten.as_strided.default``,
    ``torch.as_strided`` and the method name ``"as_strided"`` alike."""
    if isinstance(target, str):
        return target
    if is_aten(target):
        return target._schema.name.split("::")[-1]
    return getattr(target, "__name__", "")


def storage_key(t: Any) -> Any:
    """An identity for ``t``'s storage (real or fake), equal for every tensor that aliases it; None
    for values without one (non-tensors, sparse or nested tensors)."""
    from torch.multiprocessing.reductions import StorageWeakRef

    if not isinstance(t, torch.Tensor):
        return None
    try:
        return StorageWeakRef(t.untyped_storage()).cdata  # an int: the storage's identity
    except (RuntimeError, NotImplementedError):
        return None


def is_layout_fresh(t: Any) -> bool:
    """``t`` owns a storage of exactly its own size, contiguous from offset 0 (a fresh allocation)."""
    try:
        return (t.is_contiguous() and t.storage_offset() == 0
                and t.untyped_storage().nbytes() == t.numel() * t.element_size())
    except (RuntimeError, NotImplementedError):
        return False


def aten_functional_view(target: Any) -> Any:
    """The functional overload of an in-place view op (``aten.squeeze_.dim`` → ``aten.squeeze.dim``),
    or None for any other target or when no overload of that name exists."""
    if torch.Tag.inplace_view not in getattr(target, "tags", ()):
        return None
    packet = getattr(torch.ops.aten, target._schema.name.split("::")[-1].rstrip("_"), None)
    return getattr(packet, target._overloadname, None) if packet is not None else None


def inductor_lowers(op: Any) -> bool:
    """Inductor can compile ``op`` in a post-grad graph: it has a lowering, or no decomposition
    claims it (a decomposed op without a lowering fails there: ``aten.rsub``)."""
    from torch._inductor.decomposition import decompositions
    from torch._inductor.lowering import lowerings

    return op in lowerings or op not in decompositions


def mark_eager_rounding(graph: torch.fx.Graph) -> None:
    """Under ``emulate_precision_casts`` Inductor rounds a float16/bfloat16 op's output as eager does
    only where AOTAutograd's tracer marked the node as an eager op (``low_precision_pointwise_barrier``).
    Nodes a post-grad pass made (no ``original_aten``) were never traced: they get the mark by the
    tracer's rule (an Aten op with a low-precision output or input), so a value our pass computes anew
    is rounded as the one it replaced (``fx_bridge/inductor/workarounds.py``)."""
    import torch._inductor.config as inductor_config

    if not getattr(inductor_config, "emulate_precision_casts", False):
        return
    low = (torch.float16, torch.bfloat16)
    for n in graph.nodes:
        if (n.op != "call_function" or not isinstance(n.target, torch._ops.OpOverload)
                or "original_aten" in n.meta or "low_precision_pointwise_barrier" in n.meta):
            continue
        values = [n.meta.get("val"), *(a.meta.get("val") for a in n.all_input_nodes)]
        if any(isinstance(v, torch.Tensor) and v.dtype in low for v in values):
            n.meta["low_precision_pointwise_barrier"] = True


def aten_is_random(target: Any) -> bool:
    tags = getattr(target, "tags", ())
    return torch.Tag.nondeterministic_seeded in tags


@contextlib.contextmanager
def no_dispatch_fake():
    """Run real computations even if a fake mode is active on this thread."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily():
        yield


def realize_to_strides(node: torch.fx.Node) -> None:
    """Have Inductor write ``node``'s buffer in the strides of its fake value (in their order, which
    for a dense value fixes them), not a layout of its choosing (``GraphLowering.run_node``)."""
    node.meta["inductor_realize_to_strides"] = True


def aot_user_outputs(graph: torch.fx.Graph) -> int | None:
    """How many leading outputs of an AOTAutograd graph the user sees (mutated inputs, outputs,
    their intermediate bases); the rest of a forward graph's outputs are activations saved for the
    backward. 0 for a backward graph (its outputs are gradients); None outside an AOT compile."""
    from torch._guards import TracingContext

    if any(n.op == "placeholder" and n.name.startswith("tangents") for n in graph.nodes):
        return 0
    ctx = TracingContext.try_get()
    meta = getattr(ctx, "fw_metadata", None) if ctx is not None else None
    if meta is None:
        return None
    return meta.num_mutated_inp_runtime_indices + meta.num_outputs + meta.num_intermediate_bases


# -- symbolic sizes (SymInt internals: its sympy expression, hint and ShapeEnv) ---------------------
def sym_expr(s: Any) -> Any:
    """The sympy expression of a SymInt (an int stays an int)."""
    return s.node.expr if isinstance(s, torch.SymInt) else s


def shape_env_of(s: Any) -> Any:
    return s.node.shape_env if isinstance(s, torch.SymInt) else None


def sym_hint(expr: Any, shape_env: Any) -> int | None:
    """Dynamo's example value of a size expression; None for unbacked symbols (``.item()``, ``nonzero``)."""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    if free_unbacked_symbols(expr):
        return None
    exact = getattr(shape_env, "guarding_hint_or_throw", None)  # torch >= 2.13; size_hint before
    return int(exact(expr) if exact is not None else shape_env.size_hint(expr))


def symint_hint(s: Any) -> int | None:
    """A SymInt's example value, read from its own ShapeEnv (``int(s)`` would add a guard); None
    when it is unbacked."""
    return sym_hint(sym_expr(s), shape_env_of(s))


def is_floor_div(expr: Any) -> bool:
    from torch.utils._sympy.functions import FloorDiv

    return isinstance(expr, FloorDiv)


def guard_state(shape_env: Any, known: set | None = None) -> tuple:
    """What a trace can add to a ShapeEnv that narrows the sizes a graph is valid for: guards,
    replacements (a symbol found equal to an expression) and deferred runtime asserts, on the
    symbols in ``known`` (a re-trace may mint fresh unbacked symbols and tie them to the old ones)."""
    if shape_env is None:
        return ()
    known = set(shape_env.var_to_range) if known is None else known
    replacements = frozenset((k, v) for k, v in shape_env.replacements.items() if k in known)
    asserts = sum(len(v) for k, v in getattr(shape_env, "deferred_runtime_asserts", {}).items()
                  if k is None or k in known)
    return len(shape_env.guards), replacements, asserts


class NewGuard(Exception):
    """Tracing a graph needed a guard its ShapeEnv did not hold: the graph is not valid for every
    size the existing guards admit."""


@contextlib.contextmanager
def no_new_guards(shape_env: Any):
    """Raise :class:`NewGuard` if the body adds a guard, replacement or runtime assert to ``shape_env``
    (torch >= 2.13 refuses the guard as it is attempted; older versions are compared after)."""
    if shape_env is None:
        yield
        return
    known = set(shape_env.var_to_range)
    before = guard_state(shape_env, known)
    refuse = getattr(shape_env, "error_on_new_guards", None)
    try:
        with refuse() if refuse is not None else contextlib.nullcontext():
            yield
    except Exception as e:
        if type(e).__name__ == "_ShapeEnvGuardError":
            raise NewGuard(str(e)) from None
        raise
    if guard_state(shape_env, known) != before:
        raise NewGuard("tracing the graph added a guard")


def maybe_mark_dynamic(t: torch.Tensor, dim: int) -> None:
    """Ask Dynamo to compile dim ``dim`` of ``t`` symbolic from the first compile; unlike
    ``mark_dynamic`` it is no error when the program fixes that size (the graph is then static)."""
    torch._dynamo.maybe_mark_dynamic(t, dim)


# -- caches, structured trace, Inductor's modes (the backend's warm start and the tools users know) -----
def inductor_cache_dir() -> str:
    """Where Inductor keeps its caches (``TORCHINDUCTOR_CACHE_DIR``, else a per-user temp folder)."""
    try:
        from torch._inductor.runtime.cache_dir_utils import cache_dir
    except ImportError:  # older layouts
        from torch._inductor.runtime.runtime_utils import cache_dir
    return cache_dir()


def inductor_caches_disabled() -> bool:
    """``torch._inductor.config.force_disable_caches`` (or ``TORCHINDUCTOR_FORCE_DISABLE_CACHES=1``):
    the user asked for no cache read or written, ours included."""
    import torch._inductor.config as inductor_config

    return bool(getattr(inductor_config, "force_disable_caches", False))


def trace_artifact(name: str, encoding: str, payload: Callable[[], str]) -> None:
    """One artifact in torch's structured trace (``TORCH_TRACE``), shown by ``tlparse`` next to
    Dynamo's and Inductor's; ``payload`` only runs when tracing is on."""
    from torch._logging import trace_structured
    from torch._logging._internal import LazyTraceHandler, trace_log

    # torch installs a trace handler with nowhere to write when TORCH_TRACE is unset, and still calls
    # ``payload``: a graph's Python code, ~0.2 s per 1,000 nodes of the optimizer's time for nothing
    if all(isinstance(h, LazyTraceHandler) and h.root_dir is None and h.stream is None for h in trace_log.handlers):
        return
    trace_structured("artifact", metadata_fn=lambda: {"name": name, "encoding": encoding}, payload_fn=payload)


def inductor_mode_options(mode: str | None) -> dict[str, Any]:
    """The Inductor config ``torch.compile(mode=...)`` stands for (``reduce-overhead``: CUDA graphs)."""
    if not mode or mode == "default":
        return {}
    from torch._inductor import list_mode_options

    return dict(list_mode_options(mode))


def inductor_config_names() -> frozenset[str]:
    """Every Inductor config name (``max_autotune``, ``triton.cudagraphs``), as ``options=`` takes them."""
    import torch._inductor.config as inductor_config

    return frozenset(inductor_config.get_config_copy())


def inductor_config_value(name: str) -> Any:
    """Inductor's config value ``name`` as it is now (the user's patches included)."""
    import torch._inductor.config as inductor_config

    return getattr(inductor_config, name)


def inductor_start_up(device: str) -> None:
    """What Inductor's first compile for ``device`` in a process pays once, paid now: importing its
    compiler and, on the CPU, choosing the vector ISA (``pick_vec_isa`` builds test programs: 1 s on
    2 cores). A CPU probe would pay it inside the optimizer's time budget; the compile after it
    would pay it anyway. Cached by Inductor: later calls cost nothing."""
    import torch._inductor.compile_fx  # noqa: F401  (1 s to import, once)

    if device == "cpu":
        from torch._inductor.cpu_vec_isa import pick_vec_isa

        pick_vec_isa()


def set_inductor_config_in_compile(name: str, value: Any) -> None:
    """Set Inductor's ``name`` from a post-grad pass, for the code generation of the graph being
    compiled: the compile's ``config_patches`` (``compile_fx_with_post_grad_pass``) must carry
    ``name``, so leaving the compile puts the value back."""
    import torch._inductor.config as inductor_config

    setattr(inductor_config, name, value)


def inductor_config_changed(name: str) -> bool:
    """Whether Inductor's ``name`` differs from its default now (a user's ``config.patch``, an
    assignment, its environment variable). A value equal to the default cannot be told from it:
    every ``config.patch`` (``compile_fx``'s ``config_patches`` too) restores the value before it by
    setting it, so "set by the user" is not kept apart from "put back" (torch 2.11-2.14)."""
    import torch._inductor.config as inductor_config

    entry = getattr(inductor_config, "_config", {}).get(name)
    return entry is not None and getattr(inductor_config, name) != entry.default


def has_plain_codegen(graph: torch.fx.Graph) -> bool:
    """The graph's code takes and returns flat values (no pytree in/out spec a rebuilt graph would lose)."""
    return type(graph._codegen) is torch.fx.graph.CodeGen


def compile_cache_counters() -> dict[str, int]:
    """Inductor's FX graph cache and AOTAutograd's cache outcomes in this process (hit, miss, bypass)."""
    from torch._dynamo.utils import counters

    return {k: v for group in ("inductor", "aot_autograd") for k, v in counters[group].items()
            if k.startswith(("fxgraph_cache", "autograd_cache"))}


@contextlib.contextmanager
def inductor_counts_bytes():
    """Inductor adds each compiled graph's bytes read and written (its ``count_bytes`` estimate) to
    ``torch._inductor.metrics.num_bytes_accessed`` only while its ``inductor_metrics`` artifact log is
    at INFO: that log on (its records not shown) for the block."""
    import logging

    from torch._inductor import compile_fx as cfx

    log = cfx.inductor_metrics_log
    level, propagate = log.level, log.propagate
    log.setLevel(logging.INFO)
    log.propagate = False
    handler = logging.NullHandler()
    log.addHandler(handler)
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
        log.propagate = propagate


def fake_mode_at_hints():
    """A fake mode of static sizes whose shape env admits data-dependent output sizes (``nonzero``):
    the equivalence check runs a symbolic graph at its hints in it, adding no guard to Dynamo's."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    return FakeTensorMode(allow_non_fake_inputs=True, static_shapes=True,
                          shape_env=ShapeEnv(allow_dynamic_output_shape_ops=True))


def free_unbacked_symbols(expr: Any) -> set:
    """The unbacked symbols (``u0``…) of a size expression."""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols as free

    return set(free(expr))
