"""Drawing a soak case (a random program, its inputs' layouts, the context it runs in) and running
it eagerly under that context."""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import random
from typing import Callable

import torch

from bench.graphgen import copy_with_layout, random_graph, with_layout
from bench.graphgen_ops import FLOAT_DTYPES, LAYOUTS, Features
from bench.graphgen_source import as_function
from bench.mpmodules import random_module
from bench.soak.global_state import _restore_modes


MODES = ("infer", "train", "no_grad")


AUTOCAST_DTYPES = {"cpu": (torch.bfloat16,), "cuda": (torch.float16, torch.bfloat16)}


MATMUL_PRECISIONS = ("highest", "high", "medium")


# -- the cases ----------------------------------------------------------------------------------------
@dataclasses.dataclass
class Case:
    seed: int
    mode: str                     # MODES
    gm: Callable                  # the random graph (or any function of the inputs)
    inputs: list[torch.Tensor]    # in their layouts; copied per run with ``copy_with_layout``
    features: dict = dataclasses.field(default_factory=dict)  # gm.meta["features"]
    redrawn: int = 0              # programs eager rejected before this one
    context: dict = dataclasses.field(default_factory=dict)  # _draw_context's: ambient autocast, matmul precision

    @property
    def module(self) -> bool:
        return isinstance(self.gm, torch.nn.Module) and not isinstance(self.gm, torch.fx.GraphModule)

    @property
    def autocasts(self) -> bool:
        """Autocast runs in the case: ambient, or a region in the program."""
        return bool(self.context.get("autocast") or self.features.get("autocast_region"))

    @property
    def tight(self) -> bool:
        """The context changes precision: dtypes and gradients are held to the compile without eqsat's."""
        return (self.autocasts or self.module
                or self.context.get("matmul_precision") not in (None, "highest"))

    @property
    def grad_mode(self) -> bool:
        return self.mode != "no_grad"

    @property
    def requires_grad(self) -> bool:
        return self.mode != "infer"


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


def _draw(rng: random.Random, train: bool) -> tuple[str, torch.dtype | None, Features]:
    """The mode, dtype and features of a case."""
    if train:
        mode = "train"
    else:
        mode = "no_grad" if rng.random() < 0.2 else "infer"
    dtype = rng.choice(FLOAT_DTYPES) if mode != "infer" else None
    if mode == "train":
        region = "no_grad" if rng.random() < 0.35 else None
    elif mode == "no_grad":
        region = "enable_grad"
    else:
        region = rng.choices(["inference_mode", "no_grad", None], [0.15, 0.1, 0.75])[0]
    features = Features(layouts=0.35, rank4=0.2, inplace=0.15 if mode == "infer" else 0.1, grad_region=region,
                        grad_base=mode != "no_grad", leaves_require_grad=mode != "infer")
    return mode, dtype, features


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).split(".")[-1]


def _draw_context(seed: int, train: bool, device: str) -> tuple[dict, tuple | None]:
    """The context of case ``seed``, from a stream of its own (the program drawn stays the seed's):
    the record's ``context`` and the autocast region to put in the program (device type, dtype)."""
    rng = random.Random(f"{seed}/context")
    module = train and rng.random() < 0.25
    ambient = rng.random() < (0.6 if module else 0.3)
    dtype = rng.choice(AUTOCAST_DTYPES[device])
    region = (device, rng.choice(AUTOCAST_DTYPES[device])) if rng.random() < (0.3 if module else 0.25) else None
    precision = rng.choice(MATMUL_PRECISIONS) if rng.random() < 0.3 else None
    context = {"autocast": f"{device}:{_dtype_name(dtype)}" if ambient else None, "matmul_precision": precision,
               "module": module}
    return context, region


def _module_case(seed: int, rng: random.Random, context: dict, region: tuple | None, device: str,
                 redrawn: int) -> Case:
    """A mixed-precision training step of a random ``SplitGroups`` module; its input maybe in a layout."""
    m, inputs = random_module(rng, device, region[1] if region else None)
    layouts = []
    if rng.random() < 0.35:
        layout = rng.choice([k for k in LAYOUTS if k != "channels_last"])
        inputs = [with_layout(inputs[0], layout, rng)]
        layouts.append(layout)
    features = {"layouts": layouts, "grad_region": "no_grad" if m.no_grad_scale else None,
                "inplace": ["setitem on a value"] if m.inplace else [], "module": m.describe(),
                "autocast_region": (f"{region[0]}:{_dtype_name(region[1])}" if region else None)}
    if m.rotary:  # its enabled=False block
        features["autocast_off"] = True
    return Case(seed, "train", m, inputs, features, redrawn, context)


def make_case(seed: int, train: bool, attempts: int = 10, device: str = "cpu", contexts: bool = True) -> Case:
    """Case ``seed``: the first program of its draws that eager runs (forward and backward), in the
    context ``_draw_context`` draws for it (autocast regions for ``device``); ``contexts=False``: the
    seed's program as the soak drew it before issue 41, in no context."""
    context, region = _draw_context(seed, train, device) if contexts else ({}, None)
    for attempt in range(attempts):
        rng = random.Random(seed if attempt == 0 else f"{seed}/{attempt}")
        if context.get("module"):
            case = _module_case(seed, rng, context, region, device, attempt)
        else:
            mode, dtype, features = _draw(rng, train)
            features.autocast_region, features.autocast_off_inside = region, 0.4
            features.split_linear = 0.1 if contexts else 0.0
            gm, inputs = random_graph(rng, n_ops=rng.randint(2, 12), dtype=dtype, features=features)
            gm = _with_aliasing_outputs(gm, rng)
            case = Case(seed, mode, as_function(gm), inputs, gm.meta["features"], attempt, context)
        if _eager_accepts(case):
            return case
    raise RuntimeError(f"soak: no program eager accepts in {attempts} draws of seed {seed}")


def _copies(case: Case, device: str) -> list[torch.Tensor]:
    xs = [copy_with_layout(x, device) for x in case.inputs]
    if case.requires_grad:
        xs = [x.requires_grad_() if x.is_floating_point() else x for x in xs]
    return xs


def _program(case: Case, device: str, dtype: torch.dtype | None = None):
    """What a run calls: the program, or a fresh copy of the module (its own parameters and grads)."""
    if not case.module:
        return case.gm
    return copy.deepcopy(case.gm).to(device, dtype)


@contextlib.contextmanager
def _ambient(case: Case):
    """The case's context around a compile and call: grad mode, matmul precision, ambient autocast."""
    precision = torch.get_float32_matmul_precision()
    autocast = case.context.get("autocast")
    try:
        if case.context.get("matmul_precision"):
            torch.set_float32_matmul_precision(case.context["matmul_precision"])
        with torch.set_grad_enabled(case.grad_mode):  # restores the caller's mode, even on an error
            if autocast:
                device, dtype = autocast.split(":")
                with torch.autocast(device, dtype=getattr(torch, dtype)):
                    yield
            else:
                yield
    finally:
        torch.set_float32_matmul_precision(precision)


def _run(case: Case, fn, xs: list[torch.Tensor]) -> tuple:
    with _ambient(case):
        out = fn(*xs)
    return (out,) if isinstance(out, torch.Tensor) else tuple(out)


def _eager_accepts(case: Case) -> bool:
    try:
        outs = _run(case, _program(case, "cpu"), _copies(case, "cpu"))
        loss = [o.float().sum() for o in outs if o.requires_grad]
        if loss:
            sum(loss).backward()
        return True
    except Exception:  # noqa: BLE001 — eager's verdict on the program, not a finding
        return False
    finally:
        _restore_modes()
