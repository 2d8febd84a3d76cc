"""The compared configurations, each a way to turn an eager module into a callable.

The eqsat modes use `fx_bridge.backend.eqsat_backend`, in saturation or greedy (one family at a time) mode.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from fx_bridge import torch_compat

MODES = ("eager", "inductor", "inductor_optimus", "eqsat_greedy", "eqsat")
EQSAT_MODES = {"eqsat_greedy": "greedy", "eqsat": "saturate"}


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


def compile_model(mode: str, model: torch.nn.Module) -> Compiled:
    """Wrap `model` for `mode`. Compilation itself happens lazily at the first call."""
    if mode == "eager":
        return Compiled(model)
    if mode in ("inductor", "inductor_optimus"):  # Optimus is switched by the config patch, not here
        return Compiled(torch.compile(model, backend=InductorBackend()))
    if mode in EQSAT_MODES:
        from fx_bridge.backend import eqsat_backend  # at call time: tests substitute the backend

        backend = eqsat_backend(mode=EQSAT_MODES[mode])
        return Compiled(torch.compile(model, backend=backend), backend)
    raise ValueError(f"unknown mode {mode!r}; choose from {MODES}")
