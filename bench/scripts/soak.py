"""Soak: thousands of random graphs through the backend, inference and training, against eager.

    python -m bench.scripts.soak --cases 10000 --workers 14 --summary soak.json
    python -m bench.scripts.soak --cases 2000 --workers 14 --device cuda --inductor   # the real compile

Each case is a random Torch-IR graph (``bench.graphgen``) whose outputs may be inputs, views of
inputs and repeated values, and which has (drawn per case) what issue 28 found missing: inputs with
layouts (transposed, channels_last, expanded, sliced), a grad-mode region (``no_grad`` in training,
``enable_grad`` in a call made under ``no_grad``, ``inference_mode``), and in-place writes to inputs
and views of inputs read back through split/cat/stack/unbind. The eager reference gets the same
layouts. A case runs in one of three modes: inference (grad on, nothing requires grad), training
(the inputs require grad; only fresh clones are written) and ``no_grad`` (the inputs require grad, the
call runs under ``torch.no_grad()`` with an ``enable_grad`` region).

Each case also draws (issue 41) the context it runs in, from its own stream (``_draw_context``):
ambient autocast at call time (CPU bfloat16; CUDA float16 or bfloat16), an autocast region inside the
function (a ``with torch.autocast(...)`` block, maybe with a nested ``enabled=False`` one; programs
also draw issue 41's split → linear per piece → cat), ``torch.set_float32_matmul_precision`` at
compile and call time (restored after), and, for a quarter of the training cases, instead of a random graph a
mixed-precision training step of an ``nn.Module`` (``bench.mpmodules``: ``Linear``/``LayerNorm`` groups
on split pieces). In a case whose context changes precision, output dtypes must be eager's, and
gradients (of inputs and parameters) may be off eager's by at most twice what the same compile
without eqsat is off plus a floor (``_grad_tolerance``), not the loose default. The record's
``context`` says what was drawn; the summary counts it. ``--no-contexts``: a seed's program and run as
before issue 41 (what the regression tests that name a seed use).

By default a case is compiled by Dynamo with the eqsat pre-grad pass, then AOTAutograd's forward
(and backward) graphs go through the post-grad pass, mutation epilogue included, and run eagerly
(Inductor's codegen is not what is soaked). ``--inductor`` compiles through the real backend
(``EqsatBackend()``: inner Inductor, post-grad pass on): slow on CPU (a C++ compile per graph), meant
for the GPU. Checked against eager: output values (or, off them, no farther from a float64 run than
eager's: ``_values``), strides of every output on dims of size > 1,
``requires_grad`` of every output, storage relations (which outputs share storage with which inputs
and each other, and which *are* them), the values (and whole storage) of every input afterwards,
and gradients of every float input. A difference the same compile without eqsat shows too is
not ours: it is counted apart. Programs eager itself rejects are redrawn (and counted).

The summary counts cases, mismatches by kind, graphs kept as they were by reason, and cases per
feature (layouts, grad regions, in-place writes).
"""
from __future__ import annotations

import argparse
import contextlib
import collections
import copy
import dataclasses
import json
import logging
import multiprocessing
import multiprocessing.connection
import operator
import os
import random
import signal
import sys
import time
import traceback
from typing import Callable

import torch
from functorch.compile import make_boxed_func

from bench.graphgen import FLOAT_DTYPES, LAYOUTS, Features, as_function, copy_with_layout, random_graph, with_layout
from bench.mpmodules import random_module
from eqsat_torch.inductor import compat
from eqsat_torch.safety.aliasing import inductor_view
from eqsat_torch.backend import EqsatBackend, _trains, optimize_or_keep
from eqsat_torch.options import Options
from eqsat_torch.inductor.post_grad import EqsatPostGradPass

