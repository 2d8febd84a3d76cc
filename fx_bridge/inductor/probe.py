"""Ask Inductor how many launches a graph costs on a GPU: its own lowering and scheduler decide.

The cost model proposes, Inductor decides (DESIGN.md): the pipeline measures the input program and a
few candidates here and keeps the one with the fewest launches. This is the one adapter over the
private Inductor APIs that needs (torch 2.11–2.14); nothing else touches them.

What is run: for a Torch-IR graph, ``compile_fx`` up to its ``inner_compile`` hook (pre-grad passes,
AOTAutograd's inference trace with Inductor's decompositions, joint-graph passes); then, for that or
a given Aten graph, the post-grad passes, ``GraphLowering`` and ``Scheduler`` (fusion). No code is
generated and no kernel compiled. Without a GPU it all runs on fake ``cuda`` tensors of the example
inputs' shapes, with the few places that reach for a real device answered as an H200 would
(shared/reference/inductor-in-the-loop.md); on a machine with a GPU nothing is patched. Checked on an
H200 (torch 2.11), on 18 graphs (pointwise cats of 3, 8 and 10 inputs, matmuls, softmax, sort, split
and mix-order reductions, a 231-node chain, a training step's forward and backward), the launches
counted here were those in the real compile's wrapper code, and this CPU's fake path counted the same.

Under ``freezing`` (``frozen=True``) what only parameters feed is folded first, as Inductor folds it.
Not modelled: autotuned templates (``max_autotune`` is off here), ``pad_mm``'s benchmarked padding,
CUDA graphs, symbolic sizes (refused), training (inputs never require grad: an Aten backward graph is measured as it is).
User-installed custom passes do not run (ours would recurse).
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import itertools
import operator
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence
from unittest import mock

import torch
import torch.utils._pytree as pytree
from torch._inductor.virtualized import V
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from eqsat_torch.lowering import attention

_CUDA = torch.device("cuda", 0)

# Settings of a probe: no custom pass (ours would recurse), nothing that needs real tensors
# (autotuning, freezing's constant folding), no AOTAutograd cache (its hit would skip our inner compile).
_CONFIG = {
    "post_grad_custom_pre_pass": None, "post_grad_custom_post_pass": None,
    "joint_custom_pre_pass": None, "joint_custom_post_pass": None, "pre_grad_custom_pass": None,
    "freezing": False, "max_autotune": False, "max_autotune_gemm": False, "max_autotune_pointwise": False,
}
_FUNCTORCH_CONFIG = {"enable_autograd_cache": False, "enable_remote_autograd_cache": False}

# Metrics a compile adds to (None: every public number and container of the module).
_METRICS = (("torch._inductor.metrics", None),
            ("torch._dynamo.utils", ("compilation_time_metrics", "cumulative_time_spent_ns")),
            ("torch._functorch._aot_autograd.logging_utils", ("nth_graph",)))

# Id counters a compile advances (graph names, cache keys); a probe gets throwaway ones.
_ID_COUNTERS = (("torch._functorch.aot_autograd", "AOT_COUNTER"), ("torch._inductor.compile_fx", "_graph_counter"),
                ("torch._inductor.scheduler", "_post_grad_graph_counter"),
                ("torch._inductor.graph", "_post_grad_graph_counter"))


@dataclass(frozen=True)
class Launches:
    """What one graph costs on the GPU: Triton kernels, extern calls (mm, bmm, fallbacks), and
    Inductor's estimate of the bytes its kernels read and write."""

    generated: int  # Triton kernels
    extern: int     # every other call: extern kernels, fallbacks, a mix-order reduction's final sums
    bytes: int
    # each launch: "kernel" or "extern" and the Aten ops it was made from (what a calibration compares
    # with the cost model's groups); not part of the comparison
    described: tuple[str, ...] = field(default=(), compare=False, repr=False)
    # the same program's launches with Inductor's combo kernels on (``combo_kernels``: independent
    # pointwise/reduction kernels grouped into one launch); None when not counted
    combined: Launches | None = field(default=None, compare=False, repr=False)

    @property
    def total(self) -> int:
        return self.generated + self.extern

    @property
    def key(self) -> tuple[int, int]:
        """Order of preference: fewer launches, then fewer bytes."""
        return self.total, self.bytes


