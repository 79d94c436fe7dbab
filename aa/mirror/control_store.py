"""Where a flow keeps its control state (:mod:`aa.mirror.control`), so a pause survives a
restart: the compacted topic ``aa.control.<source>.internal`` in the target DC, beside the
flow's other state (offset syncs, exactly-once positions).

One record per pause (key ``pause/<flow>[/<topic>[/<partition>]]``) and per rate set through
the admin API (``rate/<flow>``); lifting one writes a tombstone. Bounded forever: compaction
keeps one record per key, and the keys are what operators paused (tombstones go after the
topic's ``delete.retention.ms``). Failed topics are not stored: a restart tries them again.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiokafka import AIOKafkaProducer

from aa.admin import ClusterAdmin
from aa.lifecycle import started
from aa.logs import get_logger
from aa.mirror.control import FlowControl, Pause, Scope
from aa.mirror.settings import FlowSettings
from aa.offsets.writer import ensure_internal_topic
from aa.tail import read_topic

log = get_logger("aa.control")


def _pause_key(scope: Scope) -> bytes:
    return f"pause/{scope.key}".encode()


def _rate_key(flow: str) -> bytes:
    return f"rate/{flow}".encode()


class ControlStore:
    """Reads and writes one flow's control records in its target DC."""

    def __init__(self, settings: FlowSettings) -> None:
        self.settings = settings
        self.topic = settings.control_topic

    async def load(self, control: FlowControl) -> None:
        """Set ``control`` from what is stored (the newest record per key wins)."""
        flow = self.settings.name
        latest: dict[bytes, bytes | None] = {}
        for record in await read_topic(self.topic, self.settings.target_client):
            latest[record.key] = record.value
        for key, value in latest.items():
            kind, _, rest = (key or b"").decode(errors="replace").partition("/")
            if value is None or not (rest == flow or rest.startswith(flow + "/")):
                continue
            try:
                data: dict[str, Any] = orjson.loads(value)
                if kind == "pause":
                    scope = Scope(flow, data.get("topic"), data.get("partition"))
                    control.pauses[scope.key] = Pause(
                        scope, float(data["at"]), data.get("note", "")
                    )
                elif kind == "rate":
                    control.rate_override = float(data["bytes_per_s"])
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                log.warning("control_record_unreadable", flow=flow, key=key, error=repr(exc))
        control.loaded = True
        control.version += 1
        if control.pauses:
            log.info("flow_pauses_restored", flow=flow, paused=sorted(control.pauses))

    async def write_pause(self, pause: Pause) -> None:
        s = pause.scope
        value = {"topic": s.topic, "partition": s.partition, "at": pause.at, "note": pause.note}
        await self._write([(_pause_key(s), orjson.dumps(value))])

    async def write_resume(self, scopes: list[Scope]) -> None:
        await self._write([(_pause_key(s), None) for s in scopes])

    async def write_rate(self, rate: float | None) -> None:
        value = None if rate is None else orjson.dumps({"bytes_per_s": rate})
        await self._write([(_rate_key(self.settings.name), value)])

    async def _write(self, records: list[tuple[bytes, bytes | None]]) -> None:
        if not records:
            return
        s = self.settings
        rf = s.replication_factor
        async with ClusterAdmin(s.target, replication_factor=rf, **s.target_client) as admin:
            await ensure_internal_topic(admin, self.topic)
        producer = await started(
            AIOKafkaProducer(**s.target_client, acks="all", enable_idempotence=True)
        )
        try:
            for key, value in records:
                await producer.send_and_wait(self.topic, value, key=key, partition=0)
        finally:
            await producer.stop()
