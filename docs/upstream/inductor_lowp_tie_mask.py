"""Inductor's amax backward divides by a tie count of zero on float16 (CUDA): NaN gradients.

``x.t().sigmoid().t().amax(0)`` in float16, training. AOTAutograd's backward of ``amax`` is
``grad * (s == amax(s)) / count`` with ``s = sigmoid(x)``; the partitioner computes the mask in the
forward. Inductor's Triton kernel computes ``s`` in float32 and never rounds it to float16 (it is not
stored), while ``amax`` is stored, so rounded: ``s == amax(s)`` is false everywhere, the count is 0 and
every gradient element is NaN. Eager rounds ``s`` to float16 first, so the maximum ties with itself.
``torch._inductor.config.emulate_precision_casts = True`` rounds every eager op's output as eager does.
Same class as pytorch#195214 (bf16 division fused into an equality; fixed after torch 2.11).

Found by the eqsat soak on the H200 (torch 2.11): seeds 4000053 and 4001911 (training), where eqsat
removed a ``cat(split(s))`` / ``stack(unbind(s))`` copy that had stored ``s`` rounded. The guard:
``fx_bridge/inductor/workarounds.py`` compiles a graph holding a max/min or an equality of
float16/bfloat16 values with ``emulate_precision_casts``.

NOT YET RUN ON A GPU (the session that wrote it had none): the mechanism is read off the soak cases'
post-grad graphs (seed 4000053's forward computes ``eq(amax(s), s)`` next to ``amax``, ``s`` a pointwise
chain once eqsat removed the cat) and pytorch#195214; this is the smallest program of that shape.
Run: ``python docs/upstream/inductor_lowp_tie_mask.py cuda`` (on the CPU the C++ kernels round
low-precision values as eager does: no NaN there, torch 2.13).
"""
import sys

import torch


def f(x):
    return x.t().sigmoid().t().amax(0)


def grad_of(fn, x):
    x = x.detach().clone().requires_grad_()
    fn(x).float().sum().backward()
    return x.grad


def main(device: str = "cpu") -> None:
    torch._inductor.config.force_disable_caches = True
    torch.manual_seed(0)
    x = torch.randn(3, 8, device=device, dtype=torch.float16)
    want = grad_of(f, x)
    for emulate in (False, True):
        torch._dynamo.reset()
        with torch._inductor.config.patch(emulate_precision_casts=emulate):
            got = grad_of(torch.compile(f), x)
        print(f"torch {torch.__version__} {device}, emulate_precision_casts={emulate}: "
              f"NaN gradients {int(got.isnan().sum())}/{got.numel()} (eager {int(want.isnan().sum())}), "
              f"max error {(got.float() - want.float()).nan_to_num(float('inf')).abs().max().item():.3g}")


if __name__ == "__main__":
    main(*sys.argv[1:])
