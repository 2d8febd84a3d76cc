"""The CLI on real files: a PEP 263 coding line (with and without a docstring or shebang above the
code), CRLF line endings, no final newline, and a diff file that is already there. The CLI runs from
the project root and the diff is applied there with GNU `patch -p1`, as a reviewer would.

One project holds every case and the CLI mends it in one run (each run is a Python process that
imports torch and traces the model: most of these tests' time), refused first over a diff file
already there; each test checks its case in that run."""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest
import torch

pytestmark = pytest.mark.skipif(shutil.which("patch") is None, reason="needs GNU patch")

SOURCE = textwrap.dedent('''\
    """A user's module."""
    import torch


    def forward(x):
        y = x * 2  # keep this comment
        print("y", y)
        if y.sum() > 0:  # data-dependent
            y = y + 1
        return y * 3
''')


def _user_files(tmp_path, files: dict[str, bytes]) -> None:
    """The user's modules, and a factory whose model calls each one's `forward`."""
    for name, data in files.items():
        (tmp_path / f"{name}.py").write_bytes(data)
    calls = " + ".join(f"{name}.forward(x)" for name in files)
    (tmp_path / "factory.py").write_text(
        f"import torch\nimport {', '.join(files)}\n\n\ndef model(x):\n    return {calls}\n\n\n"
        "def factory():\n    return model, (torch.arange(3.0),)\n")


def _mend_cli(tmp_path, *args):
    """The CLI run from the project root `tmp_path`, as a user would."""
    path = [str(tmp_path), os.getcwd(), os.environ.get("PYTHONPATH", "")]
    return subprocess.run(
        [sys.executable, "-m", "eqsat_torch.mend", "factory:factory", "--no-explain", *args], cwd=tmp_path,
        capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(path)), timeout=300,
    )


def _apply(root, diff) -> subprocess.CompletedProcess:
    """`patch -p1` from the project root, with no fuzz: all context must match."""
    command = ["patch", "-p1", "--batch", "--fuzz=0", "--no-backup-if-mismatch", "-d", str(root), "-i", str(diff)]
    return subprocess.run(command, capture_output=True, text=True)


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


LATIN1 = "# -*- coding: latin-1 -*-\n" + SOURCE.replace("A user's", "Caf\xe9 \x85 cr\xe8me,").replace('"y"', '"y\xe9"')
# coding lines as the first lines of files without a docstring: the runtime import must go below them
CODING_FIRST = "# -*- coding: latin-1 -*-\n" + LATIN1.split("\n", 2)[2]
SHEBANG_CODING = "#!/usr/bin/env python\n# vim: set fileencoding=latin-1 :\n" + LATIN1.split("\n", 2)[2]
# bare: no final newline, first in the diff, so its last line must not run into the next file's header
FILES = {"bare": SOURCE.rstrip("\n").encode(), "crlf": SOURCE.replace("\n", "\r\n").encode(), "lf": SOURCE.encode(),
         "latin": LATIN1.encode("latin-1"), "latin_coding_first": CODING_FIRST.encode("latin-1"),
         "latin_shebang": SHEBANG_CODING.encode("latin-1")}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The user's files mended through the CLI: refused over a review in progress, then with --force;
    the diff applied with `patch`."""
    root = tmp_path_factory.mktemp("project")
    _user_files(root, FILES)
    x = torch.arange(3.0)
    expected = _load(root / "latin.py", "latin").forward(x)
    diff = root / "mend.patch"
    diff.write_text("a review in progress\n")
    refused = _mend_cli(root, "--diff", str(diff))
    kept = diff.read_text()
    forced = _mend_cli(root, "--diff", str(diff), "--force")
    assert forced.returncode == 0, forced.stderr[-2000:]
    applied = _apply(root, diff)
    assert applied.returncode == 0, applied.stdout
    return SimpleNamespace(root=root, diff=diff, refused=refused, kept=kept, forced=forced, x=x, expected=expected)


def test_every_break_of_every_file_is_mended(project):
    before, after = re.fullmatch(r"breaks: (\d+) -> (\d+)", project.forced.stdout.splitlines()[-1]).groups()
    assert int(before) >= 2 * len(FILES) and int(after) == 0  # each file breaks at its print and its if


def test_latin1_file_with_coding_line_mends_and_stays_latin1(project):
    """0xE9 is not UTF-8; 0x85 decodes to U+0085, a line break to `str.splitlines` but not to Python."""
    user = project.root / "latin.py"
    mended = user.read_bytes()
    assert mended.startswith(b'# -*- coding: latin-1 -*-\n"""Caf\xe9 \x85 cr\xe8me, module."""\n'
                             b"import eqsat_torch.mend.runtime as __mend_rt__\nimport torch\n")
    assert b"__mend_rt__.defer(" in mended and b"y\xe9" in mended
    assert torch.equal(_load(user, "latin_mended").forward(project.x), project.expected)


@pytest.mark.parametrize("name, first_lines", [
    ("latin_coding_first", b"# -*- coding: latin-1 -*-\n"),
    ("latin_shebang", b"#!/usr/bin/env python\n# vim: set fileencoding=latin-1 :\n")])
def test_coding_line_stays_first_without_a_docstring(project, name, first_lines):
    """The runtime import goes below a shebang and a PEP 263 coding line: above them, Python reads
    the latin-1 file as UTF-8 (`SyntaxError ... 'utf-8' codec`)."""
    user = project.root / f"{name}.py"
    mended = user.read_bytes()
    assert mended.startswith(first_lines + b"import eqsat_torch.mend.runtime as __mend_rt__\nimport torch\n")
    assert b"__mend_rt__.defer(" in mended and b"y\xe9" in mended
    assert torch.equal(_load(user, f"{name}_mended").forward(project.x), project.expected)


def test_diff_keeps_each_files_line_endings_and_applies_byte_for_byte(project):
    """A CRLF file and one without a final newline, mended with an LF twin in one run: after `patch`,
    each equals the mended twin in its own line endings."""
    bare, crlf, lf = ((project.root / f"{name}.py").read_bytes() for name in ("bare", "crlf", "lf"))
    assert b"__mend_rt__.select(" in lf and lf.endswith(b"\n")
    assert crlf == lf.replace(b"\n", b"\r\n")
    assert bare == lf[:-1]


def test_existing_diff_file_is_kept_unless_force(project):
    diff = project.diff
    assert project.refused.returncode == 2
    assert f"{diff} exists; pass --force to overwrite it" in project.refused.stderr
    assert project.refused.stdout == ""  # refused before mending, not after minutes of it
    assert project.kept == "a review in progress\n"
    assert b"\n--- a/bare.py\n+++ b/bare.py\n" in diff.read_bytes()  # --force wrote it


def test_diff_names_paths_from_the_project_root_and_says_it_needs_eqsat(project):
    """`patch -p1` from the root applied it (the fixture); its header says how, and that the mended
    code imports eqsat's runtime helper, which must be installed where it runs."""
    text = project.diff.read_bytes().decode("latin-1")
    head = text.split("\n--- ", 1)[0]
    assert "imports eqsat's runtime helper module eqsat_torch.mend.runtime" in head
    assert "eqsat must be installed wherever the mended code runs" in head and "patch -p1" in head
    names = re.findall(r"^(?:---|\+\+\+) (\S+)", text, flags=re.M)
    assert sorted(set(names)) == sorted({f"{ab}/{name}.py" for name in FILES for ab in "ab"})
    assert "eqsat_torch.mend.runtime" in project.forced.stdout.splitlines()[-2]
