"""Soak: thousands of random graphs through the backend, inference and training, against eager.

    python -m bench.soak --cases 10000 --workers 14

Each case is a random Torch-IR graph (``bench.graphgen``) whose outputs may be inputs, views of
inputs and repeated values. It is compiled by Dynamo with the eqsat pre-grad pass and, for training,
AOTAutograd's forward and backward graphs through the post-grad pass (both run eagerly after that:
Inductor's codegen is not what is soaked). Checked against eager: output values, gradients of every
float input, and aliasing (which outputs share storage with which inputs and each other, and which
*are* them). The summary counts cases, mismatches by kind, and graphs kept as they were by reason.
"""
from __future__ import annotations

import argparse
import collections
import json
import logging
import multiprocessing
import random
import sys
import time
import traceback

import torch
from functorch.compile import make_boxed_func

from bench.graphgen import random_graph
from fx_bridge import torch_compat
from fx_bridge.backend import optimize_or_keep
from fx_bridge.options import Options
from fx_bridge.post_grad import EqsatPostGradPass


def _with_aliasing_outputs(gm: torch.fx.GraphModule, rng: random.Random) -> torch.fx.GraphModule:
    """Add outputs that alias: an input itself, a view of one, a repeated output."""
    g = gm.graph
    out = next(n for n in g.nodes if n.op == "output")
    outs = list(out.args[0])
    inputs = [n for n in g.nodes if n.op == "placeholder"]
    with g.inserting_before(out):
        if rng.random() < 0.3:
            outs.append(rng.choice(inputs))
        if rng.random() < 0.3:
            x = rng.choice(inputs)
            outs.append(rng.choice([lambda: g.call_method("transpose", (x, 0, -1)),
                                    lambda: g.call_method("detach", (x,)),
                                    lambda: g.call_method("flatten", (x,))])())
        if rng.random() < 0.3:
            outs.append(rng.choice(outs))
    out.args = (tuple(outs),)
    gm.recompile()
    return gm


def _signature(inputs, outputs) -> list:
    def ptr(t):
        return t.untyped_storage().data_ptr() if isinstance(t, torch.Tensor) else None
    return [(tuple(j for j, x in enumerate(inputs) if ptr(x) == ptr(o)),
             tuple(j for j, p in enumerate(outputs[:i]) if ptr(p) == ptr(o)),
             tuple(j for j, x in enumerate(inputs) if x is o),
             tuple(j for j, p in enumerate(outputs[:i]) if p is o)) for i, o in enumerate(outputs)]


def _backend(reports: list, train: bool):
    opts = Options(inner="eager", post_grad=False)
    post = EqsatPostGradPass(Options(), reports=reports)

    def post_compiler(gm, example_inputs):
        post(gm.graph)
        gm.recompile()
        return make_boxed_func(gm.forward)

    aot = torch_compat.aot_backend(post_compiler)

    def backend(gm, example_inputs):
        new_gm, report = optimize_or_keep(gm, example_inputs, opts)
        reports.append(report)
        return aot(new_gm, example_inputs) if train else new_gm.forward

    return backend


def _grad_atol(g: torch.Tensor) -> float:
    """A gradient is a sum over every use of its input; rewrites may sum in another order, which
    in half precision moves the result by a few ulps of the largest partial sum."""
    return max(1e-2, 4 * torch.finfo(g.dtype).eps * g.float().abs().max().item())


def _plain_backend(train: bool):
    """The same compile path without eqsat: low-precision gradients through AOTAutograd's
    decompositions differ from eager's on their own; those differences are not ours."""
    boxed = torch_compat.aot_backend(lambda gm, ex: make_boxed_func(gm.forward))
    return boxed if train else (lambda gm, ex: gm.forward)


def _case(seed: int, train: bool):
    rng = random.Random(seed)
    dtype = rng.choice((torch.float32, torch.float16, torch.bfloat16)) if train else None
    gm, inputs = random_graph(rng, n_ops=rng.randint(2, 12), dtype=dtype)
    return _with_aliasing_outputs(gm, rng), inputs