MODES = ("infer", "train", "no_grad")
KINDS = ("crash", "aliasing", "requires_grad", "dtype", "strides", "values", "inputs", "gradients", "lost")
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
    def tight(self) -> bool:
        """The context changes precision: dtypes and gradients are held to the compile without eqsat's."""
        return bool(self.context.get("autocast") or self.features.get("autocast_region") or self.module
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


def _restore_modes() -> None:
    """An error inside a ``no_grad`` region of an eagerly run graph leaves grad mode off (an
    ``inference_mode`` region's guard restores its mode when the failed frame is freed)."""
    torch._C._set_grad_enabled(True)


def _dispatch_tls() -> dict:
    """The thread's included/excluded dispatch keys."""
    state = {}
    for name, key in torch._C.DispatchKey.__members__.items():
        try:
            state[name] = (torch._C._dispatch_tls_is_dispatch_key_included(key),
                           torch._C._dispatch_tls_is_dispatch_key_excluded(key))
        except Exception:  # noqa: BLE001 — alias keys have no TLS bit
            pass
    return state


_CLEAN_TLS = _dispatch_tls()


def _heal_dispatch_tls() -> list[str]:
    """Some compile failures inside AOTAutograd leave Python/Functionalize dispatch keys set in the
    thread's state (pytorch/pytorch#180823), after which every op raises "PythonDispatcherTLS was not
    set": put back the state the process started with, and say which keys needed it."""
    healed = []
    for name, (inc, exc) in _CLEAN_TLS.items():
        key = torch._C.DispatchKey.__members__[name]
        if torch._C._dispatch_tls_is_dispatch_key_included(key) != inc:
            torch._C._dispatch_tls_set_dispatch_key_included(key, inc)
            healed.append(name)
        if torch._C._dispatch_tls_is_dispatch_key_excluded(key) != exc:
            torch._C._dispatch_tls_set_dispatch_key_excluded(key, exc)
            healed.append(name)
    return healed


# -- the compilers ------------------------------------------------------------------------------------
def _backend(reports: list):
    """Dynamo graph: eqsat's pre-grad pass; AOTAutograd's forward and backward: the post-grad pass;
    then run eagerly. Inference goes through AOT too: its graph carries the input-mutation epilogue
    Inductor's post-grad passes see."""
    opts = Options(inner="eager", post_grad=False)
    aot = _aot_as_inductor(EqsatPostGradPass(Options(), reports=reports))

    def backend(gm, example_inputs):
        new_gm, report = optimize_or_keep(gm, example_inputs, opts, train_step=_trains(gm, example_inputs))
        reports.append(report)
        return aot(new_gm, example_inputs)

    return backend


# What Inductor makes of a graph besides its codegen, imitated in both compiles: AOT traces with its
# decomposition of ``cat`` (one input: a clone of it, in that input's layout), and after the post-grad
# pre-pass (ours) ``remove_noop_ops`` drops a clone, cat, slice, … whose fake value is its input's.
# Inductor alone so returns ``cat([t])`` as ``t`` (torch 2.13: ``cat([(x * 2).t()], 0)`` has strides
# (1, 4) where eager's are (6, 1)); soak seed 2002268 (torch 2.11) was charged for that to eqsat.
_INDUCTOR_DECOMPOSES = (torch.ops.aten.cat.default,)


def _aot_as_inductor(post: Callable[[torch.fx.Graph], None] | None = None):
    """AOTAutograd whose forward and backward graphs (after ``post``, a post-grad pass, and Inductor's
    ``remove_noop_ops``) run eagerly, each output given the layout Inductor gives it: the strides its
    meta value had before ``post`` (``_keep_layouts``). The compile without eqsat keeps them too:
    where an op's meta strides are not the strides it computes at run time (torch 2.11: ``aten.zero``
    of a transposed view), both differ from eager alike, and the difference is not eqsat's."""
    def post_compiler(gm, example_inputs):
        before = _output_layouts(gm)
        if post is not None:
            post(gm.graph)
        compat.inductor_remove_noop_ops(gm.graph)
        _keep_layouts(gm, before)
        return make_boxed_func(gm.forward)

    return compat.aot_backend(post_compiler, compat.inductor_decompositions(_INDUCTOR_DECOMPOSES))


def _output_layouts(gm: torch.fx.GraphModule) -> list:
    out = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    vals = [n.meta.get("val") if isinstance(n, torch.fx.Node) else None for n in out.args[0]]
    return [(tuple(v.shape), tuple(v.stride())) if isinstance(v, torch.Tensor) else None for v in vals]


_RESTRIDED = collections.Counter()  # per case: outputs _restride copied (read into the result)


def _keep_layouts(gm: torch.fx.GraphModule, layouts: list) -> None:
    """What Inductor's lowering does with the strides each output had before the post-grad passes
    (torch 2.13, ``GraphLowering.run_node``): an output that is no view gets exactly those strides
    (``require_exact_strides``), one that is a view only their order (``require_stride_order``), at
    the node, so its users (views of it among the outputs too) read the restrided value. A value
    sharing an input's storage is left as it is (AOT regenerates those from the input)."""
    g = gm.graph
    out = next(n for n in reversed(g.nodes) if n.op == "output")
    placeholders = tuple(n for n in g.nodes if n.op == "placeholder")
    done: set = set()
    for n, layout in zip(out.args[0], layouts):
        if not isinstance(n, torch.fx.Node) or layout is None or n.op == "placeholder" or n in done:
            continue
        done.add(n)
        with g.inserting_after(n):
            kept = g.call_function(_restride, (n, layout, placeholders, inductor_view(n)))
        n.replace_all_uses_with(kept, delete_user_cb=lambda user: user is not kept)
        for user in kept.users:  # Inductor's view of a buffer in any layout is an indexing, never an error
            if user.target in _VIEWS_OF_ANY_LAYOUT:
                user.target = torch.ops.aten.reshape.default
    gm.recompile()


# Views a user of a restrided output reads it through: eager's refuses a layout it cannot view (soak seed
# 971: the post-grad pass made an output contiguous, ``remove_noop_ops`` dropped the clone before its
# ``_unsafe_view``, and the output's old strides came back); a reshape gives the same values.
_VIEWS_OF_ANY_LAYOUT = (torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default)


def _order(sizes, strides) -> list:
    return sorted((d for d, n in enumerate(sizes) if n != 1), key=lambda d: (-strides[d], d))


def _restride(t, layout, inputs, view):
    if (not isinstance(t, torch.Tensor) or tuple(t.shape) != layout[0]
            or _strides(t) == [(n, st) for n, st in zip(*layout) if n != 1]
            or t.untyped_storage().data_ptr() in {x.untyped_storage().data_ptr() for x in inputs
                                                   if isinstance(x, torch.Tensor)}):
        return t
    sizes, strides = layout
    if view:  # only the order is kept: the dense layout of that order where it differs
        if _order(t.shape, t.stride()) == _order(sizes, strides):
            return t
        strides, step = [0] * len(sizes), 1
        for d in reversed(sorted(range(len(sizes)), key=lambda d: (-layout[1][d], d))):
            strides[d], step = step, step * sizes[d]
    _RESTRIDED["restrided"] += 1
    out = torch.empty_strided(sizes, tuple(strides), dtype=t.dtype, device=t.device)
    dst, src = out, t  # an expand's zero strides: Inductor's kernel writes each element, eager's copy_ refuses
    for d, (n, st) in enumerate(zip(sizes, strides)):
        if st == 0 and n > 1:
            dst, src = dst.narrow(d, 0, 1), src.narrow(d, 0, 1)
    dst.copy_(src)
    return out


class _Inductor:
    """The real backend, its reports gathered (pre-grad, then each Aten graph's)."""

    def __init__(self):
        self.inner = EqsatBackend()

    def __call__(self, gm, example_inputs):
        return self.inner(gm, example_inputs)

    def reports(self) -> list:
        return self.inner.reports + self.inner.post_grad_reports


def _plain_backend(inductor: bool):
    """The same compile path without eqsat: what it gets wrong against eager is not ours."""
    return compat.compile_fx() if inductor else _aot_as_inductor()


# -- the checks -----------------------------------------------------------------------------------------
def _signature(inputs, outputs) -> list:
    def ptr(t):
        return t.untyped_storage().data_ptr() if isinstance(t, torch.Tensor) else None
    return [(tuple(j for j, x in enumerate(inputs) if ptr(x) == ptr(o)),
             tuple(j for j, p in enumerate(outputs[:i]) if ptr(p) == ptr(o)),
             tuple(j for j, x in enumerate(inputs) if x is o),
             tuple(j for j, p in enumerate(outputs[:i]) if p is o)) for i, o in enumerate(outputs)]


def _strides(t: torch.Tensor) -> list:
    return [(n, s) for n, s in zip(t.shape, t.stride()) if n != 1]


def _dense(t: torch.Tensor) -> bool:
    """Non-overlapping and dense. Where eager's output is not (a slice or an expand of a buffer), a
    dense output of ours is as good: the contract ``fx_bridge/safety/aliasing.py`` states."""
    step = 1
    for st, n in sorted((st, n) for n, st in zip(t.shape, t.stride()) if n != 1):
        if st != step:
            return False
        step *= n
    return True


def _storage(t: torch.Tensor) -> torch.Tensor:
    """Every element of ``t``'s storage, as a flat tensor (what a write outside its view changes)."""
    n = t.untyped_storage().nbytes() // t.element_size()
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage(), 0, (n,), (1,))


