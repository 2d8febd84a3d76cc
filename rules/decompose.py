"""Optimus' ``decompose_mm`` (decompose_mem_bound_mm.py) as algebra: a matmul whose inner and output
dims are tiny is memory-bound, and as a broadcast multiply summed over the inner dim it is one
reduction Inductor can fuse with the pointwise ops around it (an extern mm call fuses with nothing).

    linear(x, w, b)[…, j] = Σ_k x[…, k] · w[j, k] + b[j] = sum(x[…, None, :] · w, last dim) + b
    mm(a, b)[i, j]     = Σ_k a[i, k] · b[k, j]     = sum(a[:, :, None] · b[None], dim 1)
    bmm(a, b)[n, i, j] = Σ_k a[n, i, k] · b[n, k, j] = sum(a[..., None] · b[:, None], dim 2)

Optimus decides by thresholds (GPU: first dim ≥ 10240, the others < 32); here the guard only keeps
the broadcast product small (inner and output dims < 32, so it never holds more than 1024 values per
output row) and the cost model decides whether it pays. float32 only: ``sum`` of ints is int64, and in
half precision each product would be rounded before the sum (mm accumulates unrounded), which eager
execution of the rewritten graph shows as differences beyond half-precision tolerances.
"""
from eqsat_rules.dsl import addmm, binary, bmm, linear, mm, reduce, rewrite, tensor, unsqueeze

a, b, c, x, w = tensor("a b c x w")
SMALL = 32  # Optimus' bound on the inner and output dims


def _product_sum(a, b, batch: int):
    """Σ over the inner dim of a's columns times b's rows, with ``batch`` leading batch dims."""
    return reduce("sum", binary("mul", unsqueeze(a, batch + 2), unsqueeze(b, batch)), [batch + 1], 0)


def _small(a, b, batch: int) -> list:
    return [a.shape[batch + 1] < SMALL, b.shape[batch + 1] < SMALL, a.dtype == "float32"]


def _r(name, lhs, rhs, when):
    return rewrite(name, lhs, rhs, when, family="decompose")


DECOMPOSE_DSL = [
    _r("decompose_linear", linear(x, w, b),
       binary("add", reduce("sum", binary("mul", unsqueeze(x, x.ndim - 1), w), [x.ndim], 0), b),
       [w.shape[0] < SMALL, w.shape[1] < SMALL, b.ndim == 1, x.ndim >= 1, x.dtype == "float32"]),
    _r("decompose_mm", mm(a, b), _product_sum(a, b, 0), _small(a, b, 0)),
    _r("decompose_bmm", bmm(a, b), _product_sum(a, b, 1), _small(a, b, 1)),
    _r("decompose_addmm", addmm(c, a, b), binary("add", c, _product_sum(a, b, 0)), _small(a, b, 0)),
]