class ProbeError(Exception):
    """Inductor could not lower or schedule the graph here; the message says where and why."""


def available(device: str) -> bool:
    """Whether ``count_launches`` can answer for ``device`` on this machine. "cuda": a real GPU with
    Triton, or the fake-H200 path when no GPU is present (it needs no Triton, only the patched
    Inductor functions, checked here). "cpu" is never probed: the C++ backend decides its fusion
    while generating code, after the scheduler, so a scheduler count would not be its truth."""
    if device != "cuda":
        return False
    if torch.cuda.is_available():
        from torch.utils._triton import has_triton

        return has_triton()
    return _fake_gpu_targets() is not None


def count_launches(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], device: str = "cuda",
                   dialect: str = "aten", frozen: bool = False, combo: bool = False) -> Launches:
    """Launches Inductor would emit for ``gm`` on ``device`` ("cuda"). ``dialect``: "aten" for a
    post-grad (functional Aten) graph, "torch" for a Dynamo graph. ``frozen``: Inductor's ``freezing``
    will fold the parameters into constants (``_fold_parameters``). ``combo``: also count them with
    combo kernels on (``Launches.combined``; the same lowering, so nearly free). ``gm`` and the
    inputs are left as they are, and so is every global setting and counter. Raises :class:`ProbeError`."""
    if device != "cuda" or not available(device):
        raise ProbeError(f"cannot probe Inductor for device {device!r} here")
    if dialect not in ("aten", "torch"):
        raise ProbeError(f"unknown dialect {dialect!r}: 'aten' or 'torch'")
    try:
        with _isolated(), _fake_gpu():
            fake_mode, gm, inputs, constants = _fake_copy(gm, example_inputs, dialect, frozen)
            with fake_mode, V.set_fake_mode(fake_mode), torch.no_grad():
                if dialect == "torch":
                    return _count_torch(gm, inputs, fake_mode, combo, constants)
                return _count_aten(gm, inputs, fake_mode, combo, constants)
    except ProbeError:
        raise
    except Exception as e:
        raise ProbeError(f"Inductor could not lower the {dialect} graph: {type(e).__name__}: {e}") from e


# -- the graph on fake cuda tensors ----------------------------------------------------------------
def _fake_copy(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], dialect: str, frozen: bool = False):
    """A copy of ``gm`` whose tensor attributes are inputs, and fake inputs of the same sizes,
    strides and dtypes, none requiring grad (on a CPU-only build a fake cuda tensor that requires
    grad aborts the process). A program with no cuda input (traced on the CPU) is moved to cuda:
    its inputs, device literals and factories. ``frozen``: what only parameters feed is folded, and
    the positions of the inputs that are then constants (parameters, attributes, folded values) are
    returned too (``_freezing_patterns`` needs them)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    tensors = [x for x in example_inputs if isinstance(x, torch.Tensor)]
    if any(not isinstance(s, int) for x in tensors for s in (*x.shape, *x.stride())):
        raise ProbeError("symbolic sizes are not probed")
    if any(n.op == "call_module" for n in gm.graph.nodes):
        raise ProbeError("call_module nodes are not probed (their parameters would stay on the host)")
    move = not any(x.device.type == "cuda" for x in tensors)
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


# -- Inductor, from Torch IR or from a post-grad graph ---------------------------------------------
class _Measured(Exception):
    """Carries the count out of ``compile_fx``'s inner compile: nothing after it need run."""

    def __init__(self, launches: Launches):
        super().__init__("measured")
        self.launches = launches


def _count_torch(gm: torch.fx.GraphModule, inputs: list, fake_mode, combo: bool = False,
                 constants: frozenset = frozenset()) -> Launches:
    """``compile_fx`` as Inductor runs it on a Dynamo graph, stopped where it would generate code
    (its inference trace keeps the inputs in order, so ``constants`` still name them)."""
    from torch._inductor.compile_fx import compile_fx

    def inner(aten_gm, aten_inputs, **kwargs):
        raise _Measured(_count_aten(aten_gm, aten_inputs, fake_mode, combo, constants))

    try:
        compile_fx(gm, inputs, inner_compile=inner)
    except Exception as e:
        found = _cause(e, _Measured)
        if found is None:
            raise
        return found.launches
    raise ProbeError("compile_fx never reached its inner compile")


