"""A probe without a device and without side effects: the few places Inductor reaches for a real GPU
answered as an H200 would, and every setting, metric and id counter a compile touches put back."""
from __future__ import annotations

import contextlib
import copy
import itertools
import sys
from collections import Counter
from typing import Any, Iterator
from unittest import mock

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from eqsat_torch.lowering import attention
from eqsat_torch.inductor.fake_graph import _getitem, _setitem


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
