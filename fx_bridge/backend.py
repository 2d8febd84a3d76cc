"""``torch.compile(model, backend="eqsat")``: optimize the Dynamo graph, then hand it to Inductor.

The backend never breaks a compile Inductor alone would finish: any failure of ours (unsupported
graph, internal error, budget, validation mismatch, Inductor rejecting our graph) logs a warning on
the ``eqsat`` logger and compiles the original graph instead.
"""
from __future__ import annotations

import functools

import logging
from typing import Any, Callable, Sequence

import torch

from eqsat.deadline import Allowance

from eqsat_torch import artifacts, cache
from eqsat_torch.inductor import compose, workarounds, compat
from eqsat_torch.safety.fallback import kept_original
from eqsat_torch.options import Options, device_of
from eqsat_torch.inductor.post_grad import EqsatPostGradPass
from eqsat_torch.report import Report

log = logging.getLogger("eqsat")


REPORTS_KEPT = 256  # ~75 KB a report: a long-running process keeps at most ~20 MB of them per list


class BoundedReports(list):
    """A list that keeps only its newest ``maxlen`` items: ``append`` drops the oldest beyond it.

    Still a plain ``list`` to its readers (``reports[-1]``, iteration, ``len``, ``+``, ``== []``), so a
    long-running process that compiles graph after graph does not grow without bound."""

    def __init__(self, maxlen: int = REPORTS_KEPT):
        super().__init__()
        self.maxlen = maxlen

    def append(self, item: Any) -> None:
        super().append(item)
        if len(self) > self.maxlen:
            del self[:len(self) - self.maxlen]


class EqsatBackend:
    """A configured backend; ``reports`` collects one :class:`Report` per graph it saw.

    ``reports`` and ``post_grad_reports`` keep the newest ``REPORTS_KEPT`` (256) reports each
    (:class:`BoundedReports`); older ones are dropped.

    ``torch.compile(m, backend=..., mode=..., options=...)`` reaches it as keyword arguments: ``mode``
    (``reduce-overhead``, ``max-autotune``) and the Inductor names in ``options`` become the inner
    Inductor's config, the other names of ``options`` are ours."""

    def __init__(self, **options: Any):
        self.options = Options.of(options)
        self.reports: list[Report] = BoundedReports()
        self.post_grad_reports: list[Report] = BoundedReports()  # one per Aten graph (forward, backward) Inductor saw

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **kwargs: Any) -> Callable:
        opts = self.options
        ours, inductor = Options.split(kwargs.get("options"), compat.inductor_config_names())
        if ours:
            opts = Options.of({**_fields(self.options), **ours})
        Options.check_compile_mode(kwargs.get("mode"))
        inductor = {**compat.inductor_mode_options(kwargs.get("mode")), **inductor}
        frozen = opts.inner == "inductor" and compat.inductor_freezes_params(inductor)
        if opts.inner == "inductor":  # its one-time start-up is the compile's, not the optimizer's time
            compat.inductor_start_up(device_of(example_inputs))
        allowance = Allowance(opts.seconds)  # seconds= is for the compile: this graph, then AOT's
        trains = _trains(gm, example_inputs)
        combo = compose.setting(opts, inductor, example_inputs)
        artifacts.graph_before("pre_grad", gm.graph)
        with allowance.deadline():  # all of the pass is the optimizer's: the cache key, the probe
            new_gm, report = cache.optimized(
                "pre_grad", gm, example_inputs, opts, device_of(example_inputs),
                {"frozen_params": frozen, "train_step": trains, "grad": torch.is_grad_enabled(), "combo": combo},
                lambda: _decided(optimize_or_keep(gm, example_inputs, opts, frozen, trains, allowance, combo),
                                 example_inputs, combo, frozen, allowance), allowance)
        artifacts.graph_after("pre_grad", new_gm.graph, report)
        self.reports.append(report)
        inductor = compose.inductor_options(report, inductor, combo)
        inner = functools.partial(self._inner, opts, allowance, inductor, combo_decides=combo == compose.DECIDE)
        if new_gm is gm:
            return inner(gm)(gm, example_inputs)
        try:
            return inner(new_gm)(new_gm, example_inputs)
        except Exception as e:  # Inductor rejected our graph: the original must still compile
            log.warning("eqsat: Inductor failed on the optimized graph (%s: %s); compiling the original",
                        type(e).__name__, e)
            report.changed = False
            try:
                compiled = inner(gm)(gm, example_inputs)
            except Exception:  # the user's own graph fails the same compile: not a bug of ours
                report.skipped = f"inductor fails on the original graph too: {type(e).__name__}"
                report.fallback = "skipped"
                raise
            report.skipped = f"internal error: inductor failed on optimized graph: {type(e).__name__}"
            report.fallback = "internal error"
            return compiled

    def _inner(self, opts: Options, allowance: Allowance, inductor: dict,
               gm: torch.fx.GraphModule, combo_decides: bool = False) -> Callable:
        """The compiler ``gm`` goes to, with the user's Inductor config and the workarounds ``gm``
        needs (``workarounds``); Inductor runs our post-grad pass unless it is off, and with
        ``combo_decides`` that pass decides combo kernels for each Aten graph it sees."""
        if opts.inner != "inductor":
            return _eager
        make_pass = (lambda user: EqsatPostGradPass(opts, then=user, reports=self.post_grad_reports,
                                                    allowance=allowance, combo_decides=combo_decides)
                     ) if opts.post_grad else None
        config = workarounds.config_for(gm, inductor)
        return compat.compile_fx_with_post_grad_pass(make_pass, config)


