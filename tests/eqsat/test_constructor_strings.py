"""Constructor names are spelled once, in the registry (``eqsat.ops``: the rows, ``Ctor``, ``Role``):
every other module of the engine, the rules and the bridge matches on ``Ctor``/``Role``, read here
with ``ast`` as ``tests/rules/test_import_graph.py`` reads imports."""
import ast
from pathlib import Path

from eqsat import ops

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["eqsat", "rules", "fx_bridge"]
REGISTRY = ROOT / "eqsat" / "ops.py"


def _annotations(tree: ast.AST) -> set[int]:
    """Ids of the nodes inside annotations: ``-> "Linear"`` names a class, not a constructor."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        notes = [getattr(node, "returns", None), getattr(node, "annotation", None)]
        for note in filter(None, notes):
            inside.update(id(n) for n in ast.walk(note))
    return inside


def constructor_strings(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) of every string literal of ``source`` that is a constructor name."""
    tree = ast.parse(source)
    skip = _annotations(tree)
    return sorted((n.lineno, n.value) for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and n.value in names and id(n) not in skip)


def test_no_constructor_is_spelled_as_a_string_outside_the_registry():
    names = set(ops.constructors())
    over = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if path == REGISTRY:
                continue
            hits = constructor_strings(path.read_text(encoding="utf-8"), names)
            if hits:
                over[path.relative_to(ROOT).as_posix()] = hits
    assert not over, f"use eqsat.ops.Ctor / Role instead of these strings: {over}"


def test_the_check_sees_a_spelled_constructor_and_skips_annotations():
    names = set(ops.constructors())
    assert constructor_strings('x = node.ctor == "Cat"\n', names) == [(1, "Cat")]
    assert constructor_strings('def f() -> "Linear":\n    return node.ctor in ("Narrow", "Get")\n', names) == [
        (2, "Get"), (2, "Narrow")]
    assert constructor_strings('"""A Cat docstring."""\nx = ops.Ctor.CAT\n', names) == []


def test_ctor_names_every_constructor_of_the_registry():
    declared = {v for k, v in vars(ops.Ctor).items() if not k.startswith("_")}
    assert declared == set(ops.constructors())


def test_roles_agree_with_the_rows_categories():
    cat = ops.CTOR_CATEGORY
    assert {cat[c] for c in ops.Role.BATCHED_MATMUL | ops.Role.BIAS_FIRST} == {ops.Category.MATMUL}
    assert {cat[c] for c in ops.Role.CONCAT} == {ops.Category.COPY}
    assert {cat[c] for c in ops.Role.SLICE} == {ops.Category.VIEW}
    assert {cat[c] for c in ops.Role.KEYED_POINTWISE} == {ops.Category.POINTWISE}
