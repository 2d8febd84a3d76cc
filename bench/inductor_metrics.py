"""Adapter over Inductor's private metrics and Optimus config (torch 2.11–2.14).

Everything the benchmark harness needs from `torch._inductor` internals lives here, so a torch
upgrade that moves a counter or renames a pass list breaks one small file, not the harness.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterator
from typing import Any
from unittest import mock

import torch
import torch._inductor.config as inductor_config
from torch._dynamo.utils import counters
from torch._inductor import metrics
from torch._inductor.graph import GraphLowering  # imported here, not under a config patch: its
#                                                  import registers lowerings against the config

# Settings-only post-grad keys: they tune heuristics instead of naming a pattern pass, and
# `group_linear` emits Meta-internal fbgemm ops, so it must stay behind `require_fbgemm`.
_POST_GRAD_OPTION_VALUES = {"group_linear": {"require_fbgemm": True}}

# Caches that would let a compile skip codegen (and the post-grad passes) on a hit.
_COLD_CACHE_FLAGS = (
    "fx_graph_cache",
    "fx_graph_remote_cache",
    "autotune_local_cache",
    "autotune_remote_cache",
    "bundled_autotune_remote_cache",
    "force_disable_caches",
)


def reset() -> None:
    """Zero the kernel metrics and the Inductor/Dynamo counters before a measured compile."""
    metrics.reset()
    counters.clear()
    _discarded[0] = 0


def kernel_counts() -> dict[str, int]:
    """Kernels Inductor generated and extern calls (mm, bmm, fallbacks) it emitted since `reset`.

    ``generated`` is ``generated_kernel_count`` less the loop nests of abandoned outer-loop fusion
    attempts (``discarded``, see ``_count_discarded_attempts``): what the emitted code holds."""
    discarded = _discarded[0]
    generated = int(metrics.generated_kernel_count) - discarded
    extern = int(counters["inductor"].get("extern_calls", 0))
    return {"generated": generated, "extern": extern, "total": generated + extern, "discarded": discarded}


_discarded = [0]  # loop nests counted for outer-loop fusion attempts the C++ backend abandoned


def _count_discarded_attempts() -> None:
    """The C++ backend codegens the loop nests of an outer-loop fused node together; when the nests
    turn out not to share the outer loops it drops that code and codegens each nest again on its own
    (``CppScheduling.codegen_outer_loop_node``). ``generated_kernel_count`` counts both tries, so a
    reduction with a pointwise epilogue counts 4 where the code holds 2 loop nests. A failed try
    leaves ``cpp_outer_loop_fused_inner_counts`` unchanged; its surplus is counted here."""
    try:
        from torch._inductor.codegen.cpp import CppScheduling
    except ImportError:  # a torch without the C++ backend's scheduling: nothing to correct
        return
    codegen = getattr(CppScheduling, "codegen_outer_loop_node", None)
    fused = getattr(metrics, "cpp_outer_loop_fused_inner_counts", None)
    if codegen is None or fused is None or getattr(codegen, "counts_discarded", False):
        return

    @functools.wraps(codegen)
    def counted(self, node):
        kernels, fused_before = metrics.generated_kernel_count, len(metrics.cpp_outer_loop_fused_inner_counts)
        codegen(self, node)
        if len(metrics.cpp_outer_loop_fused_inner_counts) == fused_before:
            kept = len(node.get_outer_nodes())
            _discarded[0] += max(0, metrics.generated_kernel_count - kernels - kept)

    counted.counts_discarded = True
    CppScheduling.codegen_outer_loop_node = counted


_count_discarded_attempts()


_LAUNCH = re.compile(r"^\s+(cpp_fused_\w+\(|triton_\w+\.run\()", re.M)
_EXTERN = re.compile(r"^\s+(buf\d+ = )?(extern_kernels\.\w+|torch\.ops\.\w+\.\w+)", re.M)


@contextlib.contextmanager
def capture_output_code() -> Iterator[list[str]]:
    """Collect the wrapper code of every graph Inductor compiles inside the block (fw and bw)."""
    codes: list[str] = []
    with mock.patch.object(GraphLowering, "save_output_code", staticmethod(codes.append)):
        yield codes


def launch_counts(codes: list[str]) -> dict[str, int]:
    """Kernel calls in the wrappers' ``call`` bodies: what a step launches. On CPU Inductor's
    ``generated_kernel_count`` counts loop nests inside each fused C++ function instead."""
    bodies = [code.split("def call(", 1)[-1] for code in codes]
    generated = sum(len(_LAUNCH.findall(b)) for b in bodies)
    extern = sum(len(_EXTERN.findall(b)) for b in bodies)
    return {"generated": generated, "extern": extern, "total": generated + extern}


def launch_names(code: str) -> list[str]:
    """What each launch of one wrapper's ``call`` body runs: ``triton_poi``/``triton_red``/``triton_per``
    (and the other Triton kinds), ``cpp`` (a fused C++ function), or the extern call (``mm``, ``aten.sort``)."""
    body = code.split("def call(", 1)[-1]
    kernels = [m.split("_")[0] if m.startswith("cpp") else "_".join(m.split("_")[:2]) for m in _LAUNCH.findall(body)]
    return kernels + [m[1].split(".", 1)[1].removeprefix("ops.") for m in _EXTERN.findall(body)]


def inductor_counters() -> dict[str, int]:
    """Non-zero `counters["inductor"]` entries: Optimus pass counters, pattern matches, extern calls."""
    return {k: int(v) for k, v in counters["inductor"].items() if v}


def _pre_grad_keys() -> list[str]:
    from torch._inductor.fx_passes import group_batch_fusion, split_cat

    rest = [k for k in split_cat.pre_grad_pass_names if k != "normalization_pass"]
    return ["normalization_pass", *group_batch_fusion.list_group_batch_fusions(True), *rest]


def _post_grad_keys() -> list[str]:
    from torch._inductor.fx_passes import group_batch_fusion, split_cat

    rest = [k for k in split_cat.post_grad_pass_names if k != "normalization_aten_pass"]
    fusions = group_batch_fusion.list_group_batch_fusions(False)
    return ["normalization_aten_pass", *fusions, *rest]


def optimus_options() -> tuple[dict[str, dict], dict[str, dict]]:
    """(pre, post) fusion-option dicts with every Optimus key of the installed torch enabled.

    Normalization comes first: almost every split-cat pattern only matches normalized splits.
    Keys are read from the registries in `split_cat.py` / `group_batch_fusion.py`, not hard-coded,
    because the set changes between releases (2.14 adds `cat_linear`).
    """
    pre = {k: {} for k in _pre_grad_keys()}
    post = {k: dict(_POST_GRAD_OPTION_VALUES.get(k, {})) for k in _post_grad_keys()}
    return pre, post


def _cold_cache_settings() -> dict[str, bool]:
    return {flag: flag == "force_disable_caches" for flag in _COLD_CACHE_FLAGS if hasattr(inductor_config, flag)}


@contextlib.contextmanager
def inductor_config_patch(mode: str, cold: bool = True, freezing: bool = False,
                          post_grad_pass: Any = None) -> Iterator[None]:
    """Inductor config for one benchmark mode; `cold` disables every compile cache; `freezing` folds
    parameters into constants in inference compiles (every mode gets the same setting);
    `post_grad_pass` is the user's post-grad pre-pass (eqsat's post-grad pass runs it after its own).

    Mode "inductor_optimus" enables every Optimus pass; every other mode (Inductor alone and the eqsat
    modes, which hand their graph to Inductor) gets empty fusion-option dicts so Optimus cannot
    blur the comparison.
    """
    pre, post = optimus_options() if mode == "inductor_optimus" else ({}, {})
    settings = {"pre_grad_fusion_options": pre, "post_grad_fusion_options": post, "freezing": freezing}
    if post_grad_pass is not None:
        settings["post_grad_custom_pre_pass"] = post_grad_pass
    if cold:
        settings.update(_cold_cache_settings())
    with inductor_config.patch(settings):
        yield
