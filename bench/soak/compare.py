"""Comparing a compiled run with eager: output values, strides, ``requires_grad``, storage relations,
inputs afterwards and gradients; each difference a problem of one of ``KINDS``."""
from __future__ import annotations

import collections

import torch

from bench.soak.cases import Case, _copies, _program, _run
from bench.soak.global_state import _restore_modes


KINDS = ("crash", "aliasing", "requires_grad", "dtype", "strides", "values", "inputs", "gradients", "lost")


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


def _same_view_of(g: torch.Tensor, w: torch.Tensor, base_g: torch.Tensor, base_w: torch.Tensor) -> bool:
    """``g`` is the view of our output ``base_g`` that ``w`` is of eager's ``base_w``: each dim of
    ``w`` steps as one dim of ``base_w`` does, and the same dim of ``base_g`` steps as ``g``'s. Where
    eager's base is no dense layout and ours is (``_dense``), a view of it has other strides than
    eager's view, and shares storage with its base as eager's does (soak seed 3005246, torch 2.11 and
    2.13: ``relu(x).unbind(2)[2]`` and a ``narrow`` of it, (2, 1) with strides (2, 1), eager's (6, 3))."""
    def storage(t):
        return t.untyped_storage().data_ptr()
    if storage(g) != storage(base_g) or storage(w) != storage(base_w):
        return False
    for n, sw, sg in zip(w.shape, w.stride(), g.stride()):
        if n == 1:
            continue
        dims = [k for k in range(base_w.dim()) if base_w.shape[k] != 1 and base_w.stride(k) == sw]
        if len(dims) != 1 or base_g.stride(dims[0]) != sg:
            return False
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


def _as_close_as_eager(got: torch.Tensor, want: torch.Tensor, exact, floor: float = 1e-5) -> bool:
    """``got`` is at most twice as far from ``exact`` (float64's result) as ``want`` (eager's), three
    times in half precision, plus ``floor``: ``torch._dynamo.utils.same``'s judgement against a
    float64 reference (root mean square errors; ``floor`` is its ``tol / 10``: 1e-5 for values as at
    inference, 1e-4 for gradients, torch's benchmark harness judging training at ``tol=1e-3``)."""
    if (not got.is_floating_point() or got.dtype == torch.float64 or not isinstance(exact, torch.Tensor)
            or exact.shape != got.shape or not torch.equal(got.isfinite(), want.isfinite())):
        return False
    finite = want.isfinite()
    if not torch.equal(got[~finite].nan_to_num(), want[~finite].nan_to_num()):  # the same infinities
        return False

    def err(t):  # root mean square, as torch._dynamo.utils.same measures it against float64
        return (t[finite].double() - exact[finite].double()).square().mean().sqrt().item() if finite.any() else 0.0
    multiplier = 3.0 if got.dtype in (torch.float16, torch.bfloat16) else 2.0  # same's multipliers
    return err(got) <= multiplier * err(want) + floor


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
    densified: list[int] = []
    for i, (g, w) in enumerate(zip(got, want)):
        if _strides(g) != _strides(w):
            if _dense(g) and not _dense(w):
                stats["dense_for_non_dense"] += 1
                densified.append(i)
                continue
            if any(_same_view_of(g, w, got[j], want[j]) for j in densified):
                stats["views_of_dense_outputs"] += 1
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
        exact = None  # float64's gradients, where one is off eager's by more than rounding explains
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
                    found: list = []
                    _close("gradients", found, x.grad, y.grad, rtol=0.0, atol=tol,
                           msg=lambda m, name=name, tol=tol, r=ref.get(name, 0.0):
                           f"{name} (tolerance {tol:.3g}; without eqsat off by {r:.3g}): {m}")
                    if found and not case.autocasts:
                        exact = exact if exact is not None else _float64_gradients(case, device, ws)
                        if exact is not None and _as_close_as_eager(x.grad, y.grad, exact.get(name), 1e-4):
                            stats["gradients_as_close_as_eager"] += 1
                            found = []
                    problems.extend(found)
    return problems


def _float64_gradients(case: Case, device: str, weights: list) -> dict | None:
    """The gradients of the loss ``compare`` takes (weights ``weights``), by input and parameter
    name, with the program run in float64; None where it cannot run so. Outside autocast
    (``Case.autocasts``: there its casts are semantics, and a gradient nearer float64 than eager's
    is the sign they were lost, issue 41), a gradient off eager's by more than ``_grad_tolerance``
    passes where it is no farther from these than eager's, as torch's accuracy checks judge:
    float32 matmuls may round their operands (TF32 on CUDA, GPU soak seeds 4000027t, 4000047t:
    eqsat batches linears into one ``bmm`` and rounds elsewhere, ~1e-3 off), and a ``LayerNorm``
    over two elements divides rounding by a tiny deviation (CPU seeds 3001193t, 3003839t: float32
    weight gradients 2.4e-5 and 6e-5 off eager's, eager itself 2.4e-5 off float64, 0.1 % of the
    gradient)."""
    xs = [x.detach().to(torch.float64).requires_grad_(x.requires_grad) if x.is_floating_point() else x
          for x in _copies(case, device)]
    program = _program(case, device, torch.float64)
    try:
        outs = _run(case, program, xs)
        loss = sum((o.double() * w.double()).sum() for o, w in zip(outs, weights) if o.requires_grad)
        loss.backward()
    except Exception:  # noqa: BLE001 — a program written for its dtype: no reference, the mismatch stands
        return None
    finally:
        _restore_modes()
    grads = {f"input {i}": x.grad for i, x in enumerate(xs) if isinstance(x, torch.Tensor)}
    if case.module:
        grads.update({f"parameter {n}": p.grad for n, p in program.named_parameters()})
    return grads