def _cause(e: BaseException | None, kind: type) -> Any:
    while e is not None and not isinstance(e, kind):
        e = e.__cause__ or e.__context__
    return e


def _count_aten(gm: torch.fx.GraphModule, inputs: Sequence[Any], fake_mode, combo: bool = False,
                constants: frozenset = frozenset()) -> Launches:
    """What ``compile_fx_inner`` does before codegen: post-grad passes, lowering, scheduling; with
    ``constants`` (freezing) Inductor's freezing patterns first (``_freezing_patterns``)."""
    from torch._inductor import compile_fx as cfx
    from torch._inductor.debug import DebugContext
    from torch._inductor.fx_passes.post_grad import view_to_reshape
    from torch._inductor.graph import GraphLowering
    from torch._inductor.scheduler import Scheduler
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    post_grad = getattr(cfx, "_recursive_post_grad_passes", None) or cfx.post_grad_passes
    if constants:
        gm, inputs = _freezing_patterns(gm, list(inputs), constants, fake_mode)
    view_to_reshape(gm)
    FakeTensorProp(gm, mode=fake_mode).propagate_dont_convert_inputs(*inputs)
    record_strides = getattr(cfx, "_recursive_record_original_output_strides", None)
    if record_strides is not None:  # compile_fx_inner records them for the outputs' lowering
        record_strides(gm)
    with DebugContext():
        post_grad(gm, is_inference=True)
        graph = GraphLowering(gm, example_inputs=list(inputs), shape_env=None, is_inference=True)
        with V.set_graph_handler(graph):
            graph.run(*inputs)
            scheduler = Scheduler(graph.operations)
            plain = _launches(scheduler.nodes)
            return dataclasses.replace(plain, combined=_combined(scheduler, plain)) if combo else plain


def _freezing_patterns(gm: torch.fx.GraphModule, inputs: list, constants: frozenset,
                       fake_mode) -> tuple[torch.fx.GraphModule, list]:
    """What Inductor's ``freeze`` does to the frozen graph beyond folding: the constant inputs become
    constants (``get_attr``) and its freezing patterns run (``freezing_patterns.pass_patterns``; on a
    GPU the concat-linear ones: 2 or 3 matmuls of one input and constant weights become one matmul of
    the concatenated weights, which Llama's q/k/v and gate/up are); what only constants then feed
    (the concatenated weights) is folded. ``freeze``'s CSE comes first, as there. Without this, Inductor alone was counted 3 launches a Llama
    layer more than it makes under ``freezing`` (issue 42: 31 counted, 25 on an H100)."""
    from torch._functorch.compile_utils import fx_graph_cse
    from torch._inductor.fx_passes import freezing_patterns

    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for i in sorted(constants):
        name = f"_probe_constant_{i}"
        gm.register_buffer(name, inputs[i])  # a buffer: a plain tensor attribute makes get_attr warn
        with gm.graph.inserting_before(placeholders[i]):
            attr = gm.graph.get_attr(name)
        attr.meta = dict(placeholders[i].meta)
        placeholders[i].replace_all_uses_with(attr)
        gm.graph.erase_node(placeholders[i])
    inputs = [x for i, x in enumerate(inputs) if i not in constants]
    gm.graph = fx_graph_cse(gm.graph)  # as ``freeze`` does: one input view for the three of q/k/v
    _fold_constants(gm)  # the transposed weights the patterns match must be constants themselves
    freezing_patterns.lazy_init()
    for patterns in freezing_patterns.pass_patterns:
        patterns.apply(gm.graph)
    _fold_constants(gm)
    gm.recompile()
    return gm, inputs


def _fold_constants(gm: torch.fx.GraphModule) -> None:
    """Each node that only constants feed becomes a constant, as freezing's ``constant_fold`` makes it."""
    for node in list(gm.graph.nodes):
        args = node.all_input_nodes
        if node.op != "call_function" or not args or any(a.op != "get_attr" for a in args):
            continue
        value = node.target(*torch.fx.node.map_arg(node.args, lambda a: getattr(gm, a.target)),
                            **torch.fx.node.map_arg(node.kwargs, lambda a: getattr(gm, a.target)))
        if not isinstance(value, torch.Tensor):
            continue
        name = f"_probe_constant_{node.name}"
        gm.register_buffer(name, value)
        with gm.graph.inserting_before(node):
            attr = gm.graph.get_attr(name)
        attr.meta = {**node.meta, "val": value}
        node.replace_all_uses_with(attr)
        gm.graph.erase_node(node)
    gm.graph.eliminate_dead_code()


