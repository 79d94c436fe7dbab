"""The JSON forms of offset syncs, markers, checkpoints and heartbeats are read by other aa
versions from their topics: they stay byte for byte what they were, and read back."""

from __future__ import annotations

import pytest

from aa.checkpoints.model import Checkpoint, CheckpointDecodeError
from aa.heartbeat.model import Heartbeat
from aa.offsets.sync import OffsetSync, Repartitioned, SyncDecodeError, decode_sync

pytestmark = pytest.mark.unit

FORMS = [
    (
        Checkpoint("g", "t", 1, 10, "t2", 12, "exact", 99),
        b'{"group":"g","topic":"t","partition":1,"upstream":10,"target_topic":"t2",'
        b'"downstream":12,"exactness":"exact","ts":99}',
    ),
    (
        OffsetSync("t", 0, "t", 1, 2, 3, 4),
        b'{"topic":"t","partition":0,"target_topic":"t","from":1,"first":2,"last":3,"target":4}',
    ),
    (
        OffsetSync("t", 0, "t", 1, 2, 3, 4, "id"),
        b'{"topic":"t","partition":0,"target_topic":"t","from":1,"first":2,"last":3,"target":4,'
        b'"topic_id":"id"}',
    ),
    (
        Repartitioned("t", 1, "u", 5),
        b'{"kind":"repartitioned","topic":"t","partition":1,"target_topic":"u","first":5}',
    ),
    (Heartbeat("SF", 123), b'{"dc":"SF","ts":123}'),
]


@pytest.mark.parametrize(("value", "form"), FORMS)
def test_a_value_record_keeps_its_json_form_and_reads_back(value: object, form: bytes) -> None:
    assert value.encode() == form  # type: ignore[attr-defined]
    read = decode_sync if isinstance(value, Repartitioned) else type(value).decode  # type: ignore[attr-defined]
    assert read(form) == value


def test_a_record_that_is_not_ours_is_refused_by_each_reader() -> None:
    for junk in (b"[]", b'"x"', b'{"topic":"t"}'):
        with pytest.raises(CheckpointDecodeError):
            Checkpoint.decode(junk)
        with pytest.raises(SyncDecodeError):
            decode_sync(junk)
        assert Heartbeat.decode(junk) is None