def _grad_atol(g: torch.Tensor) -> float:
    """A gradient is a sum over every use of its input; rewrites may sum in another order, which
    in half precision moves the result by a few ulps of the largest partial sum."""
    return max(1e-2, 4 * torch.finfo(g.dtype).eps * g.float().abs().max().item())


def _close(kind: str, problems: list, got, want, **kw) -> None:
    try:
        torch.testing.assert_close(got, want, equal_nan=True, **kw)
    except AssertionError as e:
        problems.append((kind, " ".join(str(e).split())[:200]))


def _values(case: Case, problems: list, got: tuple, want: tuple, device: str, stats: collections.Counter) -> None:
    """Outputs hold eager's values. In half precision (and, less often, in float32) a compile may
    round differently from eager yet as well: Inductor keeps a fused kernel's intermediates in float32
    where eager rounds each op, so a rewrite that fuses what was apart drops a rounding (soak seed
    1001189: one bf16 ulp, 0.25, through a linear's cancellation). An output off eager's values is
    then judged as torch's accuracy checks judge it: against the program run in float64, it may be at
    most twice as far off as eager (plus the dtype's usual tolerance)."""
    off = {}
    for i, (g, w) in enumerate(zip(got, want)):
        found: list = []
        _close("values", found, g.detach(), w.detach(), msg=lambda m, i=i: f"output {i}: {m}")
        if found:
            off[i] = found[0]
    exact = _float64_outputs(case, device) if off else None
    for i, problem in off.items():
        if exact is not None and _as_close_as_eager(got[i].detach(), want[i].detach(), exact[i]):
            stats["values_as_close_as_eager"] += 1
        else:
            problems.append(problem)


