"""Kafka producers compress with gzip, snappy, lz4 or zstd (Java clients often use lz4 or
zstd). aiokafka reads and writes the last three only with ``cramjam`` installed; without it, a
flow whose source held one such batch restarted forever on ``UnsupportedCodecError``
(``Libraries for lz4 compression codec not found``) and copied nothing, and
``tuning.compression: lz4`` failed every start."""

from __future__ import annotations

import pytest
from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from aa.config.sections import COMPRESSIONS
from aa.kafka.records import CODECS as CODES

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("codec", [c for c in COMPRESSIONS if c != "source"])
def test_every_compression_kafka_producers_use_is_read_and_written(codec: str) -> None:
    builder = DefaultRecordBatchBuilder(2, CODES[codec], False, -1, -1, 0, 1 << 20)
    for i in range(100):
        builder.append(i, timestamp=1_700_000_000_000 + i, key=b"k", value=b"v%d" % i, headers=[])
    batch = DefaultRecordBatch(bytes(builder.build()))
    assert batch.compression_type == CODES[codec]
    assert [r.value for r in batch] == [b"v%d" % i for i in range(100)]
