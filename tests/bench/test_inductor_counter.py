"""Inductor's CPU kernel counter, as the harness reads it (bench.inductor_metrics): one per loop
nest in the emitted C++ code, not one more per nest of an outer-loop fusion try Inductor abandoned."""
import re

import torch

from bench import inductor_metrics
from eqsat_torch.inductor import compat


def _compile_cold(f, *inputs) -> str:
    compat.reset_dynamo()
    inductor_metrics.reset()
    with inductor_metrics.inductor_config_patch("inductor"), inductor_metrics.capture_output_code() as codes:
        torch.compile(f, backend="inductor")(*inputs)
    (code,) = codes
    return code


def _outer_loops(code: str) -> int:
    """Loop nests in the emitted C++: each starts with a loop over the first index, ``x0``."""
    return len(re.findall(r"for\(int64_t x0=", code))


def test_a_reduction_with_an_epilogue_counts_its_two_loop_nests():
    """sum(x[:, None] * w, -1) + b: the reduction and the bias add are tried as one outer-loop fused
    node, then emitted as two loop nests; Inductor's raw counter says 4."""
    x, w, b = torch.randn(64, 16), torch.randn(8, 16), torch.randn(8)
    code = _compile_cold(lambda x, w, b: (x[:, None, :] * w).sum(-1) + b, x, w, b)
    counts = inductor_metrics.kernel_counts()
    assert counts["discarded"] > 0, counts
    assert counts["generated"] == _outer_loops(code) == 2, counts


def test_nothing_is_subtracted_without_an_abandoned_try():
    x, y = torch.randn(64, 16), torch.randn(64, 32)
    code = _compile_cold(lambda x, y: torch.cat([x.sin(), y.cos()], 1).relu(), x, y)
    counts = inductor_metrics.kernel_counts()
    assert counts["discarded"] == 0
    assert counts["generated"] == _outer_loops(code) == 2, counts
