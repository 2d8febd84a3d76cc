"""The import graph, read with ``ast`` (function-level imports included): no cycle among the modules of
``rules/`` or of ``eqsat/``, and the layers point one way: eqsat ← rules ← fx_bridge ← bench."""
import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ["eqsat", "eqsat_rules", "eqsat_torch", "bench"]  # import names; each may import only the ones before it
FOLDER = {"eqsat": "eqsat", "eqsat_rules": "rules", "eqsat_torch": "fx_bridge", "bench": "bench"}
NAME = {folder: name for name, folder in FOLDER.items()}


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    parts[0] = NAME[parts[0]]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(name: str, modules: set[str]) -> str | None:
    """The longest prefix of ``name`` that is one of our modules (``eqsat.ops.Op`` → ``eqsat.ops``)."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        if ".".join(parts[:k]) in modules:
            return ".".join(parts[:k])
    return None


def import_graph(packages=LAYERS) -> nx.DiGraph:
    """Our modules, an edge for each import of another; ``g.nodes[m]["external"]``: the top-level
    packages ``m`` imports from outside (``torch``, ``egglog``, …)."""
    files = {_module(p): p for pkg in packages for p in (ROOT / FOLDER[pkg]).rglob("*.py")}
    modules = set(files)
    g = nx.DiGraph()
    g.add_nodes_from((m, {"external": set()}) for m in modules)
    for mod, path in files.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [f"{base}.{a.name}" for a in node.names]  # a submodule, or a name in base
            else:
                continue
            for t in targets:
                dep = _resolve(t, modules)
                if dep is not None and dep != mod:
                    g.add_edge(mod, dep)
                elif dep is None and not node_is_relative(node):
                    g.nodes[mod]["external"].add(t.split(".")[0])
    return g


def node_is_relative(node: ast.AST) -> bool:
    return isinstance(node, ast.ImportFrom) and node.level > 0


GRAPH = import_graph()


@pytest.mark.parametrize("package", ["eqsat_rules", "eqsat"])
def test_no_import_cycle_inside(package):
    sub = GRAPH.subgraph([m for m in GRAPH if m.split(".")[0] == package])
    cycles = list(nx.simple_cycles(sub))
    assert not cycles, f"import cycles in {package}/: {cycles}"


def test_layers_point_one_way():
    wrong = [(a, b) for a, b in GRAPH.edges
             if LAYERS.index(b.split(".")[0]) > LAYERS.index(a.split(".")[0])]
    assert not wrong, f"imports against the layer order eqsat ← rules ← fx_bridge ← bench: {wrong}"


def test_only_the_checker_and_the_layers_above_touch_torch():
    """Rows name torch callables by string: eqsat/ imports no torch, rules/ only in its checker (the
    sampler and the per-op evaluators)."""
    users = {m for m in GRAPH if "torch" in GRAPH.nodes[m]["external"] and m.split(".")[0] in ("eqsat", "eqsat_rules")}
    assert users == {"eqsat_rules.checker", "eqsat_rules.checker_ops"}


def test_the_graph_sees_function_level_imports():
    """rules/__init__.check imports the checker inside the function (torch only when a rule is checked)."""
    assert GRAPH.has_edge("eqsat_rules", "eqsat_rules.checker")
    assert GRAPH.has_edge("eqsat_rules.dsl", "eqsat_rules.compile") and GRAPH.has_edge("eqsat_rules.compile", "eqsat_rules.listpat")
