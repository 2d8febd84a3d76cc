"""``python -m bench.scripts.verify_candidates``: per zoo graph, the launches of every candidate
Inductor measured and the winner (fake H200 on this CPU)."""
import pytest

from bench.scripts import verify_candidates
from eqsat_torch.inductor import decide


@pytest.mark.slow
def test_every_program_between_is_counted_with_share_one(capsys, monkeypatch):
    monkeypatch.setattr(decide, "VERIFY_SHARE", decide.VERIFY_SHARE)  # main sets it: restored after
    verify_candidates.main(["--models", "ten_unequal_linears", "--share", "1"])
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| ten_unequal_linears |"))
    cells = [c.strip() for c in row.split("|")[1:-1]]
    counted = dict(part.rsplit(" ", 1) for part in cells[2].split(", "))
    assert len(counted) > 2 and all(v.isdigit() for v in counted.values()), cells  # every one measured
    assert int(counted[cells[3]]) == min(map(int, counted.values()))  # ties go to fewer bytes
