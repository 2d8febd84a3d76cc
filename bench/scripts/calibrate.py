"""Calibrate the cost model against Inductor: predicted vs generated kernels, and fitted α / β.

For each graph of a corpus (random FX tangles built from the op table, plus ``bench.models`` when
importable) this lowers the graph to terms, prices the input program with ``CostModel.program_cost``,
compiles it with Inductor, and reads ``generated_kernel_count`` + extern calls. It prints one row per
graph, the Spearman rank correlation and mean absolute error of the kernel counts, and α (µs per
launch) / β (µs per byte) fitted by non-negative least squares to the measured latency.

``--train`` compares instead the Aten forward and backward graphs of one training step, priced as the
post-grad pass prices them and measured in Inductor's wrapper code of that graph, for the input
programs (``name/fwd``, ``name/bwd``) and the programs eqsat's pre- and post-grad passes choose
(``name/eqsat/fwd``, ``name/eqsat/bwd``), each with the predicted kernels by kind next to Inductor's.

    python -m bench.scripts.calibrate --device cpu --graphs 40
    python -m bench.scripts.calibrate --device cuda --graphs 60 --models
    python -m bench.scripts.calibrate --device cpu --train --models --graphs 0 --only wukong,dhen
    python -m bench.scripts.calibrate --zoo --device cuda [--train] [--only llama,t5]   # see bench.scripts.zoo_calibration
"""
from __future__ import annotations

import argparse
import copy
import itertools
import random
import re
import statistics
import time
import traceback
from collections import Counter
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from scipy.optimize import nnls
from scipy.stats import spearmanr

from bench import tables
from bench.scripts import train_step
from bench.measure import latency_ms
from eqsat.cost import CostModel, ProgramCost, launches
from eqsat.fusion import plan_groups
from eqsat.original import input_program
from eqsat_torch import eqsat_backend
from bench import inductor_metrics
from eqsat_torch.inductor import post_grad, compat
from eqsat_torch.lowering.lower import lower
from eqsat_torch.pipeline import Options, build, price_input, view_of

UNARY = [torch.relu, torch.sigmoid, torch.tanh, torch.exp, F.gelu]
BINARY = [torch.add, torch.mul, torch.sub]


