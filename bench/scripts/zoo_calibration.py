"""The GPU cost model against Inductor on the programs extraction chooses on the zoo (issue 29).

Extraction optimizes against the model, so it goes where the model is wrong: calibrating on input
graphs alone misses exactly those places. For each zoo model this takes its Dynamo graph (inference)
and, with ``--train``, the Aten forward and backward graphs of a training step as Inductor gets them;
prices the graph as written, lets eqsat optimize it with the GPU cost model (Inductor not deciding),
and counts both programs' launches with Inductor's own lowering and scheduler
(``eqsat_torch.inductor.probe``: the GPU at hand, or a fake H200 on a machine without one). Rows give
predicted vs counted launches for the input and the chosen program; the summary, the median and mean
|predicted − counted| over the chosen programs (the target: a median of at most 1 launch, H200).

    python -m bench.scripts.calibrate --zoo --device cuda [--only llama,t5] [--train] [--kernels] [--combo]

``--kernels`` lists each launch Inductor makes with the Aten ops it was made from. ``--combo``: the compile
uses Inductor's combo kernels, so the model prices them (``CostModel.combo_kernels``) and Inductor counts
them (issue 42's target: a median of at most 1 launch with combo kernels on).
"""
from __future__ import annotations

import copy
import dataclasses
import statistics
import time
from dataclasses import dataclass

import torch

from bench import tables
from bench.scripts import train_step
from bench.models import ZOO
from eqsat.cost import CostModel, launches
from eqsat.fusion import Kernel, list_elements, plan_groups
from eqsat.ops import CTOR_CATEGORY, Category, op_name_of_key
from eqsat.original import input_program
from eqsat.serialized import Choice, EGraphView
from bench import inductor_metrics
from eqsat_torch.inductor import probe, post_grad, compat
from eqsat_torch.pipeline import Options, optimize, price_input, view_of

SKIP_BY_DEFAULT = frozenset({"wide_recsys"})


@dataclass
class Row:
    name: str
    nodes: int
    predicted_input: int
    counted_input: int
    predicted_chosen: int
    counted_chosen: int
    changed: bool
    kernels_input: tuple[str, ...] = ()   # Inductor's launches, each with the ops it was made from
    kernels_chosen: tuple[str, ...] = ()
    modelled_input: tuple[str, ...] = ()  # the GPU model's kernel groups, in the same form
    modelled_chosen: tuple[str, ...] = ()

    @property
    def error(self) -> int:
        """|predicted − counted| of the program extraction chose (the input when it kept it)."""
        return abs(self.predicted_chosen - self.counted_chosen)


def measure(name: str, gm: torch.fx.GraphModule, inputs: list, dialect: str, options: Options,
            describe: bool = False, combo: bool = False, **optimize_args) -> Row:
    """One graph: eqsat's choice under ``options``, both programs counted by the probe; ``describe``:
    the model's kernel groups of both too (``modelled_launches``)."""
    device = "cuda"  # the GPU model's launches, on the GPU or a fake H200
    chosen, report = optimize(copy.deepcopy(gm), inputs, options, combo=combo, **optimize_args)

    def count(g):
        counted = probe.count_launches(g, inputs, device, dialect, combo=combo)
        return counted.combined if combo else counted

    counted_input = count(gm)
    counted_chosen = count(chosen) if report.changed else counted_input
    price = options.cost if not combo else dataclasses.replace(options.cost, combo_kernels=True)
    modelled = [modelled_launches(g, inputs, price) if describe else ()
                for g in (gm, chosen if report.changed else None) if g is not None]
    # a compile that fell back before pricing (its time budget, on a loaded machine) reports no
    # prediction: the input as written is priced here, never counted as 0 launches
    before = report.kernels_before or price_input(gm, inputs, price)[0].before.kernels
    return Row(name, len(gm.graph.nodes), before, counted_input.total,
               report.kernels_after if report.changed else before, counted_chosen.total,
               report.changed, counted_input.described, counted_chosen.described, *modelled)