def _eager(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    return gm.forward


def _fields(opts: Options) -> dict:
    return {k: getattr(opts, k) for k in opts.__dataclass_fields__}


def _trains(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> bool:
    """AOTAutograd will derive a backward from this graph: grad mode is on and something it reads
    (an input, a parameter lifted to an input, or a graph attribute) requires grad."""
    if not torch.is_grad_enabled():
        return False
    return (any(isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs)
            or any(p.requires_grad for p in gm.parameters()))


def _decided(result: tuple[torch.fx.GraphModule, Report], example_inputs: Sequence[Any], combo: bool | str,
             frozen: bool, allowance: Allowance) -> tuple[torch.fx.GraphModule, Report]:
    """The combo-kernel decision for a graph Inductor did not measure with its program."""
    new_gm, report = result
    return new_gm, compose.decide_unmeasured(new_gm, example_inputs, report, combo, frozen, allowance)


def optimize_or_keep(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], options: Options,
                     frozen_params: bool = False, train_step: bool = False,
                     allowance: Allowance | None = None,
                     combo: bool | str = "config") -> tuple[torch.fx.GraphModule, Report]:
    """``optimize``, or the original graph and a report saying why it was kept."""
    from eqsat_torch.pipeline import optimize  # the optimizer's imports (egglog, ~1 s) only when it runs: not on a cache hit

    try:
        new_gm, report = optimize(gm, example_inputs, options, frozen_params=frozen_params,
                                  train_step=train_step, allowance=allowance, combo=combo)
        return new_gm, report
    except Exception as e:  # never break a compile over a graph we cannot improve safely
        return gm, kept_original(e, len(gm.graph.nodes), "")


def eqsat_backend(**options: Any) -> EqsatBackend:
    """A backend with options: ``torch.compile(m, backend=eqsat_backend(validate=True))``."""
    return EqsatBackend(**options)


_default = EqsatBackend()


def eqsat_compile(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **kwargs: Any) -> Callable:
    """The registered ``"eqsat"`` backend (entry point ``torch_dynamo_backends``)."""
    return _default(gm, example_inputs, **kwargs)


def last_reports() -> list[Report]:
    """Reports of graphs compiled with ``backend="eqsat"`` (the shared default backend; the newest
    ``REPORTS_KEPT``)."""
    return _default.reports
