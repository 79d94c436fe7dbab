"""What a target topic refuses, decided from its effective configs before a record is sent."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from aa.kafka.records import BATCH_HEADER, record_bytes
from aa.mirror.limits import MIRROR_HEADERS_MAX, TargetLimits

pytestmark = pytest.mark.unit

NOW = 1_700_000_000_000
DAY = 24 * 3600 * 1000


@dataclass
class R:
    key: bytes | None = b"k"
    value: bytes | None = b"v"
    headers: list[tuple[str, bytes]] = field(default_factory=list)
    timestamp: int = NOW


def test_defaults_refuse_nothing() -> None:
    limits = TargetLimits.from_configs("t", {})
    assert limits.refusal(R(key=None, timestamp=0), NOW) is None
    assert limits.batch_cap is None


def test_null_key_refused_by_compacted_topic_only() -> None:
    compacted = TargetLimits.from_configs("t", {"cleanup.policy": "compact,delete"})
    refusal = compacted.refusal(R(key=None), NOW)
    assert refusal is not None
    assert refusal.kind == "invalid-record"
    assert "compacted topic t" in refusal.detail
    assert compacted.refusal(R(), NOW) is None


def test_size_is_the_batch_a_record_takes_alone_with_the_headers_it_is_written_with() -> None:
    """The screen is exact: the record's batch of its own, aa's headers and the mark included,
    against max.message.bytes (issue 29, item 4: a fixed 256-byte allowance, both ways wrong)."""
    limits = TargetLimits.from_configs("t", {"max.message.bytes": "1000"})
    assert limits.batch_cap == 1000
    written = [
        ("aa-origin", b"SF"),
        ("aa-path", b"SF,NYC"),
        ("aa-src", b"SF/" + b"t" * 120 + b"/0/7"),
    ]
    room = max(
        n for n in range(1000) if BATCH_HEADER + record_bytes(b"k", b"x" * n, written) <= 1000
    )
    fits = R(key=b"k", value=b"x" * room)
    assert limits.refusal(fits, NOW, written) is None
    over = R(key=b"k", value=b"x" * (room + 1))
    refusal = limits.refusal(over, NOW, written)
    assert refusal is not None
    assert refusal.kind == "record-too-large"
    assert "max.message.bytes 1000" in refusal.detail
    # without the headers it is written with (a batch the broker refused, checked again): aa's
    # headers count at their largest
    assert limits.refusal(R(key=b"k", value=b"x" * (1000 - MIRROR_HEADERS_MAX)), NOW) is not None


@pytest.mark.parametrize(
    ("configs", "ts", "refused"),
    [
        ({"message.timestamp.before.max.ms": str(DAY)}, NOW - 2 * DAY, True),
        ({"message.timestamp.before.max.ms": str(DAY)}, NOW - DAY // 2, False),
        ({"message.timestamp.after.max.ms": "3600000"}, NOW + 2 * 3600000, True),
        ({"message.timestamp.difference.max.ms": str(DAY)}, NOW + 2 * DAY, True),  # Kafka 3.x
        ({"message.timestamp.before.max.ms": str(DAY)}, -1, False),  # no timestamp
        (
            {"message.timestamp.type": "LogAppendTime", "message.timestamp.before.max.ms": "1"},
            0,
            False,
        ),
    ],
)
def test_timestamps_outside_the_target_window_are_refused(
    configs: dict[str, str], ts: int, refused: bool
) -> None:
    refusal = TargetLimits.from_configs("t", configs).refusal(R(timestamp=ts), NOW)
    assert (refusal is not None) == refused
    if refusal is not None:
        assert refusal.kind == "invalid-timestamp"
