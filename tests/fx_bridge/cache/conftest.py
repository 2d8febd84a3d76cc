import os
import subprocess
import sys

import pytest


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """Our cache on, in a fresh Inductor cache dir (never the user's)."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    monkeypatch.setenv("EQSAT_CACHE", "1")
    monkeypatch.delenv("EQSAT_CACHE_DIR", raising=False)
    monkeypatch.delenv("EQSAT_CACHE_SIZE_MB", raising=False)
    return tmp_path / "inductor" / "eqsat"


@pytest.fixture(scope="session")
def fresh_python():
    """``fresh_python(program, **env)``: run ``program`` in a new interpreter (nothing imported yet,
    as a user's second process), with this process's environment and path plus ``env``; its stdout."""
    def run(program: str, **env: str) -> str:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **env}
        done = subprocess.run([sys.executable, "-c", program], env=env, check=True, timeout=600,
                              capture_output=True, text=True)
        return done.stdout
    return run
