"""The as_strided-after-batched-projections program (trust issue, case 0) on a real device.

    python -m bench.scripts.layout_check --device cuda

Three projections of one input read back with ``as_strided`` (the attention pattern Optimus once
broke). Compiled with the eqsat backend and Inductor, with and without weights frozen, and once with
the layout pin switched off to show what it prevents; prints the max error against eager and which
batch rules the extracted program used.
"""
from __future__ import annotations

import argparse

import torch
import torch.nn as nn

from eqsat.cost import CostModel
from eqsat_torch import eqsat_backend
from eqsat_torch.inductor import compat
from eqsat_torch.lowering import lower as lower_mod


class QKVAsStrided(nn.Module):
    def __init__(self, s: int, b: int, h: int, hd: int):
        super().__init__()
        self.shape = (s, b, h, hd)
        self.q, self.k, self.v = (nn.Linear(h * hd, h * hd) for _ in range(3))

    def forward(self, x):
        s, b, h, hd = self.shape
        q, k, v = (p(x).as_strided((h, b * s, hd), (hd, h * hd, 1)) for p in (self.q, self.k, self.v))
        return torch.bmm(torch.bmm(q, k.transpose(1, 2)).softmax(-1), v)


def run(device: str, pin: bool, frozen: bool) -> str:
    compat.reset_dynamo()
    torch.manual_seed(0)
    model = QKVAsStrided(8, 2, 4, 16).to(device)
    x = torch.randn(8, 2, 64, device=device)
    saved = lower_mod.layout_pinned
    if not pin:
        lower_mod.layout_pinned = lambda nodes: set()
    try:
        backend = eqsat_backend(cost=CostModel.for_device(device, frozen_params=frozen), post_grad=False)
        with torch.no_grad():
            out = torch.compile(model, backend=backend)(x)
            err = (out - model(x)).abs().max().item()
    finally:
        lower_mod.layout_pinned = saved
    used = sorted(k for k in backend.reports[0].rules_used if k.startswith("batch"))
    return f"pin={pin} frozen={frozen}: max abs error {err:.3g}, batch rules used {used or 'none'}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args(argv)
    for frozen in (False, True):
        for pin in (True, False):
            print(run(args.device, pin, frozen), flush=True)


if __name__ == "__main__":
    main()
