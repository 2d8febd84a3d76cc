"""One case end to end: compile, run, compare with eager and with the compile without eqsat; the
record it returns (and the reproducer of a seed)."""
from __future__ import annotations

import collections
import json
import traceback

import torch

from bench.soak.backends import _Inductor, _RESTRIDED, _backend, _plain_backend
from bench.soak.cases import Case, _copies, _program, _run, make_case
from bench.soak.compare import compare
from bench.soak.global_state import _heal_dispatch_tls, _restore_modes
from eqsat_torch.inductor import compat


def run_case(seed: int, train: bool, backend=None, device: str = "cpu", inductor: bool = False,
             contexts: bool = True) -> dict:
    """Case ``seed`` (a training case if ``train``) through the backend, checked against eager."""
    return check(make_case(seed, train, device=device, contexts=contexts), backend, device, inductor)


def check(case: Case, backend=None, device: str = "cpu", inductor: bool = False) -> dict:
    """``case`` compiled (by ``backend``; None: eqsat, see the module's docstring) and run, against
    eager. ``case.gm`` may be any function of the inputs, a hand-written program too."""
    reports: list = []
    stats: collections.Counter = collections.Counter()
    _RESTRIDED.clear()
    ours = backend is None
    if backend is None:
        backend = _Inductor(device) if inductor else _backend(reports)
    plain = None
    if ours and case.tight:  # the compile without eqsat's own errors set the tolerances
        plain = check(case, _plain_backend(inductor), device, inductor)
    compat.reset_dynamo()
    fa, fb = _program(case, device), _program(case, device)
    compiled = torch.compile(lambda *xs: fa(*xs), backend=backend, fullgraph=False)
    result = {"seed": case.seed, "train": case.mode == "train", "mode": case.mode, "problem": None,
              "features": case.features, "redrawn": case.redrawn, "context": case.context}
    a, b = _copies(case, device), _copies(case, device)
    params = (list(fa.named_parameters()), list(fb.named_parameters())) if case.module else ((), ())
    problems: list[tuple[str, str]] = []
    errors: dict = {}
    try:
        want = _run(case, fb, b)
        got = _run(case, compiled, a)
        problems = compare(case, got, want, a, b, device, stats, params,
                           plain.get("grad_errors", {}) if plain is not None else None, errors)
    except Exception as e:  # noqa: BLE001 — a crash of the compiled function is a finding too
        tb = traceback.format_exc()
        problems = [("crash", f"{type(e).__name__}: {' '.join(str(e).split())[:200]}")]
        result["traceback"] = tb[-2000:]
    finally:
        _restore_modes()
        healed = _heal_dispatch_tls()
    if healed:
        result["dispatch_state_restored"] = healed
    if isinstance(backend, _Inductor):
        reports = backend.reports()
    stats.update(_RESTRIDED)
    _RESTRIDED.clear()
    if errors:
        result["grad_errors"] = errors
    if problems and ours:  # the same difference without eqsat is not ours
        plain = plain if plain is not None else check(case, _plain_backend(inductor), device, inductor)
        theirs = {k for k, _ in plain["problems"]}
        result["without_eqsat_too"] = sorted({k for k, _ in problems if k in theirs})
        problems = [(k, d) for k, d in problems if k not in theirs]
    result["problems"] = problems
    result.update(stats)  # restrided, dense_for_non_dense, values_as_close_as_eager: see totals
    if problems:
        result["problem"], result["detail"] = problems[0]
    result["fallbacks"] = [r.fallback + (": " + r.skipped.split(":")[0] if r.fallback else "") for r in reports
                           if r.fallback]
    result["changed"] = sum(bool(r.changed) for r in reports)
    internal = [" ".join(r.skipped.split())[:300] for r in reports if r.fallback == "internal error"]
    if internal:
        result["internal_errors"] = internal
    return result


def reproducer(seed: int, train: bool, device: str = "cpu", contexts: bool = True) -> str:
    """The program of case ``seed``, its inputs' layouts and its context, to paste into an issue."""
    case = make_case(seed, train, device=device, contexts=contexts)
    layouts = [f"{tuple(x.shape)} stride {x.stride()} offset {x.storage_offset()} {x.dtype}" for x in case.inputs]
    code = (f"{case.gm!r}\n# {case.features['module']}" if case.module else case.gm.code).strip()
    return (f"# seed {seed} ({case.mode}; python -m bench.scripts.soak --case {seed}{' --train' if train else ''})\n"
            f"# context: {json.dumps(case.context)}\n"
            f"# inputs: {'; '.join(layouts)}\n{code}\n")
