"""``as_function`` writes every drawn program as source Python compiles: an autocast region whose drawn
op added no node (soak seeds 3001984, 3002484: a nested ``enabled=False`` block right before its
exit) gets ``pass`` as its body, and Dynamo still records the empty region as a user's ``with``."""
import random

import pytest
import torch

from bench.graphgen import random_graph
from bench.graphgen_ops import Features
from bench.graphgen_source import as_function
from bench.soak.cases import _draw, make_case
from captured import autocast_entries


def _program(seed: int):
    """Seed ``seed``'s program as the soak draws it (``make_case``'s first draw), always with an
    autocast region holding a nested ``enabled=False`` one."""
    rng = random.Random(seed)
    _, dtype, features = _draw(rng, seed % 2 == 0)
    features.autocast_region, features.autocast_off_inside = ("cpu", torch.bfloat16), 1.0
    return random_graph(rng, n_ops=rng.randint(2, 12), dtype=dtype, features=features)


def test_every_drawn_program_compiles_as_source():
    empty = 0
    for seed in range(1000):
        gm, _ = _program(seed)
        fn = as_function(gm)  # compiles the source: an empty ``with`` is an IndentationError
        empty += "pass" in fn.code
    assert empty  # the case the fix is for was drawn (seeds 138, 284, 375 of these)


def test_an_empty_region_is_recorded_as_the_user_wrote_it():
    gm, xs = _program(138)
    fn = as_function(gm)
    assert fn.code.count("with torch.autocast(") == 2 and "pass" in fn.code
    got, enabled = autocast_entries(fn, *xs)
    want = fn(*xs)
    torch.testing.assert_close(got, want)
    assert enabled == [True, False]


@pytest.mark.parametrize("seed", [3001984, 3002484])
def test_the_soak_seeds_draw_a_case(seed):
    case = make_case(seed, train=False)
    assert "pass" in case.gm.code and case.features["autocast_region"] == "cpu:bfloat16+off"
