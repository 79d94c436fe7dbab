"""A refused schema id is asked again after a while (issue 34): a failed topic's retry, or
``aa resume``, after the registry was fixed copies the record instead of meeting the refusal
the flow remembered from before the fix."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from aa.config.registries import SchemaTranslation
from aa.logs import get_logger
from aa.mirror.settings import FlowSettings
from aa.observe.metrics import Metrics
from aa.protocols import SchemaRefusal
from aa.schemas import translator as translator_module
from aa.schemas.registry import RegistryRefused
from aa.schemas.translator import SchemaTranslator
from aa.schemas.wire import header

pytestmark = pytest.mark.unit


class _Registries:
    """Unknown to the source until ``fixed``; then copied as id 40."""

    def __init__(self) -> None:
        self.fixed = False
        self.asked = 0

    async def copy(self, source_id: int) -> int:
        self.asked += 1
        if not self.fixed:
            raise RegistryRefused("404 not found", role="source", status=404, code=40403)
        return 40


class _Producer:
    async def send_and_wait(self, *args: Any, **kw: Any) -> None:
        return None


def _translator(registries: _Registries) -> SchemaTranslator:
    schemas = SchemaTranslation("http://127.0.0.1:1", "http://127.0.0.1:2")
    settings = FlowSettings("SF", "NYC", {}, {}, "g", schemas=schemas)
    t = SchemaTranslator(settings, None, Metrics(), get_logger("test"))  # type: ignore[arg-type]
    t._copier = registries  # type: ignore[assignment]
    t._producer = _Producer()  # type: ignore[assignment]
    return t


def test_a_refused_id_is_asked_again_once_the_refusal_is_old(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1000.0]
    monkeypatch.setattr(translator_module.time, "monotonic", lambda: now[0])
    registries = _Registries()
    t = _translator(registries)
    record = SimpleNamespace(key=None, value=header(4) + b"avro", offset=0)
    translate = t.translation("orders")
    assert translate is not None
    stop = asyncio.Event()

    asyncio.run(t.resolve([("orders", [record])], stop))
    assert isinstance(translate(None, record.value), SchemaRefusal)
    registries.fixed = True
    now[0] += 5  # a retry soon after: the refusal stands, the registries are not asked
    asyncio.run(t.resolve([("orders", [record])], stop))
    assert registries.asked == 1
    now[0] += translator_module.REFUSAL_TTL_S  # later: asked again, and copied
    asyncio.run(t.resolve([("orders", [record])], stop))
    assert registries.asked == 2
    assert translate(None, record.value) == (None, header(40) + b"avro")
