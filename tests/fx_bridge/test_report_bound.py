"""A long-running process compiles graph after graph: the backend keeps only the newest reports."""
import torch

from eqsat_torch import eqsat_backend
from eqsat_torch.backend import REPORTS_KEPT, BoundedReports


def test_bounded_reports_keep_the_newest_and_stay_list_like():
    kept = BoundedReports(maxlen=3)
    for i in range(5):
        kept.append(i)
    assert kept == [2, 3, 4] and kept[-1] == 4 and len(kept) == 3 and list(kept) == [2, 3, 4]
    assert kept + BoundedReports() == [2, 3, 4]


def test_backend_reports_are_bounded():
    backend = eqsat_backend(inner="eager")
    assert backend.reports.maxlen == backend.post_grad_reports.maxlen == REPORTS_KEPT == 256
    backend.reports.maxlen = 2  # three graphs: the oldest report is dropped
    for k in (1, 2, 3):
        fn = torch.compile(lambda x, k=k: torch.cat([p * k for p in torch.split(x, 2)]), backend=backend)
        torch.testing.assert_close(fn(torch.ones(4)), torch.full((4,), float(k)))
    assert len(backend.reports) == 2
    assert [r.graph_nodes > 0 for r in backend.reports] == [True, True]