def _float64_outputs(case: Case, device: str) -> tuple | None:
    """The program's outputs computed in float64 from the same inputs; None where it cannot run so."""
    xs = [x.detach().to(torch.float64) if x.is_floating_point() else x for x in _copies(case, device)]
    try:
        return _run(case, _program(case, device, torch.float64), xs)
    except Exception:  # noqa: BLE001 — a program written for its dtype: no reference, the mismatch stands
        return None
    finally:
        _restore_modes()


def _as_close_as_eager(got: torch.Tensor, want: torch.Tensor, exact) -> bool:
    if (not got.is_floating_point() or got.dtype == torch.float64 or not isinstance(exact, torch.Tensor)
            or exact.shape != got.shape or not torch.equal(got.isfinite(), want.isfinite())):
        return False
    finite = want.isfinite()
    if not torch.equal(got[~finite].nan_to_num(), want[~finite].nan_to_num()):  # the same infinities
        return False

    def err(t):
        return (t[finite].double() - exact[finite].double()).abs().max().item() if finite.any() else 0.0
    return err(got) <= 2 * err(want) + 1e-5  # assert_close's default atol for these dtypes


def _grad_tolerance(want: torch.Tensor, ref: float) -> float:
    """In a context that changes precision, how far a gradient may be off eager's: twice what the
    compile without eqsat is off (``ref``; Inductor's fused kernels round otherwise), plus a floor for
    a rewrite's other summation order: 2**-12 of the largest element for a float32 gradient (a
    bfloat16 result where eager's is float32, or the reverse, is off by ~2**-8 of it), four ulps for
    a half-precision one, and ``assert_close``'s float32 atol, 1e-5: float32 rounding in a
    ``LayerNorm``'s backward scales with the loss, not with this gradient (soak seed 100173t, a float32
    module: 1.6e-6 off where the largest element is 1e-3). Issue 41's module: eqsat 6.4e-4 off,
    Inductor 9.2e-5."""
    step = max(2.0**-12, 4 * torch.finfo(want.dtype).eps)
    return 2 * ref + step * want.float().abs().max().item() + 1e-5


