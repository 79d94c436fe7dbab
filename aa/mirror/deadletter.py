"""Records a target must not get, or refused: what they are called, what their dead letter
holds, and the message that stops a flow before them (docs/mirror.md, "When something is
wrong"). Pure: the flow does the sending."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from aiokafka import TopicPartition
from aiokafka.errors import (
    CorruptRecordException,
    InvalidTimestampError,
    MessageSizeTooLargeError,
    RecordListTooLargeError,
    UnknownError,
)

from aa.mirror.errors import FlowError
from aa.mirror.limits import record_size
from aa.mirror.settings import FlowSettings
from aa.provenance import SRC

DEAD_LETTER_REASON = "aa-dlq-reason"

REFUSED = {
    "malformed-headers": "malformed provenance headers",
    "record-too-large": "a record the target refuses as too large",
    "invalid-record": "a record the target refuses as invalid",
    "invalid-timestamp": "a record whose timestamp the target refuses",
}
"""What each kind of refused record is called in the message that stops a flow."""

BROKER_REFUSALS: dict[type[BaseException], str] = {
    MessageSizeTooLargeError: "record-too-large",
    RecordListTooLargeError: "record-too-large",
    CorruptRecordException: "invalid-record",
    InvalidTimestampError: "invalid-timestamp",
    UnknownError: "invalid-record",  # INVALID_RECORD (87) has no aiokafka class
}
"""Produce errors that no retry fixes (the broker refused records), by refusal kind."""


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """The record written to the dead-letter topic for a refused one."""

    key: bytes | None
    value: bytes | None
    timestamp_ms: int | None
    headers: list[tuple[str, bytes]]
    src: str


def dead_letter(source: str, record: Any, tp: TopicPartition, kind: str, reason: str) -> DeadLetter:
    """The original key, value, headers and CreateTime plus ``aa-dlq-reason`` and ``aa-src``;
    a reference instead of the value when it is too large, and the current time instead of a
    timestamp the target refuses (it would be refused again)."""
    ref = f"{source}/{tp.topic}/{tp.partition}/{record.offset}"
    headers = [*(record.headers or ()), (DEAD_LETTER_REASON, reason.encode()), (SRC, ref.encode())]
    value = record.value
    if kind == "record-too-large":
        value = orjson.dumps({"src": ref, "reason": reason, "bytes": record_size(record)})
    ts = None if kind == "invalid-timestamp" else record.timestamp
    return DeadLetter(record.key, value, ts, headers, ref)


def stop_before(
    settings: FlowSettings, tp: TopicPartition, record: Any, kind: str, detail: str
) -> FlowError:
    """``on_error: fail``: the flow stops before ``record``, for good."""
    s = settings
    what = REFUSED.get(kind, "a record the target refuses")
    return FlowError(
        f"{s.name}: {what} in {tp.topic}/{tp.partition}@{record.offset}: {detail}; the flow "
        "stops before this record (fix the target topic's config, or set on_error: "
        f"dead-letter to route such records to {s.dead_letter_topic} in {s.target})",
        kind=kind,
        retriable=False,
    )


def refused_batch(
    settings: FlowSettings, record: Any, target: str, kind: str, exc: BaseException
) -> FlowError:
    """The broker refused a batch for good: no restart can help."""
    s = settings
    where = f"{record.topic}/{record.partition}@{record.offset}"
    return FlowError(
        f"{s.name}: {s.target}/{target} refused the batch holding {where} ({exc!r}); no retry "
        "can fix this, so the flow stops before it; fix the target topic's config (or, for a "
        "single record, set on_error: dead-letter)",
        kind=kind,
        retriable=False,
    )
