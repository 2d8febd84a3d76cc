"""Issue 44: no module of the packages or the bench harness over ``MAX_LINES`` lines: a module that
long does more than one job (split it by job, as ``fx_bridge/lowering/`` and ``bench/soak/`` are)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("eqsat", "rules", "fx_bridge", "bench")
MAX_LINES = 600


def long_modules(root: Path = ROOT, limit: int = MAX_LINES) -> dict[str, int]:
    """Modules (repo-relative path) over ``limit`` lines, with their line counts."""
    sizes = {p.relative_to(root).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
             for folder in FOLDERS for p in sorted((root / folder).rglob("*.py"))}
    return {path: n for path, n in sizes.items() if n > limit}


def test_no_module_is_over_600_lines():
    assert not long_modules(), f"split these modules by job (issue 44): {long_modules()}"


def test_the_check_names_a_long_module(tmp_path):
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (tmp_path / "bench" / "short.py").write_text("x = 1\n" * MAX_LINES)
    assert long_modules(tmp_path) == {"bench/long.py": MAX_LINES + 1}
