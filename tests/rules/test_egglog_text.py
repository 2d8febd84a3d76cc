"""egglog text is written in one place: no string literal in ``rules/``, ``fx_bridge/`` or ``bench/`` is
egglog, and in ``eqsat/`` only the compiler of typed rules and the schema (``to_egglog``), the term
printer (``terms``: a ``Program``'s lets and facts) and the session's own schedule commands (``egraph``:
run, push/pop, size) write it. Rules, analyses and declarations are ``eqsat.rulelang`` values."""
import ast
import re
from pathlib import Path

from eqsat import ops

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = {"eqsat/to_egglog.py", "eqsat/terms.py", "eqsat/egraph.py"}

# What egglog text looks like inside a string: a command or an action, an option, a primitive on int
# lists, or a term of one of the registry's constructors.
_FORMS = ("rule rewrite birewrite relation function ruleset datatype datatype* sort union set let check extract "
          "run run-schedule saturate seq push pop print-size print-function vec-of vec-get vec-set vec-length "
          "vec-push vec-pop vec-append vec-remove").split()
EGGLOG = re.compile(r"\((?:" + "|".join(map(re.escape, _FORMS + sorted(ops.constructors()))) + r")[\s)]"
                    r"|:(?:ruleset|merge|when)\b|\(= (?:\S+ )?\(")


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def egglog_literals(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string literal (f-string pieces included, docstrings not) that reads as egglog."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
            and EGGLOG.search(node.value)]


def _files(*packages: str) -> list[Path]:
    return sorted(p for pkg in packages for p in (ROOT / pkg).rglob("*.py"))


def test_no_egglog_text_outside_the_compiler():
    """One scan of every module of the four packages; the message names each offending file."""
    files = _files("rules", "fx_bridge", "bench", "eqsat")
    assert len(files) > 100, "the scan must see the packages"
    found = {str(p.relative_to(ROOT)): hits[:3] for p in files
             if str(p.relative_to(ROOT)) not in ALLOWED and (hits := egglog_literals(p))}
    assert not found, "egglog text outside the compiler:\n" + "\n".join(f"  {f}: {h}" for f, h in found.items())


def test_the_scan_finds_egglog_text(tmp_path):
    """What the rules wrote before they were typed is caught, in plain and f-strings alike."""
    sample = tmp_path / "sample.py"
    sample.write_text('A = "(relation CatCell (TList i64))"\n'
                      'def f(rel, a):\n    """(rule ...) in a docstring is prose."""\n'
                      '    return f"(rule (({rel} l)) ((union a b)) {a})"\n'
                      'B = "(= _s1 (shape x))"\nC = f"x :ruleset {A}"\nD = "(Narrow x d a n)"\n'
                      'E = "a plain (message) with (= signs)"\n')
    assert sorted({line for line, _ in egglog_literals(sample)}) == [1, 4, 5, 6, 7]
    assert all(egglog_literals(ROOT / name) for name in ALLOWED)
