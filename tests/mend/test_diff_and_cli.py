"""The reviewable diff keeps comments and formatting, the patched file really runs break-free,
and the CLI ends with `breaks: B -> A`."""

import importlib.util
import os
import subprocess
import sys
import textwrap

import torch

from fx_bridge.mend import detect, mend
from fx_bridge.mend.diff import rewrite_file, unified_diff

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
        diff = unified_diff(applied).decode()  # bytes: each file in its own encoding (UTF-8 here)
    finally:
        report.patch.undo()
    for kept in ('"""A user\'s module."""', "# scale first", "# keep this comment", "return y * 3   # odd spacing kept"):
        assert kept in new_text
    assert diff.startswith(f"--- a{original}") and "-    print(\"y\", y)" in diff
    patched = tmp_path / "user_model_patched.py"
    patched.write_text(new_text)
    fixed = _load(patched, "user_model_patched")
    assert torch.equal(fixed.forward(x), expected)
    assert detect(fixed.forward, (x,), explain=False).breaks == 0


def test_cli_reports_breaks_and_writes_diff(tmp_path):
    here = os.path.dirname(__file__)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here, os.getcwd(), os.environ.get("PYTHONPATH", "")]))
    out = tmp_path / "mend.patch"
    result = subprocess.run(
        [sys.executable, "-m", "fx_bridge.mend", "mend_samples:mixed_factory", "--diff", str(out)],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.strip().splitlines()
    assert lines[-1] == "breaks: 2 -> 0"
    assert "outputs vs original: equal" in result.stdout
    assert "[print/logging/warnings] GB0059" in result.stdout and "[data-dependent control flow] GB0170" in result.stdout
    assert "__mend_rt__.select(" in out.read_text()


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
