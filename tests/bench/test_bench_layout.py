"""The harness' layout rules, checked on the source (issue 31): one device sync that every timer uses."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _sources(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def test_one_device_sync():
    """A second sync helper drifts (one synced only "cuda", another "cuda:N", a third read the inputs'
    device): `bench.measure.sync` is the only caller of `torch.cuda.synchronize`."""
    callers = [str(p.relative_to(ROOT)) for p in _sources("bench", "fx_bridge", "eqsat", "rules")
               if re.search(r"cuda\.synchronize\(", p.read_text(encoding="utf-8"))]
    assert callers == ["bench/measure.py"], callers
    measure = (ROOT / "bench/measure.py").read_text(encoding="utf-8")
    assert len(re.findall(r"cuda\.synchronize\(", measure)) == 1, "measure.py itself calls sync()"
