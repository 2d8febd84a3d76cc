import logging
import os

import pytest
import torch

from eqsat_torch.inductor import compat


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each test compiles from scratch: Dynamo caches would hide what our backend does."""
    compat.reset_dynamo()
    yield
    compat.reset_dynamo()


# Our persistent cache (eqsat_torch.cache) is off in tests: a test that patches the optimizer must see
# it run, not an entry an earlier test or process stored. tests/cache switches it on, in a temp dir.
os.environ["EQSAT_CACHE"] = "0"


@pytest.fixture
def eqsat_log(caplog):
    caplog.set_level(logging.INFO, logger="eqsat")
    return caplog


@pytest.fixture
def uncached_inductor():
    """Inductor compiles afresh: a test that reads what our post-grad pass did must see it run (the
    FX graph and AOTAutograd caches replay an earlier process's compile without calling it)."""
    import torch._inductor.config as inductor_config

    with inductor_config.patch(force_disable_caches=True):
        yield
