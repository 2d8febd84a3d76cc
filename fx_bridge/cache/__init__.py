"""A persistent cache of optimized graphs, so a second process compiling the same model skips
saturation and extraction (Inductor's own caches then find the graph they compiled before).

``optimized(stage, gm, inputs, options, facts, run)`` returns what ``run()`` would: from the cache
when an entry for this key (``key.graph_key``) exists and rebuilds, else by running it and storing
the result. Only completed optimizations are stored (a changed graph, or "nothing cheaper"), never a
fallback. An entry is JSON data (``serialize``): reading one runs nothing it names. The report's
``cache`` says ``hit``, ``miss`` or ``off`` (``Options.cache=False``, ``EQSAT_CACHE=0``, Inductor's
``force_disable_caches``, a cache folder refused by ``store.usable``, or a graph without a
fingerprint). The trust model, location, size limit and eviction: ``docs/reference.md`` (The cache).
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from typing import Any, Callable, Mapping, Sequence

import torch

from eqsat.budget import price
from eqsat.deadline import Allowance
from eqsat_torch.inductor import compat
from eqsat_torch.options import Options
from eqsat_torch.report import Report
from eqsat_torch.cache import store
from eqsat_torch.cache.key import Uncacheable, graph_key
from eqsat_torch.cache.serialize import FORMAT, Untrusted, Vocabulary, dump_graph, load_graph
from eqsat_torch.cache.store import clear

__all__ = ["clear", "enabled", "optimized"]
log = logging.getLogger("eqsat")

Result = tuple[torch.fx.GraphModule, Report]


def enabled(opts: Options) -> bool:
    return opts.cache and os.environ.get("EQSAT_CACHE", "1") != "0" and not compat.inductor_caches_disabled()


def optimized(stage: str, gm: torch.fx.GraphModule, example_inputs: Sequence[Any], opts: Options,
              device: str, facts: Mapping[str, Any], run: Callable[[], Result],
              allowance: Allowance | None = None) -> Result:
    """``run()``'s result for optimizing ``gm`` in ``stage`` (``pre_grad``: Dynamo's graph, Torch-IR;
    ``post_grad``: an Aten graph), through the cache. Hashing the graph for its key cannot stop: it
    is priced (``eqsat.budget``) and the cache left out where ``allowance`` cannot pay for it."""
    if not enabled(opts):
        return _with(run(), "off")
    n = len(gm.graph.nodes)
    why = allowance.short_of(price("key", n)) if allowance is not None else None
    if why is not None:
        result = _with(run(), "off")
        result[1].notes.append(f"not cached: the key of {n} nodes is {why}")
        return result
    if not store.usable():
        result = _with(run(), "off")
        result[1].notes.append(f"not cached: the cache folder {store.folder()} is refused (see the log)")
        return result
    t0 = time.perf_counter()
    try:
        key = graph_key(stage, gm, example_inputs, opts, device, facts)
        vocabulary = Vocabulary(gm)  # before run() may rewrite gm
        payload = store.load(key)
    except Exception as e:  # no fingerprint, or a bug of ours: optimize without the cache, never fail
        if not isinstance(e, Uncacheable):
            log.warning("eqsat cache: no key (%s: %s); optimizing without the cache", type(e).__name__, e)
        result = _with(run(), "off")
        result[1].notes.append(f"not cached: {e}")
        return result
    if payload is not None:
        try:
            return _hit(payload, gm, vocabulary, example_inputs, "aten" if stage == "post_grad" else "torch", t0)
        except Untrusted as e:  # not data we write, or a name outside the vocabulary: planted or stale
            log.debug("eqsat cache: entry %s is not used (%s); recomputing", store.path_of(key), e)
        except Exception as e:  # an entry we cannot rebuild is never trusted
            log.warning("eqsat cache: entry %s does not rebuild (%s: %s); recomputing",
                        store.path_of(key), type(e).__name__, e)
    new_gm, report = _with(run(), "miss")
    if not report.fallback and not report.skipped:
        try:
            graph = dump_graph(new_gm, vocabulary) if new_gm is not gm else None
            entry = {"format": FORMAT, "graph": graph, "report": dataclasses.asdict(report)}
            store.save(key, json.dumps(entry, separators=(",", ":")).encode())
        except Exception as e:  # Uncacheable, or a report field that is not JSON data: not stored
            report.notes.append(f"not cached: {type(e).__name__}: {e}")
    return new_gm, report


def _hit(payload: bytes, gm: torch.fx.GraphModule, vocabulary: Vocabulary, example_inputs: Sequence[Any],
         dialect: str, t0: float) -> Result:
    try:
        entry = json.loads(payload)
    except (ValueError, RecursionError) as e:
        raise Untrusted(f"not JSON: {e}") from e
    if not isinstance(entry, dict) or entry.get("format") != FORMAT or not isinstance(entry.get("report"), dict):
        raise Untrusted("not an entry of this format")
    report = Report(**entry["report"])
    new_gm = gm if entry.get("graph") is None else load_graph(entry["graph"], gm, vocabulary, example_inputs, dialect)
    if new_gm is not gm:
        compat.keep_dynamo_identity(gm, new_gm)
    cold = report.optimizer_seconds
    report.phase_seconds = {"cache": time.perf_counter() - t0}
    report.cache = "hit"
    report.notes.append(f"cache hit: the optimizer's {cold:.3g} s skipped")
    return new_gm, report


def _with(result: Result, cache: str) -> Result:
    result[1].cache = cache
    return result
