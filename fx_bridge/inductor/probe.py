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

The fake-``cuda`` copy of the graph is made in ``fake_graph``, the device and global state faked and
put back in ``fake_gpu``, freezing's passes run in ``freezing``, launches counted in ``launches``.
"""
from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Callable, Sequence

import torch
from torch._inductor.virtualized import V

from eqsat_torch.inductor.fake_gpu import _fake_gpu, _fake_gpu_targets, _isolated
from eqsat_torch.inductor.fake_graph import _fake_copy
from eqsat_torch.inductor.freezing import _freezing_patterns
from eqsat_torch.inductor.launches import Launches, ProbeError, _combined, _launches


def available(device: str) -> bool:
    """Whether ``count_launches`` can answer for ``device`` on this machine. "cuda": a real GPU with
    Triton, or the fake-H200 path when no GPU is present (it needs no Triton, only the patched
    Inductor functions, checked here). "cpu": always; the C++ backend decides its fusion while
    generating code, after the scheduler, so there the probe generates the source (``_loop_nests``)."""
    if device == "cpu":
        return True
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
    if not available(device):
        raise ProbeError(f"cannot probe Inductor for device {device!r} here")
    if dialect not in ("aten", "torch"):
        raise ProbeError(f"unknown dialect {dialect!r}: 'aten' or 'torch'")
    cpu = device == "cpu"
    try:
        with _isolated(), contextlib.nullcontext() if cpu else _fake_gpu():
            fake_mode, gm, inputs, constants = _fake_copy(gm, example_inputs, dialect, frozen, move=not cpu)
            count = _loop_nests if cpu else _scheduled
            with fake_mode, V.set_fake_mode(fake_mode), torch.no_grad():
                if dialect == "torch":
                    return _count_torch(gm, inputs, fake_mode, combo, constants, count)
                return _count_aten(gm, inputs, fake_mode, combo, constants, count)
    except ProbeError:
        raise
    except Exception as e:
        raise ProbeError(f"Inductor could not lower the {dialect} graph: {type(e).__name__}: {e}") from e


# -- Inductor, from Torch IR or from a post-grad graph ---------------------------------------------
class _Measured(Exception):
    """Carries the count out of ``compile_fx``'s inner compile: nothing after it need run."""

    def __init__(self, launches: Launches):
        super().__init__("measured")
        self.launches = launches


def _count_torch(gm: torch.fx.GraphModule, inputs: list, fake_mode, combo: bool, constants: frozenset,
                 count: Callable[[Any, bool], Launches]) -> Launches:
    """``compile_fx`` as Inductor runs it on a Dynamo graph, stopped where it would generate code
    (its inference trace keeps the inputs in order, so ``constants`` still name them)."""
    from torch._inductor.compile_fx import compile_fx

    def inner(aten_gm, aten_inputs, **kwargs):
        raise _Measured(_count_aten(aten_gm, aten_inputs, fake_mode, combo, constants, count))

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


def _count_aten(gm: torch.fx.GraphModule, inputs: Sequence[Any], fake_mode, combo: bool, constants: frozenset,
                count: Callable[[Any, bool], Launches]) -> Launches:
    """What ``compile_fx_inner`` does before codegen: post-grad passes, lowering, then ``count`` of
    the lowered graph (``_scheduled`` or ``_loop_nests``); with ``constants`` (freezing) Inductor's
    freezing patterns first (``_freezing_patterns``)."""
    from torch._inductor import compile_fx as cfx
    from torch._inductor.debug import DebugContext
    from torch._inductor.fx_passes.post_grad import view_to_reshape
    from torch._inductor.graph import GraphLowering
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
            return count(graph, combo)


def _scheduled(graph, combo: bool) -> Launches:
    """A GPU graph's launches, from the scheduler's nodes after fusion (no code generated)."""
    from torch._inductor.scheduler import Scheduler

    scheduler = Scheduler(graph.operations)
    plain = _launches(scheduler.nodes)
    return dataclasses.replace(plain, combined=_combined(scheduler, plain)) if combo else plain


def _loop_nests(graph, combo: bool) -> Launches:
    """A CPU graph's loop nests and extern calls. The C++ backend decides its fusion while it
    generates code (``CppScheduling`` splits and merges loop nests there), so the source is generated,
    never compiled, and its loop nests read from Inductor's own ``generated_kernel_count``: the count
    that follows CPU latency (correlation 0.96 over three zoo models, issue 42), where C++ kernel
    calls do not; they come first in its order of preference (``Launches.key``). Combo kernels do
    not exist on the CPU."""
    from torch._inductor import metrics

    before = metrics.generated_kernel_count
    graph.codegen()
    counted = _launches(graph.scheduler.nodes)
    return dataclasses.replace(counted, generated=metrics.generated_kernel_count - before, cpu=True)