def compare(case: Case, got: tuple, want: tuple, a: list, b: list, device: str = "cpu",
            stats: collections.Counter | None = None, params: tuple = ((), ()), ref: dict | None = None,
            errors: dict | None = None) -> list[tuple[str, str]]:
    """What differs between the compiled run (outputs ``got``, inputs ``a`` afterwards) and eager's
    (``want``, ``b``): a list of (kind, detail), kinds from ``KINDS``; gradients are taken here, of the
    inputs and of ``params`` (the compiled module's named parameters, eager's). With ``ref`` (the
    compile without eqsat's gradient errors, by name) gradients are held to ``_grad_tolerance``;
    each gradient's error is written to ``errors``."""
    problems: list[tuple[str, str]] = []
    stats = stats if stats is not None else collections.Counter()
    errors = errors if errors is not None else {}
    dg, dw = [str(o.dtype) for o in got], [str(o.dtype) for o in want]
    if dg != dw:
        problems.append(("dtype", f"{dg} != eager's {dw}"))
    if _signature(a, list(got)) != _signature(b, list(want)):
        problems.append(("aliasing", f"{_signature(a, list(got))} != eager's {_signature(b, list(want))}"))
    rg, rw = [o.requires_grad for o in got], [o.requires_grad for o in want]
    if rg != rw:
        problems.append(("requires_grad", f"{rg} != eager's {rw}"))
    for i, (g, w) in enumerate(zip(got, want)):
        if _strides(g) != _strides(w):
            if _dense(g) and not _dense(w):
                stats["dense_for_non_dense"] += 1
                continue
            problems.append(("strides", f"output {i} of shape {tuple(w.shape)}: strides {g.stride()}, eager's {w.stride()}"))
            break
    if len(got) != len(want):
        problems.append(("values", f"{len(got)} outputs, eager {len(want)}"))
    else:
        _values(case, problems, got, want, device, stats)
    for i, (x, y) in enumerate(zip(a, b)):  # written inputs hold eager's values, and nothing else changed
        n = len(problems)
        _close("inputs", problems, x.detach(), y.detach(), msg=lambda m, i=i: f"input {i}: {m}")
        if len(problems) == n:
            _close("inputs", problems, _storage(x), _storage(y), msg=lambda m, i=i: f"storage of input {i}: {m}")
    if rg == rw and any(rw):
        gen = torch.Generator().manual_seed(case.seed)  # the loss weights
        ws = [torch.randn(t.shape, generator=gen).to(device) for t in want]
        loss_a = sum((g.float() * w).sum() for g, w in zip(got, ws) if g.requires_grad)
        loss_b = sum((g.float() * w).sum() for g, w in zip(want, ws) if g.requires_grad)
        loss_a.backward()
        loss_b.backward()
        named = [(f"input {i}", x, y) for i, (x, y) in enumerate(zip(a, b))]
        named += [(f"parameter {n}", x, y) for (n, x), (_, y) in zip(*params)]
        for name, x, y in named:
            if (x.grad is None) != (y.grad is None):
                problems.append(("gradients", f"{name}: grad {'None' if x.grad is None else 'set'}, eager's "
                                              f"{'None' if y.grad is None else 'set'}"))
            elif x.grad is not None:
                if x.grad.shape == y.grad.shape and x.grad.dtype == y.grad.dtype:
                    errors[name] = (x.grad.double() - y.grad.double()).abs().nan_to_num(float("inf")).max().item() \
                        if x.grad.numel() else 0.0
                if ref is None:
                    _close("gradients", problems, x.grad, y.grad, rtol=1e-2, atol=_grad_atol(y.grad),
                           msg=lambda m, name=name: f"{name}: {m}")
                else:
                    tol = _grad_tolerance(y.grad, ref.get(name, 0.0))
                    _close("gradients", problems, x.grad, y.grad, rtol=0.0, atol=tol,
                           msg=lambda m, name=name, tol=tol, r=ref.get(name, 0.0):
                           f"{name} (tolerance {tol:.3g}; without eqsat off by {r:.3g}): {m}")
    return problems


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
        backend = _Inductor() if inductor else _backend(reports)
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