# -- the random corpus ----------------------------------------------------------------------------
class _Builder:
    """Grows one FX graph of 2-D activations: every op picks operands of the shape it needs."""

    def __init__(self, rng: random.Random, rows: int, width: int):
        self.rng, self.rows = rng, rows
        self.graph = torch.fx.Graph()
        self.inputs: list[torch.Tensor] = []
        self.vals: list[tuple[torch.fx.Node, tuple]] = []
        self.used: set[torch.fx.Node] = set()
        self.vals.append((self.placeholder((rows, width)), (rows, width)))

    def placeholder(self, shape, param: bool = False) -> torch.fx.Node:
        t = torch.randn(*shape) * 0.1
        self.inputs.append(torch.nn.Parameter(t, requires_grad=False) if param else t)
        return self.graph.placeholder(f"{'w' if param else 'x'}{len(self.inputs)}")

    def pick(self, shape=None):
        pool = [v for v in self.vals if shape is None or v[1] == shape] or self.vals
        node, shp = self.rng.choice(pool[-6:])
        self.used.add(node)
        return node, shp

    def call(self, fn, args, shape, kwargs=None):
        node = self.graph.call_function(fn, tuple(args), kwargs or {})
        self.vals.append((node, shape))
        return node

    def step(self) -> None:
        rng, rows = self.rng, self.rows
        op = rng.choice(["unary", "unary", "binary", "binary", "linear", "split", "cat", "reduce",
                         "layer_norm", "softmax", "narrow"])
        x, (r, d) = self.pick()
        if op == "unary":
            self.call(rng.choice(UNARY), [x], (r, d))
        elif op == "binary":
            y, _ = self.pick((r, d))
            self.call(rng.choice(BINARY), [x, y if _ == (r, d) else x], (r, d))
        elif op == "linear":
            out = rng.choice([32, 64, 128, 256])
            w, b = self.placeholder((out, d), True), self.placeholder((out,), True)
            self.call(F.linear, [x, w, b], (r, out))
        elif op == "split" and d % 2 == 0 and d >= 16:
            n = rng.choice([2, 4]) if d % 4 == 0 else 2
            parts = self.graph.call_function(torch.split, (x, d // n, 1))
            for i in range(n):
                self.call(__import__("operator").getitem, [parts, i], (r, d // n))
        elif op == "cat":
            pieces = [x] + [self.pick()[0] for _ in range(rng.choice([1, 2]))]
            shapes = {n: s for n, s in self.vals}
            pieces = [p for p in pieces if shapes[p][0] == r]
            self.call(torch.cat, [pieces, 1], (r, sum(shapes[p][1] for p in pieces)))
        elif op == "reduce":
            s = self.call(torch.sum, [x, -1], (r, 1), {"keepdim": True})
            self.call(torch.sub, [x, s], (r, d))
        elif op == "layer_norm":
            w, b = self.placeholder((d,), True), self.placeholder((d,), True)
            self.call(F.layer_norm, [x, (d,), w, b], (r, d))
        elif op == "softmax":
            self.call(torch.softmax, [x, -1], (r, d))
        elif op == "narrow" and d > 8:
            self.call(torch.narrow, [x, 1, rng.randrange(d // 2), d // 2], (r, d // 2))

    def finish(self) -> tuple[torch.fx.GraphModule, list[torch.Tensor]]:
        nodes = [n for n, _ in self.vals]
        sinks = [n for n in nodes if n.op != "placeholder" and n not in self.used and not n.users]
        self.graph.output(tuple(sinks or nodes[-1:]))
        self.graph.eliminate_dead_code()
        return torch.fx.GraphModule(torch.nn.Module(), self.graph), self.inputs


def _why(e: Exception) -> str:
    return f"{type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"


def random_graph(seed: int):
    rng = random.Random(seed)
    b = _Builder(rng, rows=rng.choice([64, 256, 1024, 4096]), width=rng.choice([64, 128, 256]))
    for _ in range(rng.randint(3, 16)):
        b.step()
    return b.finish()


def model_builds(device: str, only: list[str] | None = None):
    """(name, module, inputs) of every ``bench.models`` entry that builds here at size small, or of
    those named in ``only``, in its order (the transformer blocks only when named: they need ``transformers``)."""
    try:
        from bench.models import NEEDS_TRANSFORMERS, REGISTRY
    except ImportError:
        return
    for name in only or [n for n in REGISTRY if n not in NEEDS_TRANSFORMERS]:
        try:
            model, inputs = REGISTRY[name]("small", device, torch.float32)
        except Exception as e:  # a model this machine cannot build is left out, and said so
            print(f"  skip {name}: {_why(e)}")
            continue
        yield name, model, inputs


def model_graphs(device: str, only: list[str] | None = None):
    """Dynamo graphs of the ``model_builds`` models (name, gm, inputs)."""
    for name, model, inputs in model_builds(device, only):
        captured = []

        def grab(gm, example_inputs):
            captured.append((gm, list(example_inputs)))
            return gm.forward

        compat.reset_dynamo()
        with torch.no_grad():
            torch.compile(model, backend=grab)(*inputs)
        for i, (gm, ins) in enumerate(captured):
            yield f"{name}/{i}", gm, ins


# -- one measurement --------------------------------------------------------------------------------
@dataclass
class Row:
    name: str
    terms: int
    predicted: int
    measured: int
    extern_pred: int
    extern_meas: int
    metric: int  # generated_kernel_count + extern_calls, for reference
    bytes: float
    ms: float
    measured_terms: int = -1  # rescored rows: the terms of the graph that was measured (-1: this one)


def predict(gm, inputs, model: CostModel):
    """The input program's cost, priced as the pipeline prices it before any rule runs."""
    lowered = lower(gm, inputs)
    return build(lowered, [], Options(), model).before, lowered.num_terms


def measure(gm, inputs, device: str) -> tuple[dict, dict, float]:
    """(launches read from the generated code, Inductor's own counters, latency in ms)."""
    compile_fx = compat.compile_fx()
    inputs = [t.detach().to(device) for t in inputs]
    inductor_metrics.reset()
    with torch.no_grad(), inductor_metrics.inductor_config_patch("inductor"):
        with inductor_metrics.capture_output_code() as code:
            compiled = compile_fx(gm, inputs)
            compiled(*inputs)
        counters = inductor_metrics.kernel_counts()
        ms = latency_ms(lambda: compiled(*inputs), device, min_seconds=0.2)
    return inductor_metrics.launch_counts(code), counters, ms


def calibrate(graphs, device: str, model: CostModel) -> list[Row]:
    rows = []
    for name, gm, inputs in graphs:
        try:
            cost, terms = predict(gm, inputs, model)
            counts, counters, ms = measure(gm, inputs, device)
        except Exception as e:  # one broken graph must not end the run: report and go on
            print(f"  skip {name}: {_why(e)}")
            if __debug__ and "-v" in __import__("sys").argv:
                traceback.print_exc()
            continue
        rows.append(_print_row(Row(name, terms, cost.kernels, counts["total"], cost.extern, counts["extern"],
                                   counters["total"], cost.bytes, ms)))
    return rows


def _print_row(r: Row) -> Row:
    print(f"  {r.name:24s} terms={r.terms:4d} predicted={r.predicted:3d} measured={r.measured:3d}"
          f" (extern {r.extern_pred}/{r.extern_meas})  {r.ms:.3f} ms")
    return r


# -- training steps: the Aten graphs Inductor compiles ------------------------------------------------
@dataclass
class Priced:
    cost: ProgramCost
    terms: int
    groups: Counter  # the kernels ``program_cost`` counts, by kind (pointwise, reduction, mm, ...)


class PricingPass(compat.CustomGraphPass):
    """A post-grad pass that changes nothing: prices each Aten graph just before Inductor lowers it
    (after eqsat's post-grad pass, which runs the user's pass last), as eqsat's pass prices its input."""

    def __init__(self, model: CostModel):
        self.model = model
        self.priced: list[Priced | Exception] = []

    def uuid(self):
        return None

    def __call__(self, graph: torch.fx.Graph) -> None:
        try:
            self.priced.append(price_aten(graph, self.model))
        except Exception as e:  # a graph we cannot price becomes a skipped row, never a failed compile
            self.priced.append(e)


def price_aten(graph: torch.fx.Graph, model: CostModel) -> Priced:
    body, _, inputs = post_grad.functional_body(graph)
    built, low = price_input(body, inputs, model)
    return Priced(built.before, low.num_terms, predicted_groups(built, low, model))


def predicted_groups(built, low, model: CostModel) -> Counter:
    """The kernel groups the cost model plans for the input program, counted by kind."""
    view = view_of(built.session, low)
    found = input_program(view, low.originals, low.roots)
    groups, _ = plan_groups(view, found.choice, found.roots, model.frozen_params,
                            model.pointwise_cat_inputs, model.outer_loop_fusion, model.split_sms)
    return Counter(kind for g in groups for kind in _group_kinds(view, found.choice, g, low))


def _group_kinds(view, choice, group, low) -> list[str]:
    """The launches of one kernel group by kind: a split reduction is two."""
    return [_group_kind(view, choice, group, low)] * launches(group)


def _group_kind(view, choice, group, low) -> str:
    if group[0].kind == "extern":
        node = view.nodes[choice[group[0].writes]]
        if node.ctor == "Opaque":
            return f"opaque {low.opaque[node.args[0][1]].label.removeprefix('torch._ops.')}"
        return node.ctor.lower()
    if all(k.copy_of is not None for k in group):
        return "cat copy"
    return "reduction" if any(k.kind == "reduction" for k in group) else "pointwise"


# backend per row prefix, given the cost model: the input programs (Inductor alone), and the programs
# eqsat chooses with that model (on a GPU the default; ``--rescore`` forces the GPU model on CPU)
TRAIN_BACKENDS = {"": lambda cost: "inductor", "eqsat/": lambda cost: eqsat_backend(cost=cost)}


def train_step_graphs(model, inputs, backend, cost: CostModel) -> dict[str, tuple[list, list[str]]]:
    """Per phase (fwd, bwd): the priced Aten graphs and Inductor's wrapper code of each, in compile order."""
    pricing = PricingPass(cost)
    compat.reset_dynamo()
    with inductor_metrics.inductor_config_patch("inductor", post_grad_pass=pricing):
        with inductor_metrics.capture_output_code() as fwd_code:
            loss = train_step.loss_of(torch.compile(model, backend=backend)(*inputs))
        n_fwd = len(pricing.priced)
        with inductor_metrics.capture_output_code() as bwd_code:
            loss.backward()
    return {"fwd": (pricing.priced[:n_fwd], fwd_code), "bwd": (pricing.priced[n_fwd:], bwd_code)}


def calibrate_train(models, device: str, cost: CostModel) -> list[Row]:
    """Rows ``name/fwd``, ``name/bwd`` (and ``name/eqsat/...``) for one training step of each model;
    latency is not measured per graph (ms is NaN: those rows stay out of the α/β fit)."""
    rows = []
    for name, p, code in train_graphs(models, device, cost):
        counts = inductor_metrics.launch_counts([code])
        rows.append(_print_row(Row(name, p.terms, p.cost.kernels, counts["total"], p.cost.extern,
                                   counts["extern"], -1, p.cost.bytes, float("nan"))))
        print(f"      predicted: {_kinds(p.groups)}\n      inductor:  {_kinds(Counter(inductor_metrics.launch_names(code)))}")
    return rows


def train_graphs(models, device: str, cost: CostModel):
    """(row name, Priced, Inductor's wrapper code) of every Aten graph of one training step of each
    model, per ``TRAIN_BACKENDS`` prefix; a graph or model that fails is reported and left out."""
    for name, model, inputs in models:
        t0 = time.perf_counter()
        inputs = tuple(t.to(device) if isinstance(t, torch.Tensor) else t for t in inputs)
        for prefix, backend in TRAIN_BACKENDS.items():
            try:
                phases = train_step_graphs(copy.deepcopy(model).to(device).train(),
                                           train_step.training_inputs(inputs), backend(cost), cost)
            except Exception as e:  # one broken model must not end the run
                print(f"  skip {name}/{prefix}: {_why(e)}")
                continue
            for phase, (priced, codes) in phases.items():
                yield from _phase_graphs(f"{name}/{prefix}{phase}", priced, codes)
        print(f"  {name}: {time.perf_counter() - t0:.1f} s")


def _phase_graphs(label: str, priced: list, codes: list[str]):
    if len(priced) != len(codes):
        print(f"  skip {label}: {len(priced)} graphs priced, {len(codes)} compiled")
        return
    for i, (p, code) in enumerate(zip(priced, codes)):
        name = f"{label}{i if len(codes) > 1 else ''}"
        if isinstance(p, Exception):
            print(f"  skip {name}: {_why(p)}")
            continue
        yield name, p, code


def _kinds(counts: Counter) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def fit_alpha_beta(rows: list[Row]) -> tuple[float, float, float]:
    """α µs/launch, β µs/byte and a per-call constant, by non-negative least squares on latency."""
    rows = [r for r in rows if np.isfinite(r.ms)]
    a = np.array([[r.measured, r.bytes, 1.0] for r in rows])
    t = np.array([r.ms * 1e3 for r in rows])
    (alpha, beta, const), _ = nnls(a, t)
    return alpha, beta, const


def summary(label: str, rows: list[Row]) -> None:
    pred, meas = [r.predicted for r in rows], [r.measured for r in rows]
    rho = spearmanr(pred, meas).statistic if len(rows) > 2 else float("nan")
    mae = statistics.fmean(abs(p - m) for p, m in zip(pred, meas)) if rows else float("nan")
    exact = sum(p == m for p, m in zip(pred, meas))
    print(f"{label}graphs={len(rows)}  Spearman={rho:.3f}  MAE={mae:.2f} kernels  exact={exact}/{len(rows)}")


# training-step rows by program and phase: the input programs (Inductor alone), eqsat's programs
PHASES = {f"{label}{phase}": re.compile(rf"^[^/]+/{prefix}{phase}\d*$")
          for prefix, label in (("", ""), ("eqsat/", "eqsat ")) for phase in ("fwd", "bwd")}


def _summaries_by_phase(rows: list[Row], indent: str = "") -> None:
    for label, pattern in PHASES.items():
        if any(pattern.search(r.name) for r in rows):
            summary(f"{indent}{label}: ", [r for r in rows if pattern.search(r.name)])


def report(rows: list[Row]) -> None:
    print("\n" + "\n".join(tables.table(
        ("graph", "terms", "predicted launches", "measured launches", "extern pred/meas",
         "generated_kernel_count+extern", "MB moved", "ms"),
        [(r.name, r.terms, r.predicted, r.measured, f"{r.extern_pred}/{r.extern_meas}",
          r.metric if r.metric >= 0 else "–", f"{r.bytes / 1e6:.2f}", "–" if np.isnan(r.ms) else f"{r.ms:.3f}")
         for r in rows])))
    print()
    summary("", rows)
    _summaries_by_phase(rows)
    same = [r for r in rows if r.measured_terms in (-1, r.terms)]
    if len(same) < len(rows):
        print(f"same program as measured (term counts agree), {len(same)} of {len(rows)} graphs:")
        _summaries_by_phase(same, "  ")
    if sum(np.isfinite(r.ms) for r in rows) >= 3:
        alpha, beta, const = fit_alpha_beta(rows)
        print(f"fitted on latency: alpha={alpha:.2f} us/launch  beta={beta:.3e} us/byte"
              f"  (+{const:.1f} us per call)")


MEASURED = re.compile(r"^\s+(\S+)\s+terms=\s*(\d+) predicted=\s*\d+ measured=\s*(\d+) \(extern \d+/(\d+)\)"
                      r"\s+([\d.]+|nan) ms")
TRAIN_ROW = re.compile(r"^[^/]+/(eqsat/)?(fwd|bwd)\d*$")  # a ``--train`` row: model/[eqsat/]phase[graph]


def rescore(path: str, device: str, model: CostModel) -> list[Row]:
    """Today's predictions against the launches a committed run measured (its printed rows), so a
    cost-model change is checked against a device this machine does not have. ``--train`` rows are
    traced again here (``rescore_train``)."""
    measured = {m[1]: m for m in map(MEASURED.match, open(path).read().splitlines()) if m}
    if measured and all(TRAIN_ROW.match(name) for name in measured):
        return rescore_train(measured, model)
    seeds = [int(name.split("/")[1]) for name in measured if name.startswith("random/")]
    corpus = [(f"random/{s}", *random_graph(s)) for s in seeds]
    if len(seeds) < len(measured):
        corpus += list(model_graphs("cpu"))
    rows = []
    for name, gm, inputs in corpus:
        if name in measured:
            cost, terms = predict(gm, inputs, model)
            _, _, launches, extern, ms = measured[name].groups()
            rows.append(Row(name, terms, cost.kernels, int(launches), cost.extern, int(extern), -1, cost.bytes,
                            float(ms)))
    return rows


def rescore_train(measured: dict, model: CostModel) -> list[Row]:
    """The training-step rows again: the same models at size small, traced on this machine (CPU),
    their Aten graphs priced with ``model`` and the eqsat rows optimized with it, paired with the
    measured launches by row name. A graph whose term count differs from the measured row's is
    another program, marked ``*`` and summarised apart: eqsat chose differently (another model, or
    its time budget ran out elsewhere), or CPU tracing differs from CUDA's (GPU Inductor's post-grad
    passes unfuse an ``addmm`` whose bias a pointwise consumer can take into ``mm`` + add; CPU SDPA
    is ``_scaled_dot_product_flash_attention_for_cpu``, one extern call like CUDA's efficient
    attention, or the math decomposition where CUDA has a fused kernel)."""
    models = list(dict.fromkeys(name.split("/")[0] for name in measured))
    rows = []
    for name, p, _ in train_graphs(model_builds("cpu", models), "cpu", model):
        if name not in measured:
            continue
        _, terms, launches, extern, _ = measured[name].groups()
        row = _print_row(Row(name, p.terms, p.cost.kernels, int(launches), p.cost.extern, int(extern), -1,
                             p.cost.bytes, float("nan"), int(terms)))
        if row.measured_terms != row.terms:
            print(f"    * another program: {row.terms} terms here, {row.measured_terms} measured")
        rows.append(row)
        print(f"      predicted: {_kinds(p.groups)}")
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--graphs", type=int, default=30, help="random graphs in the corpus")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--models", action="store_true", help="add bench.models graphs to the corpus")
    ap.add_argument("--only", help="comma-separated bench.models names (transformer blocks included when named)")
    ap.add_argument("--train", action="store_true", help="the Aten forward and backward graphs of a training "
                    "step instead of Dynamo graphs, as Inductor gets them and as eqsat optimizes them")
    ap.add_argument("-v", action="store_true", help="tracebacks for skipped graphs")
    ap.add_argument("--rescore", metavar="CALIBRATE_TXT", help="predict again for a committed run's graphs "
                    "(random graphs by seed, models at size small) instead of compiling")
    ap.add_argument("--zoo", action="store_true", help="the zoo's graphs and the programs eqsat chooses for "
                    "them, counted by Inductor's lowering and scheduler (bench.scripts.zoo_calibration)")
    ap.add_argument("--kernels", action="store_true", help="with --zoo: each launch and the ops it was made from")
    ap.add_argument("--combo", action="store_true", help="with --zoo: Inductor's combo kernels on, priced and counted")
    args = ap.parse_args(argv)
    only = args.only.split(",") if args.only else None
    if args.zoo:
        from bench.scripts import zoo_calibration

        return zoo_calibration.main(args.device, only, args.train, args.kernels, args.combo)
    model = CostModel.for_device(args.device)
    if args.rescore:
        return report(rescore(args.rescore, args.device, model))
    corpus = [(f"random/{s}", *random_graph(s)) for s in range(args.seed, args.seed + args.graphs)]
    if args.train:
        models = model_builds(args.device, only) if args.models else ()
        rows = calibrate_train(itertools.chain(corpus, models), args.device, model)
    else:
        rows = calibrate(corpus, args.device, model)
        if args.models:
            rows += calibrate(model_graphs(args.device, only), args.device, model)
    report(rows)


if __name__ == "__main__":
    main()