def modelled_launches(gm: torch.fx.GraphModule, inputs: list, cost: CostModel) -> tuple[str, ...]:
    """The kernel groups ``cost`` plans for ``gm`` as written, in the probe's form (``T+E ops``:
    Triton kernels, extern calls, the ops each group computes, views and inlined producers included),
    so the model and Inductor can be diffed group by group. A graph eqsat chose is priced as written
    too: re-lowering it gives the program the report priced."""
    built, low = price_input(gm, inputs, cost)
    view = view_of(built.session, low)
    found = input_program(view, low.originals, low.roots)
    groups, _ = plan_groups(view, found.choice, found.roots, cost.frozen_params, cost.pointwise_cat_inputs,
                            cost.outer_loop_fusion, cost.split_sms)
    written = {k.writes for g in groups for k in g}
    out = []
    for g in groups:
        extern = g[0].kind == "extern"
        ops = sorted({op for k in g for op in _group_ops(view, found.choice, k, written, low.opaque)})
        out.append(f"{0 if extern else launches(g)}+{int(extern)} {' '.join(ops)}")
    return tuple(out)


def _group_ops(view: EGraphView, choice: Choice, kernel: Kernel, written: set, opaque: dict) -> set[str]:
    """The op names of what one kernel computes: its own node and the views and pointwise producers
    it inlines (up to a buffer another kernel writes, or a graph input); a cat slice copy is a cat, a
    kernel of a node planned as several (attention's math, a scatter's clone) is named by its part."""
    if kernel.copy_of is not None:
        return {"cat"}
    if kernel.writes not in choice:  # one of the kernels a node is planned as ("q:…", "softmax:…")
        return {kernel.writes.split(":", 1)[0]}
    ops, stack, seen = set(), [kernel.writes], set()
    while stack:
        cls = stack.pop()
        if cls in seen or cls not in choice:
            continue
        seen.add(cls)
        node = view.nodes[choice[cls]]
        if view.sort.get(cls) == "TList":
            stack.extend(list_elements(view, cls, choice))
            continue
        if CTOR_CATEGORY.get(node.ctor) == Category.SOURCE:
            continue
        ops.add(_op_label(node, opaque))
        stack.extend(c for c in node.children if c not in written)
    return ops


def _op_label(node, opaque: dict) -> str:
    """An e-node's op: an opaque op's Aten/Torch name, a keyed op's key, else its constructor."""
    first = node.args[0][1] if node.args and node.args[0][0] == "lit" else None
    if node.ctor == "Opaque" and first in opaque:
        return opaque[first].label.removeprefix("torch._ops.").removeprefix("aten.")
    return op_name_of_key(str(first)) if isinstance(first, str) and first else node.ctor.lower()


def _options() -> Options:
    """The GPU model wherever this runs (a CPU compile would get the CPU model), Inductor not
    deciding (its choice is what is measured here), the budget of a default compile."""
    return Options(cost=CostModel.for_device("cuda"), verify=False)


def inference_rows(name: str, device: str, describe: bool = False, combo: bool = False) -> list[Row]:
    model, inputs = ZOO[name]("small", device, torch.float32)
    rows: list[Row] = []
    opts = _options()

    def backend(gm, example_inputs):
        k = len(rows)
        rows.append(measure(f"{name}/infer{k or ''}", gm, list(example_inputs), "torch", opts, describe, combo))
        return gm.forward

    compat.reset_dynamo()
    with torch.no_grad():
        torch.compile(model.eval(), backend=backend)(*inputs)
    return rows


