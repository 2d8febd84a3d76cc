"""The one place that touches private Dynamo APIs (explain, graph-break logs, registry).

Everything else in `eqsat_torch.mend` calls these small adapters, so a torch upgrade (2.11-2.14)
means editing this file only. Each adapter degrades instead of failing: no GB code, no explain count.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

import torch

from eqsat_torch.inductor import compat

_GB_URL = re.compile(r"gb(\d{4})\.html")
_LOCATION = re.compile(r"Graph break in user code at (.+):(\d+)")
_FRAME = re.compile(r'^\s*File "(.+)", line (\d+), in (\S+)')


@dataclass
class RawBreak:
    """One graph break as Dynamo logged it: innermost location, registry code, user frames."""

    filename: str
    lineno: int
    gb_code: str | None
    gb_type: str
    text: str
    frames: list[tuple[str, int]] = field(default_factory=list)  # outermost first


@dataclass
class Capture:
    graphs: int
    breaks: list[RawBreak]


@functools.cache
def gb_registry() -> dict[str, str]:
    """GB code -> gb_type, from the registry JSON shipped with torch (empty if absent)."""
    path = Path(torch._dynamo.__file__).with_name("graph_break_registry.json")
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    return {code: entries[0].get("Gb_type", "") for code, entries in data.items() if entries}


def _graph_break_loggers() -> list[logging.Logger]:
    names = [n for n in logging.root.manager.loggerDict if n.endswith(".__graph_breaks")]
    return [logging.getLogger(n) for n in names]


def _parse_record(message: str) -> RawBreak | None:
    loc = _LOCATION.search(message)
    if not loc:
        return None
    code = _GB_URL.search(message)
    gb_code = f"GB{code.group(1)}" if code else None
    gb_type = gb_registry().get(gb_code, "") if gb_code else ""
    if not gb_type:
        reason = re.search(r"Graph Break Reason: (.*)", message)
        gb_type = reason.group(1).strip() if reason else ""
    tail = message.split("User code traceback:", 1)[-1]
    frames = [(m.group(1), int(m.group(2))) for m in map(_FRAME.match, tail.splitlines()) if m]
    return RawBreak(loc.group(1), int(loc.group(2)), gb_code, gb_type, message, frames)


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.breaks: list[RawBreak] = []

    def emit(self, record: logging.LogRecord) -> None:
        parsed = _parse_record(record.getMessage())
        if parsed is not None:
            self.breaks.append(parsed)


@contextlib.contextmanager
def _graph_break_log():
    """Collect Dynamo's graph-break records without printing them, whatever `TORCH_LOGS` says.

    The artifact loggers are set to DEBUG directly: `torch._logging.set_logs` is ignored when
    `TORCH_LOGS` is set (with any value), which left the mender blind, and resetting it afterwards
    would drop the user's own `set_logs` settings. Each logger's level, propagation and handlers
    are restored on exit."""
    handler = _Collect()
    loggers = _graph_break_loggers()
    saved = [(lg, lg.level, lg.propagate, lg.disabled) for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
        lg.propagate, lg.disabled = False, False
    try:
        yield handler
    finally:
        for lg, level, propagate, disabled in saved:
            lg.removeHandler(handler)
            lg.setLevel(level)
            lg.propagate, lg.disabled = propagate, disabled


def capture(fn, args=(), kwargs=None) -> tuple[Capture, object]:
    """Compile `fn` with a counting backend (no Inductor); return graphs, logged breaks, output."""
    kwargs = kwargs or {}
    graphs: list[torch.fx.GraphModule] = []

    def counting_backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    compat.reset_dynamo()
    with _graph_break_log() as log:
        out = torch.compile(fn, backend=counting_backend)(*args, **kwargs)
    compat.reset_dynamo()
    return Capture(len(graphs), log.breaks), out


def explain_break_count(fn, args=(), kwargs=None) -> int:
    """`torch._dynamo.explain`'s own count (graph_count - 1; -1 on a whole-frame fallback)."""
    compat.reset_dynamo()
    try:
        return torch._dynamo.explain(fn)(*args, **(kwargs or {})).graph_break_count
    finally:
        compat.reset_dynamo()


@contextlib.contextmanager
def cold_compile_caches():
    """Turn off the on-disk FX-graph/AOT caches, so a cold start really compiles."""
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    patches = [inductor_config.patch(fx_graph_cache=False)]
    if hasattr(functorch_config, "enable_autograd_cache"):
        patches.append(functorch_config.patch(enable_autograd_cache=False))
    with contextlib.ExitStack() as stack:
        for patch in patches:
            stack.enter_context(patch)
        yield


def mark_ordered_effect(op) -> None:
    """Register a custom op as an ORDERED effect, as `aten::_print` is: AOTAutograd then threads a token
    through the calls, so no pass reorders them. Skipped where this torch lacks the API (the op
    stays side-effecting through `has_side_effect`, which keeps it but does not order it)."""
    try:
        from torch._library.effects import EffectType
    except ImportError:
        return
    if hasattr(op, "register_effect"):
        op.register_effect(EffectType.ORDERED)


SCALAR_CAPTURE = "torch._dynamo.config.capture_scalar_outputs = capture_dynamic_output_shape_ops = True"


def scalar_capture():
    """Dynamo config that keeps `.item()`, int `.tolist()` and data-dependent shapes in the graph."""
    return torch._dynamo.config.patch(capture_scalar_outputs=True, capture_dynamic_output_shape_ops=True)


def assert_async(cond: torch.Tensor, message: str) -> None:
    """In-graph assertion that keeps the message (`torch._assert_async(t, msg)`)."""
    torch._assert_async(cond, message)