def run_case(seed: int, train: bool, backend=None) -> dict:
    gm, inputs = _case(seed, train)
    torch.manual_seed(seed)  # the loss weights below
    reports: list = []
    torch_compat.reset_dynamo()
    compiled = torch.compile(lambda *xs: gm(*xs), backend=backend or _backend(reports, train), fullgraph=False)
    result = {"seed": seed, "train": train, "problem": None}
    try:
        if train:
            a = [x.clone().requires_grad_() for x in inputs]
            b = [x.clone().requires_grad_() for x in inputs]
            got, want = compiled(*a), gm(*b)
        else:
            a, b = [x.clone() for x in inputs], [x.clone() for x in inputs]
            got, want = compiled(*a), gm(*b)
        if _signature(a, list(got)) != _signature(b, list(want)):
            result["problem"] = "aliasing"
        torch.testing.assert_close(got, want, equal_nan=True)
        if train:
            w = [torch.randn(t.shape, dtype=t.dtype) for t in want]
            loss_a = sum((g.float() * wi.float()).sum() for g, wi in zip(got, w) if g.requires_grad)
            loss_b = sum((g.float() * wi.float()).sum() for g, wi in zip(want, w) if g.requires_grad)
            if isinstance(loss_b, torch.Tensor):
                loss_a.backward()
                loss_b.backward()
                for x, y in zip(a, b):
                    if (x.grad is None) != (y.grad is None):
                        result["problem"] = "gradients"
                    elif x.grad is not None:
                        torch.testing.assert_close(x.grad, y.grad, equal_nan=True, rtol=1e-2,
                                                   atol=_grad_atol(y.grad))
    except AssertionError as e:
        result["problem"] = result["problem"] or ("gradients" if "grad" in traceback.format_exc() else "values")
        result["detail"] = str(e).splitlines()[0][:200]
    except Exception as e:  # noqa: BLE001 — a crash of the compiled function is a finding too
        result["problem"] = "crash"
        result["detail"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    if result["problem"] in ("values", "gradients") and backend is None:
        plain = run_case(seed, train, _plain_backend(train))
        if plain["problem"] == result["problem"]:  # the same without eqsat: not ours
            result["precision_without_eqsat_too"], result["problem"] = result["problem"], None
    result["fallbacks"] = [r.fallback + (": " + r.skipped.split(":")[0] if r.fallback else "") for r in reports
                           if r.fallback]
    result["changed"] = sum(bool(r.changed) for r in reports)
    return result


def _worker(args):
    seed, train = args
    torch.set_num_threads(1)
    logging.getLogger("eqsat").setLevel(logging.ERROR)   # fallbacks are counted, not printed
    logging.getLogger("torch").setLevel(logging.CRITICAL)
    return run_case(seed, train)


def summarize(results: list[dict]) -> str:
    problems = collections.Counter(r["problem"] for r in results if r["problem"])
    fallbacks = collections.Counter(f.split(":")[0] for r in results for f in r["fallbacks"])
    n_train = sum(r["train"] for r in results)
    noise = sum(1 for r in results if r.get("precision_without_eqsat_too"))
    changed = sum(1 for r in results if r["changed"])
    return (f"soak: {len(results)} cases ({len(results) - n_train} inference, {n_train} training), "
            f"{changed} optimized, mismatches {sum(problems.values())} "
            f"({', '.join(f'{k} {v}' for k, v in sorted(problems.items())) or 'none'}), "
            f"graphs kept by reason: {', '.join(f'{k} {v}' for k, v in sorted(fallbacks.items())) or 'none'}; "
            f"{noise} low-precision differences from eager that the same compile without eqsat also shows")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=10_000, help="total cases, half inference, half training")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=max(1, multiprocessing.cpu_count() - 1))
    ap.add_argument("--out", default=None, help="write every case as JSON lines here")
    args = ap.parse_args(argv)
    jobs = [(args.seed + i, i % 2 == 1) for i in range(args.cases)]
    t0 = time.perf_counter()
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(args.workers, maxtasksperchild=200) as pool:
        results = list(pool.imap_unordered(_worker, jobs, chunksize=8))
    line = summarize(results) + f"; {time.perf_counter() - t0:.0f} s on {args.workers} workers"
    if args.out:
        with open(args.out, "w") as f:
            for r in sorted(results, key=lambda r: r["seed"]):
                f.write(json.dumps(r) + "\n")
    for r in results:
        if r["problem"]:
            print(f"  seed {r['seed']} {'train' if r['train'] else 'infer'}: {r['problem']} {r.get('detail', '')}")
    print(line)
    return 1 if any(r["problem"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
