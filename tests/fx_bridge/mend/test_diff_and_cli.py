"""The reviewable diff keeps comments and formatting, the patched file really runs break-free,
the CLI ends with `breaks: B -> A` (whatever TORCH_LOGS says) and refuses bad arguments before mending."""

import importlib.util
import logging
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import mend_samples
from eqsat_torch.mend import detect, mend
from eqsat_torch.mend.diff import project_path, rewrite_file, unified_diff

SOURCE = textwrap.dedent('''\
    """A user's module."""
    import torch


    def forward(x):
        # scale first
        y = x * 2  # keep this comment
        print("y", y)
        if y.sum() > 0:  # data-dependent
            y = y + 1
        return y * 3   # odd spacing kept
''')


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as a normal import would: deferred calls are resolved by module name
    spec.loader.exec_module(module)
    return module


def test_diff_keeps_comments_and_patched_file_is_break_free(tmp_path):
    original = tmp_path / "user_model.py"
    original.write_text(SOURCE)
    module = _load(original, "user_model")
    x = torch.arange(3.0)
    expected = module.forward(x)
    report = mend(module.forward, (x,), explain=False)
    try:
        assert (report.before.breaks, report.after.breaks) == (2, 0)
        applied = report.applied
        new_text = rewrite_file(SOURCE, applied)
        diff, outside = unified_diff(applied, str(tmp_path))  # bytes: each file in its own encoding (UTF-8 here)
        diff = diff.decode()
    finally:
        report.patch.undo()
    for kept in ('"""A user\'s module."""', "# scale first", "# keep this comment", "return y * 3   # odd spacing kept"):
        assert kept in new_text
    assert outside == [] and "\n--- a/user_model.py\n+++ b/user_model.py\n" in diff and "-    print(\"y\", y)" in diff
    patched = tmp_path / "user_model_patched.py"
    patched.write_text(new_text)
    fixed = _load(patched, "user_model_patched")
    assert torch.equal(fixed.forward(x), expected)
    assert detect(fixed.forward, (x,), explain=False).breaks == 0


def _cli(*args, **env):
    here = os.path.dirname(__file__)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here, os.getcwd(), os.environ.get("PYTHONPATH", "")]), **env)
    return subprocess.run([sys.executable, "-m", "eqsat_torch.mend", *args],
                          capture_output=True, text=True, env=env, timeout=300)


def test_cli_reports_breaks_and_writes_diff_whatever_torch_logs_says(tmp_path):
    """TORCH_LOGS (any value) made Dynamo ignore the mender's `set_logs(graph_breaks=True)`: it saw
    no break sites and printed `breaks: 2 -> 2`, 0 rewrites."""
    out = tmp_path / "mend.patch"
    result = _cli("mend_samples:mixed_factory", "--diff", str(out), TORCH_LOGS="eqsat")
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.strip().splitlines()
    assert lines[-1] == "breaks: 2 -> 0"
    assert "outputs vs original: equal" in result.stdout
    assert "[print/logging/warnings] GB0059" in result.stdout and "[data-dependent control flow] GB0170" in result.stdout
    diff = out.read_text()
    sample = os.path.relpath(os.path.realpath(os.path.join(os.path.dirname(__file__), "mend_samples.py")),
                             os.path.realpath(os.getcwd()))  # the CLI's default --root is its working directory
    assert "__mend_rt__.select(" in diff and f"\n--- a/{sample}\n" in diff


def test_detect_keeps_the_users_log_settings(monkeypatch):
    """Capturing graph breaks must not reset what the user set with `set_logs` (it used to call
    `set_logs()` afterwards, putting every torch logger back to its default)."""
    monkeypatch.delenv("TORCH_LOGS", raising=False)  # set_logs is ignored while it is set
    dynamo = logging.getLogger("torch._dynamo")
    torch._logging.set_logs(dynamo=logging.INFO)
    try:
        assert detect(mend_samples.mixed, (torch.arange(4.0),), explain=False).breaks == 2
        assert dynamo.level == logging.INFO
    finally:
        torch._logging.set_logs()


