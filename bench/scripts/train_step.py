"""One training step (forward + backward + SGD) of the bench models: kernels and step time per compiler.

    python -m bench.scripts.train_step --models dlrm dhen --size small --device cuda

prints, per model and mode, Inductor's generated kernels and extern calls in the forward graph and in
the backward graph, the median step time, and the largest gradient error against eager. Modes:
``inductor`` (alone), ``inductor_optimus`` (every Optimus pass on), ``eqsat`` (pre-grad and post-grad
passes), ``eqsat_pre`` (pre-grad pass only), ``eqsat_program`` (the optimizer's programs, Inductor not
deciding). Every compile is cold (caches off) so the counters see
codegen. Tests import ``run_step`` / ``compare_with_eager`` from here.
"""
from __future__ import annotations

import argparse
import copy
from dataclasses import dataclass, field
from typing import Callable

import torch

from bench import tables
from bench.measure import median_step_ms
from bench.models import REGISTRY
from eqsat_torch import eqsat_backend
from bench import inductor_metrics as im
from eqsat_torch.inductor import compat

MODES = ("inductor", "inductor_optimus", "eqsat", "eqsat_pre", "eqsat_program")


def backend_for(mode: str):
    """The ``torch.compile`` backend of a mode (Optimus is a config patch on plain Inductor);
    "eqsat_program": the optimizer's programs as they are, Inductor deciding nothing (``verify=False``)."""
    return {"inductor": lambda: "inductor", "inductor_optimus": lambda: "inductor",
            "eqsat": lambda: eqsat_backend(), "eqsat_pre": lambda: eqsat_backend(post_grad=False),
            "eqsat_program": lambda: eqsat_backend(verify=False)}[mode]()


def loss_of(out) -> torch.Tensor:
    """A scalar loss from any model output: the sum of squares of every float tensor in it."""
    leaves = out if isinstance(out, (tuple, list)) else (out,)
    return sum(t.float().square().sum() for t in leaves if isinstance(t, torch.Tensor) and t.is_floating_point())


def training_inputs(inputs: tuple) -> tuple:
    """Float inputs require grad too: models without parameters still get a backward graph."""
    return tuple(t.detach().clone().requires_grad_() if t.is_floating_point() else t for t in inputs)


def build(name: str, size="tiny", device="cpu") -> tuple[torch.nn.Module, tuple]:
    model, inputs = REGISTRY[name](size, device, torch.float32)
    return model.train(), inputs


@dataclass
class StepResult:
    loss: float
    grads: dict[str, torch.Tensor]
    kernels_fwd: dict[str, int] = field(default_factory=dict)
    kernels_bwd: dict[str, int] = field(default_factory=dict)
    step_ms: float = 0.0
    backend: object = None


def _grads(model: torch.nn.Module, inputs: tuple) -> dict[str, torch.Tensor]:
    named = {f"param:{k}": p.grad for k, p in model.named_parameters() if p.grad is not None}
    named.update({f"input:{i}": t.grad for i, t in enumerate(inputs) if isinstance(t, torch.Tensor) and t.grad is not None})
    return {k: v.detach().clone() for k, v in named.items()}


def run_step(model: torch.nn.Module, inputs: tuple, mode: str | None, repeats: int = 0) -> StepResult:
    """First step's loss and gradients (compiled with ``mode``, or eager when None), the kernels the
    forward and the backward graph launch (read from Inductor's wrapper code), and the median time of ``repeats``
    further steps (forward, backward, SGD)."""
    model = copy.deepcopy(model)
    inputs = training_inputs(inputs)
    backend = backend_for(mode) if mode else None
    fn: Callable = torch.compile(model, backend=backend) if mode else model
    with im.inductor_config_patch(mode or "inductor"):
        im.reset()
        with im.capture_output_code() as fwd_code:
            loss = loss_of(fn(*inputs))
        with im.capture_output_code() as bwd_code:
            loss.backward()
    result = StepResult(float(loss), _grads(model, inputs), im.launch_counts(fwd_code), im.launch_counts(bwd_code),
                        backend=backend)
    if repeats:
        device = next((t.device for t in inputs if isinstance(t, torch.Tensor)), "cpu")
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)

        def step():
            opt.zero_grad(set_to_none=True)
            loss_of(fn(*inputs)).backward()
            opt.step()

        result.step_ms = median_step_ms(step, device, repeats)
    return result


def max_grad_error(actual: StepResult, expected: StepResult) -> float:
    """Largest absolute gradient difference, scaled by the expected gradient's magnitude."""
    if actual.grads.keys() != expected.grads.keys():
        return float("inf")
    errs = [float((a - expected.grads[k]).abs().max() / (1 + expected.grads[k].abs().max()))
            for k, a in actual.grads.items()]
    return max(errs, default=0.0)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="+", default=["dlrm", "dhen", "wukong", "interformer", "recsys_tower"])
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    ap.add_argument("--size", default="small")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--threads", type=int, default=0, help="CPU intra-op threads (0: torch's default)")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    print("\n".join(tables.header(["model", "mode", "fwd kernels (gen+extern)", "bwd kernels (gen+extern)", "step ms",
                                    "loss", "max grad err"])))
    for name in args.models:
        model, inputs = build(name, args.size, args.device)
        eager = run_step(model, inputs, None)
        for mode in args.modes:
            compat.reset_dynamo()
            r = run_step(model, inputs, mode, args.repeats)
            k = lambda c: f"{c['total']} ({c['generated']}+{c['extern']})"
            print(tables.row([name, mode, k(r.kernels_fwd), k(r.kernels_bwd), f"{r.step_ms:.2f}", f"{r.loss:.5g}",
                              f"{max_grad_error(r, eager):.2e}"]), flush=True)


if __name__ == "__main__":
    main()
