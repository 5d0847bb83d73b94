"""The package's structure, read from its imports with ``ast``: no import circle, and layers that import only
downward. Imports inside functions count as imports: the command-line modules import torch, aeon and the
estimators after parsing their arguments (so that ``--help`` is instant), never to dodge a circle.

The layers, from the ground up: ``tsrep._*`` helpers and ``tsrep.exceptions``; ``data`` and ``nn``;
``backbones`` and ``training``; ``estimators``; ``representation``, ``models``, ``sktime``, ``analysis``;
``tuning`` and ``benchmarks``; ``__main__``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "tsrep"

#: What each lower part of the package may import from the package (besides itself and the ground floor).
ALLOWED_BELOW = {
    "data": set(),
    "nn": set(),
    "backbones": {"nn", "data"},
    "training": {"nn", "data", "backbones"},
}
GROUND = {"_io", "_lazy", "_cli", "exceptions", "_fingerprint", "_serialization", "_database_urls"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(path: Path, modules: dict) -> list[tuple[str, int, bool]]:
    """(imported tsrep module, line, inside a function) for every import of a tsrep module in `path`."""
    found = []

    def visit(node, in_function: bool):
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend((a.name, child.lineno, in_function) for a in child.names if a.name.startswith("tsrep"))
            elif isinstance(child, ast.ImportFrom) and (child.module or "").startswith("tsrep") and not child.level:
                for alias in child.names:
                    name = f"{child.module}.{alias.name}"
                    found.append((name if name in modules else child.module, child.lineno, in_function))
            visit(child, inner)

    visit(ast.parse(path.read_text()), False)
    return found


def _graph(include_functions: bool) -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for target, _, in_function in _imports(path, modules):
            if (include_functions or not in_function) and target in modules and target != name:
                graph[name].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def connect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in graph:
        if v not in index:
            connect(v)
    return out


def test_the_graph_sees_the_package():
    graph = _graph(include_functions=True)
    assert "tsrep.estimators._base" in graph["tsrep.estimators.dc_transformer"]
    assert "tsrep.training.loop" in graph["tsrep.estimators._base"]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circle_even_through_imports_inside_functions():
    # Every import inside a function could move to the top of its module without making a circle.
    assert _cycles(_graph(include_functions=True)) == []


@pytest.mark.parametrize("part", sorted(ALLOWED_BELOW))
def test_lower_parts_import_only_downward(part):
    modules = _modules()
    allowed = {part, *ALLOWED_BELOW[part]}
    upward = []
    for name, path in modules.items():
        if not name.startswith(f"tsrep.{part}"):
            continue
        for target, line, _ in _imports(path, modules):
            top = target.split(".")[1] if target.count(".") else ""
            if top and top not in allowed and top not in GROUND:
                upward.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}")
    assert not upward, "\n".join(upward)
