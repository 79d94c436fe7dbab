"""The shape of ``aa/``, ``conflict/`` and ``spark_reconcile/`` (issues 13 and 32): no import
cycle between their modules — imports inside functions and under ``TYPE_CHECKING`` count, they
only hide a cycle — and no module over :data:`MAX_LINES` lines; in ``conflict/`` and
``spark_reconcile/``, no name imported twice in one module (one ``from pyspark.sql import
functions as F`` per module, not one per function) and no private name imported from another
module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("aa", "conflict", "spark_reconcile")
IMPORTS_CHECKED = ("conflict", "spark_reconcile")
"""The packages whose modules import each name once and no ``_private`` name of another
module (``aa/`` has deliberate repeats: optional dependencies imported where they are used)."""
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


def _all_modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for package in PACKAGES:
        out |= _modules(ROOT, package)
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


def imported_names(path: Path) -> list[tuple[str, str]]:
    """Every ``(module, name)`` ``path`` imports, anywhere in the file, as written (relative
    modules keep their dots; ``import x`` is ``("", "x")``), once per import."""
    out: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [("", alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            out += [(base, alias.name) for alias in node.names]
    return out


def test_imported_names_sees_an_import_repeated_in_functions(tmp_path: Path) -> None:
    """The checker itself: the same import in two functions is seen twice."""
    path = tmp_path / "m.py"
    path.write_text(
        "def f():\n    from pyspark.sql import functions as F\n\n"
        "def g():\n    from pyspark.sql import functions as F\n"
    )
    assert imported_names(path) == [("pyspark.sql", "functions")] * 2


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle(package: str) -> None:
    mods = _modules(ROOT, package)
    graph = {m: imports_of(m, p, set(mods)) for m, p in mods.items()}
    assert find_cycles(graph) == []


def test_no_import_cycle_across_the_packages() -> None:
    mods = _all_modules()
    graph = {m: imports_of(m, p, set(mods)) for m, p in mods.items()}
    assert find_cycles(graph) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_is_over_the_line_limit(package: str) -> None:
    sizes = {m: len(p.read_text().splitlines()) for m, p in _modules(ROOT, package).items()}
    assert {m: n for m, n in sizes.items() if n > MAX_LINES} == {}


@pytest.mark.parametrize("package", IMPORTS_CHECKED)
def test_no_name_is_imported_twice_in_a_module(package: str) -> None:
    repeated = {}
    for name, path in _modules(ROOT, package).items():
        found = imported_names(path)
        twice = sorted({f"{m}:{n}" for m, n in found if found.count((m, n)) > 1})
        if twice:
            repeated[name] = twice
    assert repeated == {}


@pytest.mark.parametrize("package", IMPORTS_CHECKED)
def test_no_private_name_is_imported_from_another_module(package: str) -> None:
    """A ``_name`` is its module's own: another module that needs it needs a public name."""
    private = {}
    for name, path in _modules(ROOT, package).items():
        names = [n for _, n in imported_names(path) if n.startswith("_") and n != "__future__"]
        if names:
            private[name] = names
    assert private == {}


def test_the_policy_does_not_depend_on_the_mirror() -> None:
    """``aa.mirror`` builds flows from ``aa.policy``'s routers; the policy knows the flow only
    through ``aa.protocols`` (issue 32: the two imported each other)."""
    mods = _modules(ROOT, "aa")
    known = set(mods)
    found = {
        name: sorted(m for m in imports_of(name, path, known) if m.startswith("aa.mirror"))
        for name, path in mods.items()
        if name.startswith("aa.policy")
    }
    assert {k: v for k, v in found.items() if v} == {}
