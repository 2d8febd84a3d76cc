import logging

import pytest
import torch


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each test compiles from scratch: Dynamo caches would hide what our backend does."""
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.fixture
def eqsat_log(caplog):
    caplog.set_level(logging.INFO, logger="eqsat")
    return caplog
