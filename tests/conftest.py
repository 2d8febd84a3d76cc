import logging

import pytest
import torch

from fx_bridge import torch_compat


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each test compiles from scratch: Dynamo caches would hide what our backend does."""
    torch_compat.reset_dynamo()
    yield
    torch_compat.reset_dynamo()


@pytest.fixture
def eqsat_log(caplog):
    caplog.set_level(logging.INFO, logger="eqsat")
    return caplog
