"""The compared configurations, each a way to turn an eager module into a callable.

The eqsat modes use `eqsat_torch.backend.eqsat_backend`, with search="saturate" or "greedy" (one family at a time).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from eqsat_torch.inductor import compat

MODES = ("eager", "inductor", "inductor_optimus", "inductor_combo", "inductor_combo_optimus", "eqsat_greedy", "eqsat")
# Inductor's stock configurations a user picks for fewer launches: combo kernels (independent
# pointwise/reduction kernels, up to 8, in one launch), alone and with every Optimus pass; with CUDA
# graphs they are ``inductor_combo_cg`` and ``inductor_combo_optimus_cg`` (GPU only).
INDUCTOR_MODES = ("inductor", "inductor_optimus", "inductor_combo", "inductor_combo_optimus")
EQSAT_MODES = {"eqsat_greedy": "greedy", "eqsat": "saturate"}
CUDAGRAPHS = "_cg"  # MODE_cg: MODE with CUDA graphs, what a user picks for launch-bound inference
CG_MODES = tuple(mode + CUDAGRAPHS for mode in MODES if mode != "eager")


def base_mode(mode: str) -> str:
    """The mode without CUDA graphs (its compiler and Inductor config are the base mode's)."""
    return mode.removesuffix(CUDAGRAPHS)


@dataclass
class Compiled:
    fn: torch.nn.Module
    backend: object | None = None  # the eqsat backend, whose reports describe each optimized graph
    reports: list[dict] = field(default_factory=list)

    def collect_reports(self) -> list[dict]:
        """The Dynamo graphs' reports, then the Aten (post-grad) graphs' with ``stage: post_grad``:
        the optimizer's time in a training step is both."""
        if self.backend is not None:
            self.reports = [report.to_dict() for report in getattr(self.backend, "reports", [])]
            self.reports += [{**report.to_dict(), "stage": "post_grad"}
                             for report in getattr(self.backend, "post_grad_reports", [])]
        return self.reports


class InductorBackend:
    """Inductor alone (with ``patches``, its config for this mode's compiles), as a backend object of its own. Dynamo lets a module instance reuse code compiled
    for another instance of its class with the same backend, so two modes that both call Inductor
    (``inductor``, ``inductor_optimus``: one compiler, different config) kept alive side by side would
    share one program. eqsat hands its graph to the same ``compile_fx``. The patches go in as
    ``config_patches``, which also wrap the lazily compiled backward."""

    def __init__(self, patches: dict | None = None):
        self.patches = dict(patches or {})

    def __call__(self, gm: torch.fx.GraphModule, example_inputs) -> object:
        if self.patches:
            return compat.compile_fx()(gm, example_inputs, config_patches=self.patches)
        return compat.compile_fx()(gm, example_inputs)


def inductor_patches(mode: str) -> dict:
    """The Inductor config a stock mode adds on top of the harness's (``inductor_config_patch``, which
    switches Optimus on for ``inductor_optimus`` only): combo kernels, and Optimus for combo+Optimus."""
    if not mode.startswith("inductor_combo"):
        return {}
    patches: dict = {"combo_kernels": True}
    if mode == "inductor_combo_optimus":
        from bench.inductor_metrics import optimus_options

        pre, post = optimus_options()
        patches.update(pre_grad_fusion_options=pre, post_grad_fusion_options=post)
    return patches


class CudaGraphs:
    """A backend whose Inductor compiles use CUDA graphs: ``triton.cudagraphs``, the one option
    ``mode="reduce-overhead"`` sets, for our ``InductorBackend`` (a backend object: Dynamo hands it
    no ``mode``; the eqsat modes take ``mode="reduce-overhead"`` as a user would). ``compile_fx`` reads it
    when called (and keeps it for the lazily compiled backward), so the patch spans that call."""

    def __init__(self, inner):
        self.inner = inner

    def __call__(self, gm: torch.fx.GraphModule, example_inputs) -> object:
        from torch._inductor import config as inductor_config

        with inductor_config.patch({"triton.cudagraphs": True}):
            return self.inner(gm, example_inputs)


def compile_model(mode: str, model: torch.nn.Module) -> Compiled:
    """Wrap `model` for `mode`. Compilation itself happens lazily at the first call."""
    if mode == "eager":
        return Compiled(model)
    base = base_mode(mode)
    if base in INDUCTOR_MODES:  # Optimus alone is switched by the harness's config patch, not here
        backend, reporter = InductorBackend(inductor_patches(base)), None
    elif base in EQSAT_MODES:
        from eqsat_torch.backend import eqsat_backend  # at call time: tests substitute the backend

        backend = reporter = eqsat_backend(search=EQSAT_MODES[base])
        if base != mode:  # the eqsat backend hands torch.compile's mode to its inner Inductor
            return Compiled(torch.compile(model, backend=backend, mode="reduce-overhead"), reporter)
    else:
        raise ValueError(f"unknown mode {mode!r}; choose from {MODES + CG_MODES}")
    return Compiled(torch.compile(model, backend=CudaGraphs(backend) if base != mode else backend), reporter)
