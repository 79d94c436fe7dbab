"""The shape of ``aa/`` (issue 13): no import cycle between its modules — imports inside
functions and under ``TYPE_CHECKING`` count, they only hide a cycle — and no module over
:data:`MAX_LINES` lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = "aa"
MAX_LINES = 400


def _modules(root: Path, package: str) -> dict[str, Path]:
    """Every module of ``package`` by dotted name (a package by its ``__init__``)."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``name`` imports anywhere in its file."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = name.split(".") if is_package else name.split(".")[:-1]
                here = here[: len(here) - (node.level - 1)]
                base = ".".join([*here, base] if base else here)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    return {m for m in found if m in known and m != name}


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
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
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_find_cycles_sees_a_cycle_hidden_in_a_function(tmp_path: Path) -> None:
    """The checker itself: a function-level import that closes a cycle is found."""
    pkg = tmp_path / "p"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from p.b import g\n")
    (pkg / "b.py").write_text("def g():\n    from p import a\n    return a\n")
    (pkg / "c.py").write_text("from . import b\n")
    mods = _modules(tmp_path, "p")
    graph = {m: imports_of(m, p, set(mods)) for m, p in mods.items()}
    assert find_cycles(graph) == [["p.a", "p.b"]]


def test_aa_has_no_import_cycle() -> None:
    mods = _modules(ROOT, PACKAGE)
    graph = {m: imports_of(m, p, set(mods)) for m, p in mods.items()}
    assert find_cycles(graph) == []


def test_no_aa_module_is_over_the_line_limit() -> None:
    sizes = {m: len(p.read_text().splitlines()) for m, p in _modules(ROOT, PACKAGE).items()}
    assert {m: n for m, n in sizes.items() if n > MAX_LINES} == {}
