"""The harness' layout rules, checked on the source (issue 31): one device sync that every timer uses,
and scripts apart from the library they import."""
import ast
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


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
    return names


def test_scripts_and_library_are_apart():
    """bench/ is the harness the tests and scripts import; a standalone measurement (a module run as
    ``python -m``) lives in bench/scripts/, and no library module imports one."""
    library = [p for p in _sources("bench") if "scripts" not in p.relative_to(ROOT).parts]
    entry_points = [str(p.relative_to(ROOT)) for p in library
                    if p.name != "__main__.py" and re.search(r"^if __name__ == .__main__.:", p.read_text(encoding="utf-8"), re.M)]
    assert not entry_points, f"scripts outside bench/scripts/: {entry_points}"
    wrong = {str(p.relative_to(ROOT)): sorted(m for m in _imports(p) if m.startswith("bench.scripts"))
             for p in library}
    assert not {k: v for k, v in wrong.items() if v}, wrong