def _combined(scheduler, plain: Launches) -> Launches | None:
    """The launches with combo kernels on: what ``Scheduler.codegen`` does to the fused nodes first
    (``merge_loops``, then ``create_combo_kernel_nodes``: nodes of one topological level, at most
    ``combo_kernel_max_num_nodes`` of them, never extern/template/grouped/mix-order nodes), and each
    combo node as the launches its code generation makes: one per partition that
    ``ComboKernel.horizontal_partition`` cuts it into (by tiling dims, long reductions, large
    pointwise, argument count). None when this torch lacks a step (the caller then leaves combo off)."""
    from torch._inductor import scheduler as sched_module

    combo_node = getattr(sched_module, "ForeachKernelSchedulerNode", None)
    if combo_node is None or not hasattr(scheduler, "create_combo_kernel_nodes"):
        return None
    before = set(scheduler.nodes)
    try:
        # (``combo_kernels`` itself only gates this step in codegen: it is not set here, so the
        # user's setting stays unset, as ``compat.inductor_config_set_by_user`` reads it)
        if hasattr(scheduler, "merge_loops"):
            scheduler.merge_loops()
        scheduler.create_combo_kernel_nodes(num_ck_nodes=None)
        combos = {n: _combo_partitions(scheduler, n) for n in scheduler.nodes
                  if n not in before and isinstance(n, combo_node)}
    except Exception:  # a torch whose combo kernels we cannot read: counted as not combining
        return None
    counted = _launches(scheduler.nodes, combos)
    return dataclasses.replace(counted, bytes=plain.bytes)  # grouping launches moves no other byte


class _Partitioned(Exception):
    """Carries a combo node's partitions out of its code generation, before any code is made."""

    def __init__(self, partitions: list):
        super().__init__("partitioned")
        self.partitions = partitions


def _combo_partitions(scheduler, node) -> int:
    """How many kernels the combo node's code generation launches: its partitions, as Inductor's
    own ``codegen_combo_kernel`` cuts them (stopped right after, so no Triton is needed)."""
    from torch._inductor.codegen import triton_combo_kernel

    combo_kernel = triton_combo_kernel.ComboKernel
    partition = combo_kernel.horizontal_partition

    def record(*args, **kwargs):
        raise _Partitioned(partition(*args, **kwargs))

    with mock.patch.object(combo_kernel, "horizontal_partition", staticmethod(record)):
        try:
            scheduler.get_backend(node.get_device()).codegen_combo_kernel(node)
        except _Partitioned as found:
            return sum(1 for p in found.partitions if p)
    raise ProbeError("a combo kernel's code generation never partitioned it")


def _launches(nodes: list, combos: dict | None = None) -> Launches:
    """Launches of the scheduler's nodes after fusion, as the wrapper code will make them;
    ``combos``: combo kernel nodes and the kernels each launches."""
    from torch._inductor import scheduler

    mixed = getattr(scheduler, "FusedMixOrderReductions", ())
    finished = set()  # final stages of split reductions a mix-order reduction finishes in the wrapper
    for node in nodes:
        if mixed and isinstance(node, mixed):
            finished |= {n.get_outputs()[0].users[0].node.get_name()
                         for n in node.node2.get_nodes() if n.is_reduction()}
    generated = extern = 0
    described = []
    for node in nodes:
        g, e = (combos[node], 0) if combos and node in combos else _node_launches(node, finished)
        generated, extern = generated + g, extern + e
        if g or e:
            described.append(f"{g}+{e} {_origins(node)}")
    return Launches(generated, extern, int(sum(n.get_read_write_buffers_sizes() for n in nodes)), tuple(described))


def _origins(node) -> str:
    """The Aten ops a scheduler node was made from, short names, sorted."""
    names = {str(o.target).removeprefix("aten.").removesuffix(".default")
             for n in node.get_nodes() for o in getattr(n.node, "origins", ()) or ()}
    return " ".join(sorted(names))


