"""The compared configurations, each a way to turn an eager module into a callable.

The eqsat modes use `fx_bridge.backend.eqsat_backend`, with search="saturate" or "greedy" (one family at a time).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from fx_bridge import torch_compat

MODES = ("eager", "inductor", "inductor_optimus", "eqsat_greedy", "eqsat")
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
    """Inductor alone, as a backend object of its own. Dynamo lets a module instance reuse code compiled
    for another instance of its class with the same backend, so two modes that both call Inductor
    (``inductor``, ``inductor_optimus``: one compiler, different config) kept alive side by side would
    share one program. eqsat hands its graph to the same ``compile_fx``."""

    def __call__(self, gm: torch.fx.GraphModule, example_inputs) -> object:
        return torch_compat.compile_fx()(gm, example_inputs)


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
    if base in ("inductor", "inductor_optimus"):  # Optimus is switched by the config patch, not here
        backend, reporter = InductorBackend(), None
    elif base in EQSAT_MODES:
        from fx_bridge.backend import eqsat_backend  # at call time: tests substitute the backend

        backend = reporter = eqsat_backend(search=EQSAT_MODES[base])
        if base != mode:  # the eqsat backend hands torch.compile's mode to its inner Inductor
            return Compiled(torch.compile(model, backend=backend, mode="reduce-overhead"), reporter)
    else:
        raise ValueError(f"unknown mode {mode!r}; choose from {MODES + CG_MODES}")
    return Compiled(torch.compile(model, backend=CudaGraphs(backend) if base != mode else backend), reporter)
