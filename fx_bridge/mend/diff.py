"""Reviewable unified diff of the rewrites against the user's files (libcst keeps comments and
formatting everywhere outside the replaced statements)."""

from __future__ import annotations

import ast
import difflib
import io
import os
import re
from collections import defaultdict

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from eqsat_torch.mend.plan import Decision
from eqsat_torch.mend.predicate import RT
from eqsat_torch.mend.source import read_source

RUNTIME_MODULE = "eqsat_torch.mend.runtime"
IMPORT = f"import {RUNTIME_MODULE} as {RT}"
_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+")  # PEP 263's regex, as tokenize reads it


class _Splice(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, replacements: dict[tuple[int, int], str]):
        super().__init__()
        self.replacements = replacements

    def _swap(self, original, updated):
        start = self.get_metadata(PositionProvider, original).start
        code = self.replacements.pop((start.line, start.column), None)
        if code is None:
            return updated
        body = list(cst.parse_module(code).body)
        body[0] = body[0].with_changes(leading_lines=original.leading_lines)
        return cst.FlattenSentinel(body)

    def leave_For(self, original, updated):
        """A loop header rewrite ([Rows]): only the iterable changes, the body stays as written."""
        start = self.get_metadata(PositionProvider, original).start
        code = self.replacements.pop((start.line, start.column), None)
        if code is None:
            return updated
        return updated.with_changes(iter=cst.parse_module(code).body[0].iter)

    def leave_If(self, original, updated):
        return self._swap(original, updated)

    def leave_SimpleStatementLine(self, original, updated):
        if len(original.body) != 1:
            return updated
        return self._swap(original, updated)


class _KeepMultiline(ast._Unparser):
    """ast.unparse, except that original multi-line expressions (implicitly concatenated
    messages, wrapped arguments) are copied verbatim from the file, keeping the diff readable."""

    def __init__(self, text: str, originals: set[int]):
        super().__init__()
        self.text, self.originals = text, originals

    def traverse(self, node):
        if isinstance(node, ast.expr) and id(node) in self.originals:
            segment = ast.get_source_segment(self.text, node)
            if segment and "\n" in segment:
                self.write(f"({segment})")
                return
        super().traverse(node)


def _render(text: str, decision: Decision) -> str:
    originals = {id(n) for n in ast.walk(decision.stmt)}
    return "\n".join(_KeepMultiline(text, originals).visit(s) for s in decision.replacement) + "\n"


def rewrite_file(text: str, decisions: list[Decision]) -> str:
    """`text` with the decisions' statements replaced; new lines take the file's line ending
    (libcst's `default_newline`, that of its first line) and all else is kept as written."""
    module = cst.parse_module(text)
    newline = module.default_newline
    lf_text = text.replace("\r\n", "\n").replace("\r", "\n")  # same lines and columns, one line ending
    replacements = {(d.stmt.lineno, d.stmt.col_offset): _render(lf_text, d).replace("\n", newline)
                    for d in decisions}
    new = MetadataWrapper(module).visit(_Splice(replacements)).code
    if RT not in text:
        new = _add_import(new, newline)
    return new


def _leading_lines(lines: list[str]) -> int:
    """How many of the first lines must stay first: a shebang (line 1) and a PEP 263 coding line,
    which Python reads only on line 1 or 2 (moved below an import, the file is read as UTF-8)."""
    keep = 0
    for i, line in enumerate(lines[:2]):
        if _CODING.match(line) or (i == 0 and line.startswith("#!")):
            keep = i + 1
    return keep


def _add_import(text: str, newline: str) -> str:
    """Insert the runtime import after the shebang/coding lines, the module docstring and
    `from __future__` imports."""
    tree = ast.parse(text)
    after = 0
    for i, node in enumerate(tree.body):
        is_doc = i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if is_doc or (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
            after = node.end_lineno
    lines = io.StringIO(text, newline="").readlines()  # str.splitlines also splits at \f, \x85, \u2028, ...
    after = max(after, _leading_lines(lines))
    return "".join(lines[:after] + [IMPORT + newline] + lines[after:])


def mended_source(filename: str, decisions: list[Decision]) -> tuple[bytes, bytes]:
    """The file's bytes, and the mended file's: in the file's own encoding and line endings."""
    text, encoding = read_source(filename)
    with open(filename, "rb") as f:
        old = f.read()
    return old, rewrite_file(text, decisions).encode(encoding)


def _marked(lines):
    """`patch` reads a diff line without an ending as the end of the diff: mark it as git does."""
    for line in lines:
        yield line if line.endswith((b"\n", b"\r")) else line + b"\n\\ No newline at end of file\n"


def header(root: str) -> bytes:
    """Text before the first file (`patch` and `git apply` skip it): how to apply the diff, and
    that the mended code needs eqsat wherever it runs."""
    return (f"Graph-break rewrites by eqsat's mender (python -m eqsat_torch.mend).\n"
            f"Apply from the project root ({os.path.abspath(root)}) with: patch -p1 < this file\n"
            f"The mended code imports eqsat's runtime helper module {RUNTIME_MODULE} (as {RT}),\n"
            f"so eqsat must be installed wherever the mended code runs.\n\n").encode()


def project_path(filename: str, root: str) -> str | None:
    """`filename` relative to `root`, with `/` separators, or None when it lies outside `root`."""
    relative = os.path.relpath(os.path.realpath(filename), os.path.realpath(root))
    if relative == os.pardir or relative.startswith(os.pardir + os.sep) or os.path.isabs(relative):
        return None
    return relative.replace(os.sep, "/")


def unified_diff(decisions: list[Decision], root: str) -> tuple[bytes, list[str]]:
    """One unified diff over the files under `root`, named `a/<path>` and `b/<path>` relative to it
    (`patch -p1` from `root` applies it), after `header(root)`; and the mended files outside `root`,
    which it leaves out. Made on bytes, so that each file's part is in its own encoding and line
    endings and applying it gives exactly the mended file."""
    by_file: dict[str, list[Decision]] = defaultdict(list)
    for d in decisions:
        if d.rule:
            by_file[d.filename].append(d)
    chunks, outside = [header(root)], []
    for filename, group in sorted(by_file.items()):
        path = project_path(filename, root)
        if path is None:
            outside.append(filename)
            continue
        old, new = mended_source(filename, group)
        lines = old.splitlines(keepends=True), new.splitlines(keepends=True)  # bytes split at \r and \n only
        chunks += _marked(difflib.diff_bytes(difflib.unified_diff, *lines,
                                             os.fsencode(f"a/{path}"), os.fsencode(f"b/{path}")))
    return b"".join(chunks), outside
