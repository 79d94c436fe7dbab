"""Kafka producers compress with gzip, snappy, lz4 or zstd (Java clients often use lz4 or
zstd). aiokafka reads and writes the last three only with ``cramjam`` installed; without it, a
flow whose source held one such batch restarted forever on ``UnsupportedCodecError``
(``Libraries for lz4 compression codec not found``) and copied nothing, and
``tuning.compression: lz4`` failed every start."""

from __future__ import annotations

import zlib

import cramjam
import pytest
from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from aa.config.sections import COMPRESSIONS
from aa.kafka import fetched
from aa.kafka.records import BATCH_HEADER, compress
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


def _records() -> bytes:
    """100 records of 512 bytes, as compressible as text: enough for the levels to differ."""
    words = [b"%05d" % (i * 7919 % 10007) for i in range(300)]
    return b"".join(b" ".join(words[(i * 13 + j) % 300] for j in range(85)) for i in range(100))


def _built(codec: int, data: bytes) -> bytes:
    """One batch of ``data``'s records built as the record path builds (aiokafka's builder)."""
    builder = DefaultRecordBatchBuilder(2, codec, False, -1, -1, 0, 1 << 22)
    for i in range(100):
        builder.append(i, timestamp=1, key=None, value=data[i * 512 : (i + 1) * 512], headers=[])
    return bytes(builder.build())


def test_copies_compress_lz4_and_gzip_at_the_levels_java_producers_use() -> None:
    """Kafka's Java producer writes lz4 with LZ4's fast compressor (its default level) and gzip
    at zlib's default level 6; aiokafka writes lz4 with LZ4 HC at level 9 and gzip at level 9,
    which cost aa 4.4 of its ~5.3 µs per record on an lz4 copy. A flow compresses as Java
    producers do, on both paths (aa's batch path and aiokafka's builder on the record path)."""
    fetched.install()
    data = _records()
    plain = DefaultRecordBatch(_built(0, data))
    body = bytes(_built(0, data)[BATCH_HEADER:])
    assert [r.value for r in plain] == [data[i * 512 : (i + 1) * 512] for i in range(100)]

    fast = cramjam.lz4.Compressor(level=0, content_checksum=False, block_linked=False)
    fast.compress(body)
    assert compress(CODES["lz4"], body) == bytes(fast.finish())
    assert _built(CODES["lz4"], data)[BATCH_HEADER:] == compress(CODES["lz4"], body)

    deflate = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    level_6 = deflate.compress(body) + deflate.flush()
    for gz in (compress(CODES["gzip"], body), _built(CODES["gzip"], data)[BATCH_HEADER:]):
        assert gz[8] == 0  # the gzip header's XFL byte: 2 for level 9, 0 for the default
        assert gz[10 : 10 + len(level_6)] == level_6
