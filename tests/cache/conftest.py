import pytest


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """Our cache on, in a fresh Inductor cache dir (never the user's)."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    monkeypatch.setenv("EQSAT_CACHE", "1")
    return tmp_path / "inductor" / "eqsat"