def _node_launches(node, finished: set) -> tuple[int, int]:
    """(Triton kernels, other calls) the wrapper code makes for one scheduler node."""
    from torch._inductor import ir, scheduler

    if isinstance(node, scheduler.NopKernelSchedulerNode) or not set(node.get_operation_names()) - finished:
        return 0, 0
    grouped = getattr(scheduler, "GroupedSchedulerNode", ())
    if grouped and isinstance(node, grouped):
        counts = [_node_launches(n, finished) for n in node.snodes]
        return sum(g for g, _ in counts), sum(e for _, e in counts)
    if node.is_extern():
        return (0, 0) if isinstance(node.node, ir.MultiOutput) else (0, 1)
    mixed = getattr(scheduler, "FusedMixOrderReductions", ())
    if mixed and isinstance(node, mixed):
        # One kernel reduces both ways, leaving the outer reductions as partial sums in a workspace;
        # the wrapper finishes each with a torch reduction (their final stages are not codegened),
        # and node2's pointwise epilogue is a kernel of its own (SIMDScheduling's codegen of it).
        outer = node.node2.get_nodes()
        reductions = sum(1 for n in outer if n.is_reduction())
        return 1 + (reductions < len(outer)), reductions
    return 1, 0


# -- no device, no side effects ------------------------------------------------------------------
_H200 = {"type": "cuda", "multi_processor_count": 132, "cc": 90, "major": 9, "regs_per_multiprocessor": 65536,
         "max_threads_per_multi_processor": 2048, "max_threads_per_block": 1024, "warp_size": 32}


def _fake_gpu_targets() -> list[tuple[Any, str, Any]] | None:
    """The patches that let Inductor's CUDA lowering and scheduler run with no GPU, or None when this
    torch lacks one of their targets. What each answers, and why, is in the reference doc."""
    from torch._inductor import scheduler
    from torch._inductor.fx_passes import joint_graph
    from torch._inductor.runtime.hints import DeviceProperties

    folder = getattr(joint_graph, "UniformValueConstantFolder", None)
    if not all(hasattr(m, a) for m, a in ((scheduler, "has_triton"), (joint_graph, "lazy_init"),
                                          (DeviceProperties, "create"), (folder, "_deduce_value"))):
        return None
    lazy_init, create, deduce = joint_graph.lazy_init, DeviceProperties.create, folder._deduce_value

    def init_patterns_on_cpu(input_device=None, *args, **kwargs):
        # Registered for cuda, the cuda-only patterns (half-precision attention, e8m0) would join
        # every later compile in this process; the CPU set is the one any compile here registers.
        return lazy_init(None, *args, **kwargs)

    def h200(cls, device):
        if device.type != "cuda":
            return create(device)
        fields = {k: v for k, v in _H200.items() if k in DeviceProperties._fields}
        return DeviceProperties(index=device.index or 0, **fields)

    def deduce_on_cpu(self, node):
        # constant folding computes the uniform value of full/zeros_like nodes for real
        with _OnCpu():
            return deduce(self, node)

    return [(scheduler, "has_triton", lambda: True), (joint_graph, "lazy_init", init_patterns_on_cpu),
            (DeviceProperties, "create", classmethod(h200)), (folder, "_deduce_value", deduce_on_cpu)]