@pytest.mark.parametrize("args, message", [
    (["mend_samples", "--diff", "{tmp}/out.patch"], "expected module:function"),
    (["no_such_module_xyz:factory", "--diff", "{tmp}/out.patch"], "cannot import 'no_such_module_xyz'"),
    (["mend_samples:no_such_factory", "--diff", "{tmp}/out.patch"], "has no function 'no_such_factory'"),
    (["mend_samples:mixed_factory", "--diff", "{tmp}/out.patch", "--rounds", "0"], "must be at least 1"),
    (["mend_samples:mixed_factory", "--diff", "{tmp}/missing/out.patch"], "cannot write --diff"),
    (["mend_samples:mixed_factory", "--diff", "{tmp}/dangling.patch"], "exists (a symlink to a missing file)"),
    (["mend_samples:mixed_factory", "--diff", "{tmp}"], "is a directory"),
    (["mend_samples:mixed_factory", "--diff", "{tmp}/out.patch", "--root", "{tmp}/missing"], "is not a directory"),
])
def test_cli_refuses_before_mending_with_status_2(tmp_path, args, message):
    """A dangling symlink as --diff used to be found only when writing: after all the mending, with
    a traceback, the diff lost. Every refusal now comes first, with exit status 2 and nothing mended."""
    (tmp_path / "dangling.patch").symlink_to(tmp_path / "gone")
    result = _cli(*[a.format(tmp=tmp_path) for a in args])
    assert result.returncode == 2, (result.stdout[-1000:], result.stderr[-2000:])
    assert message in result.stderr and result.stdout == ""  # the sample prints when it runs: it did not
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling.patch"]  # no diff, no temporary left


def test_project_path_is_relative_to_the_root_or_none_outside_it(tmp_path):
    (tmp_path / "pkg").mkdir()
    assert project_path(str(tmp_path / "pkg" / "model.py"), str(tmp_path)) == "pkg/model.py"
    assert project_path(str(tmp_path / "pkg" / "model.py"), str(tmp_path / "pkg" / "..")) == "pkg/model.py"
    assert project_path(str(tmp_path / "model.py"), str(tmp_path / "pkg")) is None
    assert project_path(str(tmp_path.parent / f"{tmp_path.name}x" / "model.py"), str(tmp_path)) is None
    assert project_path(str(tmp_path / "model.py"), "/") == os.path.realpath(tmp_path / "model.py").lstrip("/")  # --root /


ROWS_SOURCE = textwrap.dedent('''\
    import torch


    def forward(x):
        shape_list = [(4, 4), (2, 2)]
        shapes = torch.as_tensor(shape_list, dtype=torch.long)
        out = []
        pos = 0
        for level, (h, w) in enumerate(shapes):
            # one level of the table
            out.append(x[:, pos : pos + h * w].view(x.shape[0], h, w).sum(-1))
            pos += h * w
        return torch.cat(out, -1)
''')


def test_rows_diff_changes_only_the_loop_header_and_the_table(tmp_path):
    original = tmp_path / "rows_model.py"
    original.write_text(ROWS_SOURCE)
    module = _load(original, "rows_model")
    x = torch.randn(2, 20)
    expected = module.forward(x)
    report = mend(module.forward, (x,), explain=False)
    try:
        assert report.before.breaks >= 1 and report.after.breaks == 0
        new_text = rewrite_file(ROWS_SOURCE, report.applied)
    finally:
        report.patch.undo()
    assert "    for level, (h, w) in enumerate(__mend_rt__.table_rows(shapes, 2, 65536)):\n        # one level of the table\n" \
        in new_text
    assert "shapes = __mend_rt__.int_table(torch.as_tensor(shape_list, dtype=torch.long), shape_list)" in new_text
    patched = tmp_path / "rows_model_patched.py"
    patched.write_text(new_text)
    fixed = _load(patched, "rows_model_patched")
    assert torch.equal(fixed.forward(x), expected)
    assert detect(fixed.forward, (x,), explain=False).breaks == 0
