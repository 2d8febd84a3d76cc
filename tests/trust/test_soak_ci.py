"""CI's share of the soak (``python -m bench.soak`` runs 10,000): 200 random graphs through the
backend, inference and training, values, gradients and aliasing against eager."""
import logging

import pytest

from bench.soak import run_case, summarize


@pytest.mark.parametrize("chunk", range(10))
def test_random_graphs_through_the_backend_match_eager(chunk):
    logging.getLogger("eqsat").setLevel(logging.ERROR)
    try:
        results = [run_case(100_000 + 20 * chunk + i, train=i % 2 == 1) for i in range(20)]
    finally:
        logging.getLogger("eqsat").setLevel(logging.NOTSET)
    bad = [r for r in results if r["problem"]]
    assert not bad, (summarize(results), bad)
    assert any(r["changed"] for r in results), summarize(results)  # the soak exercises rewrites
