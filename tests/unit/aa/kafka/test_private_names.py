"""aiokafka's internals are reached from :mod:`aa.kafka` only (issue 32, DESIGN.md "Rooms that
hold a boundary"): outside it, no module of the product (``aa``, ``conflict``,
``spark_reconcile``) or the benchmarks imports an aiokafka module that is not public API or a
``_private`` name, reads ``x._name`` of a name aiokafka keeps private (on anything but
``self``/``cls``), or names one to ``getattr``.

An aiokafka upgrade is then a one-folder job: :mod:`aa.kafka.private` lists what aa uses and
``test_contract.py`` pins each of them."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import aiokafka
import pytest

from aa.kafka import private

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[4]
SCANNED = ("aa", "conflict", "spark_reconcile", "bench")
"""The tests are not scanned: their fakes and helpers stand in for aiokafka's parts."""
ADAPTER = Path("aa/kafka")
"""Where aiokafka's internals may be reached."""
PUBLIC = frozenset({
    "aiokafka", "aiokafka.abc", "aiokafka.errors", "aiokafka.structs", "aiokafka.helpers",
    "aiokafka.partitioner", "aiokafka.admin", "aiokafka.admin.config_resource",
    "aiokafka.admin.new_topic", "aiokafka.admin.new_partitions",
    "aiokafka.admin.records_to_delete",
})  # fmt: skip
"""aiokafka's modules that are its public API (its documentation's)."""
_REFLECT = ("getattr", "setattr", "hasattr", "delattr")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@functools.cache
def aiokafka_private_names() -> frozenset[str]:
    """Every ``_name`` aiokafka's own source defines or uses (attributes, functions, classes)."""
    names: set[str] = set()
    for path in Path(aiokafka.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute):
                names.add(node.attr)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name):
                names.add(node.id)
    return frozenset(n for n in names if _private(n))


def _internal_module(dotted: str) -> bool:
    """Whether ``dotted`` names a module of aiokafka that is not public API."""
    path = Path(aiokafka.__file__).parent.joinpath(*dotted.split(".")[1:])
    is_module = path.with_suffix(".py").exists() or (path / "__init__.py").exists()
    return is_module and dotted not in PUBLIC


def uses(source: str, where: str) -> Iterator[str]:
    """``where:line: what`` for each use of an aiokafka internal in ``source``."""
    private = aiokafka_private_names()
    for node in ast.walk(ast.parse(source, where)):
        line = f"{where}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "aiokafka":
            module = node.module or ""
            if module not in PUBLIC:
                yield f"{line}: imports from {module}, not aiokafka's public API"
            for a in node.names:
                if _private(a.name):
                    yield f"{line}: imports {module}.{a.name}"
                elif _internal_module(f"{module}.{a.name}"):
                    yield f"{line}: imports {module}.{a.name}, not aiokafka's public API"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "aiokafka" and alias.name not in PUBLIC:
                    yield f"{line}: imports {alias.name}, not aiokafka's public API"
        elif isinstance(node, ast.Attribute) and node.attr in private:
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                yield f"{line}: reads {ast.unparse(node)}"
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _REFLECT
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in private
        ):
            yield f"{line}: {node.func.id}(..., {node.args[1].value!r})"


def _scanned() -> Iterator[Path]:
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if not rel.is_relative_to(ADAPTER):
                yield rel


def test_aiokafka_internals_are_reached_from_the_adapter_only() -> None:
    found = [u for rel in _scanned() for u in uses((ROOT / rel).read_text(), str(rel))]
    assert not found, (
        "aiokafka internals used outside aa/kafka/ (wrap each in aa/kafka/, list it in "
        "aa/kafka/private.py and pin it in tests/unit/aa/kafka/test_contract.py):\n"
        + "\n".join(found)
    )


@pytest.mark.parametrize(
    ("source", "what"),
    [
        ("from aiokafka.consumer import fetcher\n", "imports from aiokafka.consumer"),
        ("from aiokafka.record.default_records import _X\n", "imports aiokafka.record"),
        ("import aiokafka.conn\n", "imports aiokafka.conn"),
        ("from aiokafka import codec\n", "imports aiokafka.codec"),
        ("async def f(c):\n    await c._client.force_metadata_update()\n", "reads c._client"),
        ("def f(p):\n    return p._message_accumulator\n", "reads p._message_accumulator"),
        ("def f(p):\n    return getattr(p, '_txn_manager', None)\n", "getattr(..., '_txn_m"),
    ],
)
def test_the_scan_sees_each_kind_of_use(source: str, what: str) -> None:
    found = list(uses(source, "x.py"))
    assert any(what in f for f in found), found


def test_the_scan_leaves_public_api_and_own_attributes_alone() -> None:
    source = (
        "from aiokafka import AIOKafkaConsumer\nfrom aiokafka.errors import KafkaError\n"
        "class A:\n    def f(self):\n        return self._client, self._fetcher\n"
        "def g(p):\n    return p.client.cluster, p._not_an_aiokafka_name_at_all\n"
    )
    assert list(uses(source, "x.py")) == []


def test_every_internal_name_the_adapter_imports_is_pinned() -> None:
    """Each ``from <internal aiokafka module> import name`` in :mod:`aa.kafka` has its entry
    in :data:`aa.kafka.private.NAMES` (and so its contract test)."""
    listed = {(p.owner, p.name) for p in private.NAMES}
    missing = []
    for path in sorted((ROOT / ADAPTER).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom) or node.module in PUBLIC:
                continue
            if (node.module or "").split(".")[0] != "aiokafka":
                continue
            for a in node.names:
                if (node.module, a.name) not in listed and not _internal_module(
                    f"{node.module}.{a.name}"
                ):
                    missing.append(f"{path.relative_to(ROOT)}: {node.module}.{a.name}")
    assert not missing, missing
