"""Mismatches of the device soaks (torch 2.11, H100 and its CPU), rerun here on CPU through the real
backend (Inductor and the post-grad pass)."""
import os

import pytest
import torch

from bench.soak.check import run_case


@pytest.fixture
def every_compile_runs_the_pass(monkeypatch):
    import torch._inductor.config as inductor_config

    monkeypatch.setitem(os.environ, "EQSAT_CACHE", "0")
    monkeypatch.setattr(inductor_config, "fx_graph_cache", False)


@pytest.mark.slow  # two Inductor compiles of a training step, eqsat's and the plain one
def test_a_user_output_sliced_from_a_computed_buffer_keeps_eager_strides(every_compile_runs_the_pass):
    """Seed 4000485t: output 1, a slice of a ``sum`` the post-grad graph computes, came back with
    strides (16, 4, 1) where eager's are (8, 2, 1): Inductor laid the sum out as it chose, and a user
    output that is a view only gets its strides' order."""
    result = run_case(4000485, train=True, device="cpu", inductor=True)
    assert result["problems"] == [], result["problems"]
    assert result["changed"] >= 2, "the post-grad pass must have rewritten the forward graph"