class _NoCudaGuards(TorchFunctionMode):
    """On a CPU-only build the C++ bindings of ``x[i]``, ``x[i] = v``, ``x.contiguous()``, ``~x`` and
    ``x.copy_(y)`` open a CUDA device guard, which fails for a fake cuda tensor: they are made of the
    aten calls they would make.
    Dynamo graphs index tensors and make attention heads contiguous; Inductor's reinplacing pass
    copies into views."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.Tensor.__getitem__:
            return _getitem(*args)
        if func is torch.Tensor.__setitem__:
            return _setitem(*args)
        if func is torch.Tensor.copy_:
            return torch.ops.aten.copy_.default(*args, **kwargs)
        if func is torch.Tensor.contiguous:
            return _contiguous(*args, **kwargs)
        if func is torch.Tensor.__invert__:
            return torch.ops.aten.bitwise_not.default(*args)
        if func is torch.nn.functional.scaled_dot_product_attention:
            return _fused_attention(func, *args, **kwargs)
        return func(*args, **kwargs)


def _contiguous(x: torch.Tensor, memory_format: torch.memory_format = torch.contiguous_format) -> torch.Tensor:
    """``x.contiguous()`` as the aten call it makes: itself when laid out so, else a clone."""
    if x.is_contiguous(memory_format=memory_format):
        return x
    return torch.ops.aten.clone.default(x, memory_format=memory_format)


def _fused_attention(sdpa, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                     enable_gqa=False):
    """SDPA as a CUDA build runs it on an H200: a CPU-only build has no CUDA kernel choice for fake
    cuda tensors and decomposes it into matmuls and a softmax (5 more launches a layer than the GPU).
    Flash attention for half precision without a mask, memory-efficient attention (a boolean mask
    made additive first) for the rest, where ``attention.cuda_fuses`` says a fused kernel takes it."""
    if not attention.cuda_fuses(query, key, value, attn_mask, enable_gqa):
        return sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
    if query.dtype in (torch.float16, torch.bfloat16) and attn_mask is None:
        return torch.ops.aten._scaled_dot_product_flash_attention.default(
            query, key, value, dropout_p, is_causal, False, scale=scale)[0]
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        attn_mask = torch.zeros((), dtype=query.dtype, device=query.device).masked_fill(
            attn_mask.logical_not(), float("-inf"))
    return torch.ops.aten._scaled_dot_product_efficient_attention.default(
        query, key, value, attn_mask, False, dropout_p, is_causal, scale=scale)[0]


class _OnCpu(TorchDispatchMode):
    """Makes on the CPU what a factory is asked to make on cuda."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if isinstance(kwargs.get("device"), torch.device) and kwargs["device"].type == "cuda":
            kwargs["device"] = torch.device("cpu")
        return func(*args, **kwargs)


@contextlib.contextmanager
def _fake_gpu() -> Iterator[None]:
    """The fake-H200 patches, only where no GPU is present (a real one answers for itself)."""
    if torch.cuda.is_available():
        yield
        return
    with contextlib.ExitStack() as stack:
        for owner, name, value in _fake_gpu_targets():  # present: ``available`` checked
            stack.enter_context(mock.patch.object(owner, name, value))
        stack.enter_context(_NoCudaGuards())
        yield


@contextlib.contextmanager
def _isolated() -> Iterator[None]:
    """Inductor's settings for a probe, outside the tracing context of any compile in progress (the
    pipeline probes from a backend or a post-grad pass; AOTAutograd would take that context's fake
    mode), and every counter, metric and id counter put back after."""
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config
    from torch._dynamo.utils import counters

    saved_counters = {k: Counter(v) for k, v in counters.items()}
    saved_metrics = _metrics_state()
    with contextlib.ExitStack() as stack:
        stack.enter_context(torch._guards.tracing(None))
        stack.enter_context(inductor_config.patch({k: v for k, v in _CONFIG.items() if hasattr(inductor_config, k)}))
        stack.enter_context(functorch_config.patch(
            {k: v for k, v in _FUNCTORCH_CONFIG.items() if hasattr(functorch_config, k)}))
        for module, name in _ID_COUNTERS:
            if hasattr(sys.modules.get(module), name):
                stack.enter_context(mock.patch.object(sys.modules[module], name, itertools.count()))
        try:
            yield
        finally:
            for k in list(counters):
                counters[k].clear()
                counters[k].update(saved_counters.get(k, {}))
                if k not in saved_counters:
                    del counters[k]
            _restore_metrics(saved_metrics)


def _metrics_state() -> list[tuple[Any, str, Any, Any]]:
    """(module, name, object, a copy) of every metric a compile adds to; a dict's values are copied
    too (timings are lists per key), a list's items are not (they may be scheduler nodes)."""
    state = []
    for module_name, names in _METRICS:
        module = sys.modules.get(module_name)
        if module is None:
            continue
        for name in names or [k for k in vars(module) if not k.startswith("_")]:
            value = getattr(module, name, None)
            if isinstance(value, (int, float, list, dict, set)):
                content = {k: copy.copy(v) for k, v in value.items()} if isinstance(value, dict) else copy.copy(value)
                state.append((module, name, value, content))
    return state


def _restore_metrics(state: list[tuple[Any, str, Any, Any]]) -> None:
    """Put each metric back in its own object: other modules hold references to them."""
    for module, name, obj, content in state:
        if isinstance(obj, list):
            obj[:] = content
        elif isinstance(obj, (dict, set)):
            obj.clear()
            obj.update(content)
        else:
            obj = content
        setattr(module, name, obj)
