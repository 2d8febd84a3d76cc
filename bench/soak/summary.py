"""Totals of a soak's records: cases, mismatches by kind, graphs kept by reason, cases per feature and
context."""
from __future__ import annotations

import collections


def _contexts(results: list[dict]) -> dict:
    """Cases per drawn context (issue 41): ambient autocast, autocast regions in the function (``+off``:
    with a nested ``enabled=False`` one), matmul precision, module training steps, and how often each
    met the other features (layouts, grad-mode regions, in-place writes)."""
    c = {"ambient_autocast": collections.Counter(), "autocast_region": collections.Counter(),
         "matmul_precision": collections.Counter(), "with_other_features": collections.Counter()}
    n = collections.Counter()
    for r in results:
        ctx, f = r.get("context") or {}, r.get("features") or {}
        drawn = []
        if ctx.get("autocast"):
            c["ambient_autocast"][ctx["autocast"]] += 1
            drawn.append("ambient_autocast")
        if f.get("autocast_region"):
            c["autocast_region"][f["autocast_region"]] += 1
            drawn.append("autocast_region")
        if f.get("autocast_off") or "+off" in (f.get("autocast_region") or ""):
            n["autocast_disabled_region"] += 1
        if ctx.get("matmul_precision"):
            c["matmul_precision"][ctx["matmul_precision"]] += 1
            drawn.append("matmul_precision")
        if ctx.get("module"):
            n["module_training_steps"] += 1
            n["module_steps_under_autocast"] += bool(ctx.get("autocast") or f.get("autocast_region"))
            drawn.append("module")
        if drawn:
            n["with_context"] += 1
            n["with_two_or_more_contexts"] += len(drawn) >= 2
        for other in ("layouts", "grad_region", "inplace"):
            if f.get(other):
                c["with_other_features"].update(f"{d}+{other}" for d in drawn)
    return {**{k: dict(sorted(v.items())) for k, v in c.items()}, **n}


def _features(results: list[dict]) -> dict:
    """Cases per drawn feature: input layouts, grad-mode regions, in-place writes (to inputs or views)."""
    c = {"layouts": collections.Counter(), "grad_regions": collections.Counter(), "inplace": collections.Counter()}
    n = collections.Counter()
    for r in results:
        f = r.get("features") or {}
        if f.get("layouts"):
            n["with_layouts"] += 1
            c["layouts"].update(set(f["layouts"]))
        if f.get("grad_region"):
            n["with_grad_region"] += 1
            c["grad_regions"][f["grad_region"]] += 1
        if f.get("inplace"):
            n["with_inplace"] += 1
            c["inplace"].update({w.split()[0] for w in f["inplace"]})
            n["writing_inputs"] += any("input" in w for w in f["inplace"])
    return {**{k: dict(sorted(v.items())) for k, v in c.items()}, **n}


def totals(results: list[dict]) -> dict:
    """The soak's numbers (what ``--summary`` writes): cases, mismatches by kind and each one's seed,
    graphs kept by reason, differences the compile without eqsat shows too, features drawn."""
    n_train = sum(r["train"] for r in results)
    return {
        "cases": len(results), "inference": len(results) - n_train, "training": n_train,
        "called_under_no_grad": sum(r.get("mode") == "no_grad" for r in results),
        "optimized": sum(1 for r in results if r["changed"]),
        "mismatches": sum(1 for r in results if r["problem"]),
        "mismatches_by_kind": dict(sorted(collections.Counter(r["problem"] for r in results if r["problem"]).items())),
        "mismatched": [{"seed": r["seed"], "train": r["train"], "problem": r["problem"], "detail": r.get("detail", "")}
                       for r in sorted(results, key=lambda r: r["seed"]) if r["problem"]],
        "kept_by_reason": dict(sorted(collections.Counter(f.split(":")[0] for r in results for f in r["fallbacks"]).items())),
        "internal_errors": [{"seed": r["seed"], "train": r["train"], "error": e[:300]}
                            for r in results for e in r.get("internal_errors", ())],
        "without_eqsat_too": sum(1 for r in results if r.get("without_eqsat_too")),
        "without_eqsat_too_by_kind": dict(sorted(collections.Counter(
            k for r in results for k in r.get("without_eqsat_too", ())).items())),
        "features": _features(results),
        "contexts": _contexts(results),
        "redrawn": sum(r.get("redrawn", 0) for r in results),
        "dense_for_non_dense": sum(r.get("dense_for_non_dense", 0) for r in results),
        "restrided": sum(r.get("restrided", 0) for r in results),
        "values_as_close_as_eager": sum(r.get("values_as_close_as_eager", 0) for r in results),
        "views_of_dense_outputs": sum(r.get("views_of_dense_outputs", 0) for r in results),
        "gradients_as_close_as_eager": sum(r.get("gradients_as_close_as_eager", 0) for r in results),
        "slowest_case_seconds": max((r.get("seconds", 0.0) for r in results), default=0.0),
        "cpu_seconds": round(sum(r.get("cpu_seconds", 0.0) for r in results), 1),  # in the workers' cases
        "cases_per_cpu_second": round(len(results) / max(sum(r.get("cpu_seconds", 0.0) for r in results), 1e-9), 3),
    }


def summarize(results: list[dict]) -> str:
    t = totals(results)
    f, c = t["features"], t["contexts"]

    def kinds(c):
        return ", ".join(f"{k} {v}" for k, v in c.items()) or "none"
    return (f"soak: {t['cases']} cases ({t['inference']} inference, {t['training']} training), "
            f"{t['optimized']} optimized, mismatches {t['mismatches']} ({kinds(t['mismatches_by_kind'])}), "
            f"graphs kept by reason: {kinds(t['kept_by_reason'])}; "
            f"{t['without_eqsat_too']} differences from eager that the same compile "
            f"without eqsat also shows ({kinds(t['without_eqsat_too_by_kind'])}); "
            f"features: input layouts in {f.get('with_layouts', 0)} cases ({kinds(f['layouts'])}), grad-mode regions "
            f"in {f.get('with_grad_region', 0)} ({kinds(f['grad_regions'])}), in-place writes in "
            f"{f.get('with_inplace', 0)} ({f.get('writing_inputs', 0)} to inputs or their views; {kinds(f['inplace'])}); "
            f"contexts in {c.get('with_context', 0)} cases ({c.get('with_two_or_more_contexts', 0)} with two or more): "
            f"ambient autocast {kinds(c['ambient_autocast'])}; autocast regions {kinds(c['autocast_region'])} "
            f"({c.get('autocast_disabled_region', 0)} with an enabled=False region); matmul precision "
            f"{kinds(c['matmul_precision'])}; {c.get('module_training_steps', 0)} module training steps "
            f"({c.get('module_steps_under_autocast', 0)} under autocast); with other features: "
            f"{kinds(c['with_other_features'])}; "
            f"{t['called_under_no_grad']} inference cases called under no_grad; "
            f"{t['redrawn']} programs eager rejects redrawn; {t['dense_for_non_dense']} outputs "
            f"dense where eager's layout is not (as aliasing.py allows) and {t['views_of_dense_outputs']} views of them, "
            f"{t['restrided']} "
            f"given the strides Inductor keeps after the post-grad pass, {t['values_as_close_as_eager']} "
            f"off eager's values but no farther from float64's than eager, {t['gradients_as_close_as_eager']} "
            f"gradients so")