# -- the command --------------------------------------------------------------------------------------
def _limit_memory(gb: float | None) -> None:
    if gb:
        import resource

        limit = int(gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _worker(args):
    seed, train, device, inductor, contexts = args
    torch.set_num_threads(1)
    os.environ["EQSAT_CACHE"] = "0"  # every case runs the optimizer: no graph comes from eqsat_torch.cache
    if inductor:
        import torch._inductor.config as inductor_config

        inductor_config.compile_threads = 1      # one process per core already
        inductor_config.fx_graph_cache = False   # every case runs the post-grad pass, none is a cache hit
    logging.getLogger("eqsat").setLevel(logging.ERROR)   # fallbacks are counted, not printed
    logging.getLogger("torch").setLevel(logging.CRITICAL)
    compat.skip_guard_latency_profile()            # telemetry only: 7 % of a case's CPU
    t0, cpu0 = time.perf_counter(), time.process_time()
    try:
        result = run_case(seed, train, device=device, inductor=inductor, contexts=contexts)
    except Exception as e:  # noqa: BLE001 — never lose the other cases over one
        result = {"seed": seed, "train": train, "mode": "?", "problem": "crash", "problems": [],
                  "detail": f"soak itself: {type(e).__name__}: {e}", "features": {}, "redrawn": 0,
                  "fallbacks": [], "changed": 0}
    result["seconds"] = round(time.perf_counter() - t0, 2)
    result["cpu_seconds"] = round(time.process_time() - cpu0, 3)  # the box may be shared: wall is not the cost
    return result


def _serve(conn, memory_gb: float | None, work: Callable = _worker) -> None:
    """A worker process: cases in, results out, until told to stop (None)."""
    _limit_memory(memory_gb)
    while (job := conn.recv()) is not None:
        conn.send(work(job))


def _lost(job, why: str) -> dict:
    seed, train = job[:2]
    return {"seed": seed, "train": train, "mode": "?", "problem": "lost", "problems": [("lost", why)],
            "detail": f"{why} (rerun it with --case {seed}{' --train' if train else ''})", "features": {},
            "redrawn": 0, "fallbacks": [], "changed": 0}


@dataclasses.dataclass
class _Slot:
    proc: multiprocessing.Process
    conn: object
    job: tuple | None = None
    started: float = 0.0
    served: int = 0


def run_cases(jobs: list[tuple], workers: int, case_timeout: float, memory_gb: float | None,
              recycle: int = 1000, work: Callable = _worker):
    """Yield a result per job, as cases end, from ``workers`` processes, each running one case at a
    time: a case running past ``case_timeout`` seconds has its process killed, one whose process
    dies (out of memory, a crash in native code) is reported lost; either way a fresh process takes
    the next case, so one bad case never stops the soak. A process is replaced after ``recycle``
    cases (compile caches grow: ~0.2 MB a case on CPU, no slower after 200 cases; a new process costs
    ~4.5 s of CPU, imports and the first compile). ``work`` (importable by name) turns a job into its result."""
    ctx = multiprocessing.get_context("spawn")
    todo = list(reversed(jobs))
    slots: list[_Slot] = []

    def spawn() -> _Slot:
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_serve, args=(child, memory_gb, work), daemon=True)
        proc.start()
        child.close()
        return _Slot(proc, parent)

    def retire(slot: _Slot, kill: bool) -> None:
        if kill:
            slot.proc.kill()
        else:
            with contextlib.suppress(OSError):
                slot.conn.send(None)
        slot.proc.join(5)
        if slot.proc.is_alive():
            slot.proc.kill()
            slot.proc.join()
        slot.conn.close()

    try:
        slots = [spawn() for _ in range(min(workers, len(jobs)))]
        while todo or any(s.job for s in slots):
            for k, s in enumerate(slots):
                if s.job is None and todo:
                    if s.served >= recycle:
                        retire(s, kill=False)
                        s = slots[k] = spawn()
                    s.job, s.started = todo.pop(), time.monotonic()
                    s.conn.send(s.job)
            busy = [s for s in slots if s.job]
            ready = multiprocessing.connection.wait([s.conn for s in busy] + [s.proc.sentinel for s in busy], timeout=1.0)
            now = time.monotonic()
            for k, s in enumerate(slots):
                if s.job is None:
                    continue
                result = None
                if s.conn in ready:
                    try:
                        result = s.conn.recv()
                    except (EOFError, OSError):
                        result = _lost(s.job, f"its worker died (exit code {s.proc.exitcode}; out of memory?)")
                elif s.proc.sentinel in ready or not s.proc.is_alive():
                    result = _lost(s.job, f"its worker died (exit code {s.proc.exitcode}; out of memory?)")
                elif now - s.started > case_timeout:
                    result = _lost(s.job, f"timed out after {case_timeout:.0f} s")
                if result is None:
                    continue
                s.job, s.served = None, s.served + 1
                if result["problem"] == "lost":
                    retire(s, kill=True)
                    slots[k] = spawn()
                yield result
    finally:
        for s in slots:
            retire(s, kill=True)


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
            f"dense where eager's layout is not (as aliasing.py allows), {t['restrided']} "
            f"given the strides Inductor keeps after the post-grad pass, {t['values_as_close_as_eager']} "
            f"off eager's values but no farther from float64's than eager")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=10_000, help="total cases, half inference, half training")
    ap.add_argument("--seeds", default=None,
                    help="run these cases instead, comma-separated, a training case with a t suffix: 17,68t")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=max(1, multiprocessing.cpu_count() - 1),
                    help="processes, each running one case at a time")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--inductor", action="store_true",
                    help="compile through the real backend (inner Inductor, post-grad pass) instead of running AOT's graphs eagerly")
    ap.add_argument("--case", type=int, default=None, help="print one case's program (with --train: a training case)")
    ap.add_argument("--train", action="store_true", help="with --case")
    ap.add_argument("--no-contexts", dest="contexts", action="store_false",
                    help="draw no context (autocast, matmul precision, module steps): a seed's program and run as before issue 41")
    ap.add_argument("--out", default=None, help="write every case as JSON lines here, as it ends")
    ap.add_argument("--summary", default=None, help="write the totals as JSON here (also on Ctrl-C or a timeout's SIGTERM)")
    ap.add_argument("--memory-gb", type=float, default=6.0,
                    help="address space per CPU worker: a case that blows up aborts its worker, not the machine")
    ap.add_argument("--case-timeout", "--stall", dest="case_timeout", type=float, default=300.0,
                    help="seconds one case may run; then its worker is killed, the case reported lost, and a "
                         "fresh worker goes on (--stall: the old name)")
    args = ap.parse_args(argv)
    if args.case is not None:
        print(reproducer(args.case, args.train, args.device, args.contexts), end="")
        result = run_case(args.case, args.train, device=args.device, inductor=args.inductor, contexts=args.contexts)
        print(json.dumps({k: v for k, v in result.items() if k != "traceback"}))
        print(result.get("traceback", ""), end="")
        return 1 if result["problem"] else 0
    if args.seeds:
        jobs = [(int(s.rstrip("t")), s.endswith("t"), args.device, args.inductor, args.contexts)
                for s in args.seeds.split(",")]
    else:
        jobs = [(args.seed + i, i % 2 == 1, args.device, args.inductor, args.contexts) for i in range(args.cases)]
    t0 = time.perf_counter()
    results: list[dict] = []
    memory = args.memory_gb if args.device == "cpu" else None  # CUDA reserves address space of its own
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))    # ``timeout``: still write what came back
    out = open(args.out, "w") if args.out else None
    interrupted = False
    try:
        for r in run_cases(jobs, args.workers, args.case_timeout, memory):
            results.append(r)
            if out:
                out.write(json.dumps(r) + "\n")
                out.flush()
    except (KeyboardInterrupt, SystemExit):
        interrupted = True
    finally:
        if out:
            out.close()
    seconds = time.perf_counter() - t0
    t = totals(results)
    line = (summarize(results) + f"; {seconds:.0f} s on {args.workers} workers, {t['cpu_seconds']:.0f} s of CPU "
            f"in cases ({t['cases_per_cpu_second']:.2f} cases per CPU-second)")
    if interrupted:
        line += f" (interrupted: {len(jobs) - len(results)} of {len(jobs)} cases not run)"
    if args.inductor or args.device != "cpu":
        line += f" ({'Inductor' if args.inductor else 'AOT graphs run eagerly'}, {args.device})"
    for r in sorted(results, key=lambda r: r["seed"]):
        if r["problem"]:
            print(f"  seed {r['seed']} {'train' if r['train'] else 'infer'}: {r['problem']} {r.get('detail', '')}")
        for e in r.get("internal_errors", ()):  # kept, so no wrong answer, but a bug of ours
            print(f"  seed {r['seed']} {'train' if r['train'] else 'infer'}: graph kept: {e[:160]}")
    print(line)
    if args.summary:
        with open(args.summary, "w") as f:
            json.dump({**totals(results), "requested": len(jobs), "interrupted": interrupted,
                       "seconds": round(seconds, 1), "workers": args.workers, "case_timeout": args.case_timeout,
                       "seed": args.seed, "device": args.device, "inductor": args.inductor, "draws_contexts": args.contexts,
                       "torch": torch.__version__, "command": " ".join(sys.argv), "line": line}, f, indent=1)
    return 1 if interrupted or any(r["problem"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