class _MeasuringPass(compat.CustomGraphPass):
    """A post-grad pass that changes nothing: measures each Aten graph Inductor is about to lower."""

    def __init__(self, name: str, options: Options, combo: bool = False):
        self.name, self.options, self.combo = name, options, combo
        self.rows: list[Row | Exception] = []

    def uuid(self):
        return None

    def __call__(self, graph: torch.fx.Graph) -> None:
        phase = "bwd" if any(n.op == "placeholder" and n.name.startswith("tangents") for n in graph.nodes) else "fwd"
        try:
            body, epilogue, inputs = post_grad.functional_body(graph)
            self.rows.append(measure(f"{self.name}/{phase}", body, inputs, "aten", self.options, combo=self.combo,
                                     user_outputs=compat.aot_user_outputs(graph),
                                     copied_back=len(epilogue)))
        except Exception as e:  # a graph that cannot be measured is a skipped row, never a failed compile
            self.rows.append(e)


def training_rows(name: str, device: str, combo: bool = False) -> list[Row | Exception]:
    model, inputs = ZOO[name]("small", device, torch.float32)
    measuring = _MeasuringPass(name, _options(), combo)
    compat.reset_dynamo()
    with inductor_metrics.inductor_config_patch("inductor", post_grad_pass=measuring):
        train_step.loss_of(torch.compile(model.train(), backend="inductor")(
            *train_step.training_inputs(inputs))).backward()
    return measuring.rows


def run(names: list[str] | None, device: str, train: bool, kernels: bool = False, combo: bool = False) -> list[Row]:
    rows: list[Row] = []
    for name in names or [n for n in ZOO if n not in SKIP_BY_DEFAULT]:
        t0 = time.perf_counter()
        try:
            got = training_rows(name, device, combo) if train else inference_rows(name, device, kernels, combo)
        except Exception as e:  # one model that does not build or compile here must not end the run
            print(f"  skip {name}: {type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}")
            continue
        for r in got:
            if isinstance(r, Exception):
                print(f"  skip a graph of {name}: {type(r).__name__}: {str(r).splitlines()[0][:160]}")
                continue
            rows.append(r)
            print(f"  {r.name:28s} nodes={r.nodes:4d} input {r.predicted_input:3d}/{r.counted_input:3d}"
                  f"  chosen {r.predicted_chosen:3d}/{r.counted_chosen:3d}{'' if r.changed else ' (the input)'}",
                  flush=True)
            if kernels:
                programs = [("input", r.kernels_input, r.modelled_input), ("chosen", r.kernels_chosen, r.modelled_chosen)]
                for label, counted, modelled in programs[:2 if r.changed else 1]:
                    print("\n".join(f"      {label} {k}" for k in counted))
                    print("\n".join(f"      model {label} {k}" for k in modelled))
        print(f"  {name}: {time.perf_counter() - t0:.1f} s", flush=True)
    return rows


def summary(rows: list[Row]) -> str:
    if not rows:
        return "no graphs measured"
    chosen = [r.error for r in rows]
    inputs = [abs(r.predicted_input - r.counted_input) for r in rows]
    changed = [r for r in rows if r.changed]
    worse = [r.name for r in changed if r.counted_chosen > r.counted_input]
    return (f"{len(rows)} graphs ({len(changed)} rewritten): |predicted - counted| launches of the chosen "
            f"program median {statistics.median(chosen):g}, mean {statistics.fmean(chosen):.2f}, "
            f"max {max(chosen)}; of the input median {statistics.median(inputs):g}, "
            f"mean {statistics.fmean(inputs):.2f}; rewritten programs Inductor counts more launches for "
            f"than the input: {len(worse)} {worse if worse else ''}".rstrip())


def table(rows: list[Row]) -> str:
    return "\n".join(tables.table(
        ("graph", "nodes", "input: predicted / counted", "chosen: predicted / counted"),
        [(r.name, r.nodes, f"{r.predicted_input} / {r.counted_input}",
          f"{r.predicted_chosen} / {r.counted_chosen}{'' if r.changed else ' (input)'}") for r in rows]))


def main(device: str, only: list[str] | None, train: bool, kernels: bool = False, combo: bool = False) -> None:
    if not probe.available("cuda"):
        raise SystemExit("Inductor's CUDA path cannot be probed here (no GPU and no fake H200 for this torch)")
    rows = run(only, device, train, kernels, combo)
    print()
    print(table(rows))
    print()
    print(summary(rows))

