"""What a probe answers: the :class:`Launches` of a scheduled graph, counted from Inductor's scheduler
nodes after fusion as the wrapper code will make them (combo kernels included), or :class:`ProbeError`."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from unittest import mock


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
    # counted on the CPU: ``generated`` are loop nests, which come first in the order of preference
    cpu: bool = field(default=False, compare=False, repr=False)

    @property
    def total(self) -> int:
        return self.generated + self.extern

    @property
    def key(self) -> tuple[int, ...]:
        """Order of preference: on a GPU fewer launches, then fewer bytes; on the CPU fewer loop
        nests, then fewer extern calls, then fewer bytes. No CPU count follows latency on every zoo
        row (2 cores, torch 2.13): DHEN's training step with 21 more nests and 105 fewer extern calls
        ran 1.9x slower, the recommendation tower's inference with 66 more and 62 fewer 1.7x faster,
        GPT-NeoX's with 3 more and as many 5 % slower. Loop nests first is the order under which no
        measured row is slower than Inductor alone: what the decision must promise, at the price of
        some wins (the tower's)."""
        return (self.generated, self.extern, self.bytes) if self.cpu else (self.total, self.bytes)


class ProbeError(Exception):
    """Inductor could not lower or schedule the graph here; the message says where and why."""


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
