"""What a target topic refuses for good, checked before a record is sent.

A record the broker refuses fails its whole batch, and aiokafka's idempotent producer does not
recover from a failed batch (the next one to that partition gets ``OutOfOrderSequenceNumber``).
So the flow checks each record against the target topic's effective configs first and refuses
it itself — dead-lettered under ``on_error: dead-letter``, the flow stopped before it under
``fail`` — and never sends what the target would refuse.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from aa.admin import ClusterAdmin
from aa.kafka.records import BATCH_HEADER, record_bytes
from aa.provenance import BATCH, MAX_PATH_BYTES, MAX_SRC_BYTES, MIRRORED_AT, ORIGIN, PATH, SRC

MIRROR_HEADERS_MAX = sum(
    2 * 5 + len(name) + most
    for name, most in (
        (ORIGIN, 32), (PATH, MAX_PATH_BYTES), (SRC, MAX_SRC_BYTES), (MIRRORED_AT, 20),
        (BATCH, 32 + 1 + 20),
    )
)  # fmt: skip
"""The most bytes aa's own headers add to a copy (each with its two length varints), for the
hot path's quick screen: a record under ``room - SCREEN_SLACK`` fits whatever aa adds."""
HEADER_FRAMING = 10
"""The most bytes one header's two length varints take."""
SCREEN_SLACK = MIRROR_HEADERS_MAX + 40  # record framing: length, attributes, deltas, lengths
"""What the quick screen keeps free beside a record's key, value and header bytes."""


def record_size(record: Any) -> int:
    """Key, value and header bytes of a fetched record."""
    return len(record.key or b"") + len(record.value or b"") + headers_size(record.headers)


def headers_size(headers: Any) -> int:
    """Bytes of a record's header names and values, each with its framing at most (for the
    quick screen)."""
    return sum(len(k.encode()) + len(v or b"") + HEADER_FRAMING for k, v in headers or ())


NO_LIMIT = 1 << 62
"""Stands for "not checked" in :meth:`TargetLimits.screen`."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why the target would refuse a record: ``kind`` is a metric label and the dead-letter
    reason's prefix; ``detail`` says what and which config."""

    kind: str
    detail: str


def _int(cfg: Mapping[str, str], *names: str) -> int | None:
    for name in names:
        value = cfg.get(name)
        if value is not None:
            return int(value)
    return None


@dataclass(frozen=True, slots=True)
class TargetLimits:
    """The target topic's effective limits (topic configs over broker defaults)."""

    topic: str
    max_message_bytes: int | None = None
    compacted: bool = False
    before_max_ms: int | None = None
    """CreateTime may be at most this far in the past (``None``: not checked)."""
    after_max_ms: int | None = None
    """CreateTime may be at most this far in the future (``None``: not checked)."""

    @classmethod
    def from_configs(cls, topic: str, cfg: Mapping[str, str]) -> TargetLimits:
        create_time = cfg.get("message.timestamp.type", "CreateTime") == "CreateTime"
        # Kafka 3.6+ splits the (removed in 4.0) difference.max.ms into before/after.
        before = _int(cfg, "message.timestamp.before.max.ms", "message.timestamp.difference.max.ms")
        after = _int(cfg, "message.timestamp.after.max.ms", "message.timestamp.difference.max.ms")
        return cls(
            topic=topic,
            max_message_bytes=_int(cfg, "max.message.bytes"),
            compacted="compact" in cfg.get("cleanup.policy", ""),
            before_max_ms=before if create_time else None,
            after_max_ms=after if create_time else None,
        )

    @property
    def batch_cap(self) -> int | None:
        """The largest record batch to build for this topic (its ``max.message.bytes``): a
        batch of several records stays below it (the builders' rule); a record alone is
        screened by :meth:`refusal`."""
        return self.max_message_bytes

    def screen(self, now_ms: int) -> tuple[int, bool, int, int]:
        """What the hot path checks before asking :meth:`refusal`: the room one record may take
        in a batch of its own (a huge number when unchecked; the batch path compares each
        record's exact bytes as written, aa's headers included, and the record path its key,
        value and headers against the room less :data:`SCREEN_SLACK`), whether null keys are
        refused, and the oldest and newest timestamps taken now. A record within all four is
        never refused; one outside any is passed to :meth:`refusal`, which decides and says
        why."""
        room = NO_LIMIT if self.max_message_bytes is None else self.max_message_bytes - BATCH_HEADER
        # clamped: Kafka 3.9 defaults both windows to Long.MAX_VALUE, and now +/- that does not
        # fit the 64 bits the compiled helper takes
        return (
            min(room, NO_LIMIT),
            self.compacted,
            -NO_LIMIT
            if self.before_max_ms is None
            else max(-NO_LIMIT, now_ms - self.before_max_ms),
            NO_LIMIT if self.after_max_ms is None else min(NO_LIMIT, now_ms + self.after_max_ms),
        )

    def refusal(self, record: Any, now_ms: int, headers: Any = None) -> Refusal | None:
        """Why the target would refuse ``record`` whatever the retries, or ``None``.

        ``headers``: the headers its copy is written with (the application's, aa's, and the
        batch mark it gets as a batch's first), so its size is checked exactly: the bytes of
        a batch holding it alone. Without them (a batch the broker refused, checked again),
        aa's headers count at their largest."""
        if self.max_message_bytes is not None:
            if headers is None:
                size = record_bytes(record.key, record.value, record.headers or ())
                size += BATCH_HEADER + MIRROR_HEADERS_MAX
            else:
                size = BATCH_HEADER + record_bytes(record.key, record.value, headers)
            if size > self.max_message_bytes:
                return Refusal(
                    "record-too-large",
                    f"{size} bytes as a batch of its own with aa's headers, larger than "
                    f"{self.topic}'s max.message.bytes {self.max_message_bytes}",
                )
        if record.key is None and self.compacted:
            return Refusal("invalid-record", f"a null key, refused by compacted topic {self.topic}")
        ts = record.timestamp
        if ts != -1:  # -1: no timestamp, which brokers accept
            if self.before_max_ms is not None and now_ms - ts > self.before_max_ms:
                return Refusal(
                    "invalid-timestamp",
                    f"timestamp {ts} is {now_ms - ts} ms old, over {self.topic}'s "
                    f"message.timestamp.before.max.ms {self.before_max_ms}",
                )
            if self.after_max_ms is not None and ts - now_ms > self.after_max_ms:
                return Refusal(
                    "invalid-timestamp",
                    f"timestamp {ts} is {ts - now_ms} ms ahead, over {self.topic}'s "
                    f"message.timestamp.after.max.ms {self.after_max_ms}",
                )
        return None


async def target_limits(admin: ClusterAdmin, topics: Iterable[str]) -> dict[str, TargetLimits]:
    """The effective limits of each existing topic (missing topics are left out)."""
    names = sorted(set(topics))
    if not names:
        return {}
    resources = [ConfigResource(ConfigResourceType.TOPIC, n) for n in names]
    out: dict[str, TargetLimits] = {}
    for resp in await admin.raw.describe_configs(resources):
        for res in resp.to_object()["resources"]:
            if res["error_code"] != 0:
                continue
            cfg = {
                e["config_names"]: e["config_value"]
                for e in res["config_entries"]
                if e["config_value"] is not None
            }
            out[res["resource_name"]] = TargetLimits.from_configs(res["resource_name"], cfg)
    return out
