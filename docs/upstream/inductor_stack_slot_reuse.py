"""Inductor hands a stack's buffer to another kernel while a value computed in place in one of its
slots is still live (torch 2.13 CPU: max error 111; no freezing needed).

``b`` is an operand of ``torch.stack`` and read again later. Inductor computes ``b`` straight into
its slot of the stack's buffer (an alias: ``buf4 = reinterpret_tensor(buf5, ..., 16384)``). The
kernel computing ``c`` reads ``b`` last, so in-place buffer reuse gives ``c`` that slot
(``buf10 = buf4; del buf4  # reuse``), and ``c``'s last reader hands it on again (``buf12``). When the
stack's last reader (``bmm`` into ``r``) is done, the stack's buffer is freed and reused whole for the
final ``bmm``'s output (``buf14 = reinterpret_tensor(buf5, ...); del buf5  # reuse``) while that
``bmm`` still reads ``buf12`` inside it. Liveness follows the alias one step, not the chain of in-place
reuses behind it (compare pytorch#100314 / #100332, which tracked direct aliases of cat inputs).
``torch._inductor.config.inplace_buffers = False`` (or ``allow_buffer_reuse = False``) makes it right.

eqsat's batched linears make this pattern in BART (the residual stream stacked with another layer's
input); the backend turns ``inplace_buffers`` off for a graph that stacks a value read elsewhere
(``fx_bridge/inductor/workarounds.py``). This reproducer has no eqsat import; it is for upstream.
Run: ``python docs/upstream/inductor_stack_slot_reuse.py`` (add ``cuda`` for the GPU);
``TORCH_LOGS=output_code`` shows the reuse lines above.
"""
import sys

import torch


def f(x, y, w1, w2):
    a = torch.relu(x)                                           # [2, 64, 128]
    b = torch.layer_norm(y + 1.0, (128,))                       # computed straight into the stack's slot 1
    r = torch.bmm(torch.stack([a, b]).reshape(2, 128, 128), w1)  # the stack's last reader
    c = torch.layer_norm(b + r[1].reshape(2, 64, 128), (128,))  # b's last reader: c takes b's slot
    q = (c.reshape(128, 128) @ w2).reshape(2, 64, 4, 32).transpose(1, 2)
    k = r[0].reshape(2, 64, 4, 32).transpose(1, 2)
    return q @ k.transpose(2, 3), r                             # [2, 4, 64, 64]: the stack's size


def main(device: str = "cpu") -> None:
    torch._inductor.config.force_disable_caches = True
    torch.manual_seed(0)
    args = [torch.randn(2, 64, 128), torch.randn(2, 64, 128), torch.randn(2, 128, 128) / 11,
            torch.randn(128, 128) / 11]
    args = [a.to(device) for a in args]
    with torch.no_grad():
        want = f(*args)[0]
        got = torch.compile(f)(*args)[0]
        torch._dynamo.reset()
        with torch._inductor.config.patch(inplace_buffers=False):
            fixed = torch.compile(f)(*args)[0]
    print(f"torch {torch.__version__} {device}: max error {(got - want).abs().max().item():.3g}; "
          f"with inplace_buffers=False {(fixed - want).abs().max().item():.3g}")


if __name__ == "__main__":
    main(*sys.argv[1:])
