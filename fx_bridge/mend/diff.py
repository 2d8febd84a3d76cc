"""Reviewable unified diff of the rewrites against the user's files (libcst keeps comments and
formatting everywhere outside the replaced statements)."""

from __future__ import annotations

import ast
import difflib
from collections import defaultdict

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from fx_bridge.mend.plan import Decision
from fx_bridge.mend.predicate import RT

IMPORT_LINE = f"import fx_bridge.mend.runtime as {RT}\n"


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
    replacements = {(d.stmt.lineno, d.stmt.col_offset): _render(text, d) for d in decisions}
    splice = _Splice(replacements)
    module = MetadataWrapper(cst.parse_module(text)).visit(splice)
    new = module.code
    if RT not in text:
        new = _add_import(new)
    return new


def _add_import(text: str) -> str:
    """Insert the runtime import after the module docstring and `from __future__` imports."""
    tree = ast.parse(text)
    after = 0
    for i, node in enumerate(tree.body):
        is_doc = i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if is_doc or (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
            after = node.end_lineno
    lines = text.splitlines(keepends=True)
    return "".join(lines[:after] + [IMPORT_LINE] + lines[after:])


def unified_diff(decisions: list[Decision]) -> str:
    by_file: dict[str, list[Decision]] = defaultdict(list)
    for d in decisions:
        if d.rule:
            by_file[d.filename].append(d)
    chunks = []
    for filename, group in sorted(by_file.items()):
        with open(filename, encoding="utf-8") as f:
            old = f.read()
        new = rewrite_file(old, group)
        chunks.append("".join(difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), f"a{filename}", f"b{filename}")))
    return "".join(chunks)
