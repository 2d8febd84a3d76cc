"""A compile served from the cache costs what Inductor's own warm compile costs, plus the hit: it
never imports what only the optimizer needs (egglog, the rule library, scipy), about 1 s on a
loaded machine. (networkx is imported by torch's AOTAutograd for any compile, so it is only ours
to avoid if torch stops loading it.)"""
import json

import pytest

PROGRAM = """
import json, sys
import torch
torch.compile(lambda x: x + 1, backend="eager")(torch.randn(2))  # what any torch.compile loads
before = set(sys.modules)
from eqsat_torch.backend import last_reports
def f(x):
    return torch.cat([torch.sigmoid(p) for p in torch.split(x, 4, dim=1)], dim=1)
x = torch.randn(8, 16)
torch.testing.assert_close(torch.compile(f, backend="eqsat", options={"inner": INNER})(x), f(x))
print(json.dumps({"cache": [r.cache for r in last_reports()], "added": sorted(set(sys.modules) - before)}))
"""
OPTIMIZER_ONLY = ("egglog", "networkx", "scipy", "highspy", "eqsat_rules.library", "eqsat.egraph", "eqsat_torch.pipeline")


@pytest.mark.parametrize("inner", ["eager", pytest.param("inductor", marks=pytest.mark.slow)])
def test_a_warm_compile_imports_nothing_of_the_optimizer(cache_dir, fresh_python, inner):
    program = PROGRAM.replace("INNER", repr(inner))
    cold = json.loads(fresh_python(program))
    assert cold["cache"] == ["miss"] and "egglog" in cold["added"]  # the optimizer ran: it needs them
    warm = json.loads(fresh_python(program))
    assert warm["cache"] == ["hit"]
    assert [m for m in warm["added"] if m.split(".")[0] in OPTIMIZER_ONLY or m in OPTIMIZER_ONLY] == []
