"""Reading every DC's copies with Spark's Kafka source, one DataFrame for all DCs.

Each DC is one ``format("kafka")`` read with ``assign`` and exact ``startingOffsets`` /
``endingOffsets`` JSON (fixed by :mod:`spark_reconcile.probe`), ``includeHeaders=true``; the
reads are unioned with the DC name and the logical topic name added as columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from pyspark.sql import functions as F
from pyspark.sql import types as T

from aa.config import Datacenter
from aa.errors import ConfigError
from spark_reconcile.ranges import PartitionRange

RAW_COLUMNS = ("dc", "topic", "ltopic", "partition", "offset", "key", "value", "ts", "headers")


def kafka_options(dc: Datacenter) -> dict[str, str]:
    """``kafka.*`` options of Spark's Kafka source for ``dc`` (PEM files for TLS)."""
    opts = {
        "kafka.bootstrap.servers": dc.bootstrap,
        "kafka.security.protocol": dc.security_protocol,
    }
    if dc.ssl_cafile:
        opts["kafka.ssl.truststore.type"] = "PEM"
        opts["kafka.ssl.truststore.location"] = dc.ssl_cafile
    if dc.ssl_certfile and dc.ssl_keyfile:
        opts["kafka.ssl.keystore.type"] = "PEM"
        opts["kafka.ssl.keystore.location"] = dc.ssl_certfile
    unsupported = [
        f"ssl.{name}"
        for name, value in (
            ("truststore", dc.ssl_truststore),
            ("keystore", dc.ssl_keystore),
            ("key_password", dc.ssl_key_password),
        )
        if value is not None
    ]
    if dc.sasl_mechanism in ("OAUTHBEARER", "GSSAPI", "AWS_MSK_IAM"):
        unsupported.append(f"sasl.mechanism {dc.sasl_mechanism}")
    if unsupported:  # the mirror's own clients have them (issue 33); Spark's are not wired yet
        raise ConfigError(
            f"DC {dc.name}: aa reconcile cannot use {', '.join(unsupported)} yet (Spark's Kafka "
            "source is given PEM files and SASL PLAIN/SCRAM only): give the reconcile job a "
            "topology with PEM files (unencrypted key) and a SCRAM or PLAIN user"
        )
    if dc.security_protocol.startswith("SASL_") and dc.sasl_password is not None:
        module = (
            "org.apache.kafka.common.security.plain.PlainLoginModule"
            if dc.sasl_mechanism == "PLAIN"
            else "org.apache.kafka.common.security.scram.ScramLoginModule"
        )
        user, password = dc.sasl_username or "", dc.sasl_password.reveal()
        opts["kafka.sasl.mechanism"] = str(dc.sasl_mechanism)
        opts["kafka.sasl.jaas.config"] = (
            f'{module} required username="{user}" password="{password}";'
        )
    return opts


def offset_options(ranges: Sequence[PartitionRange]) -> dict[str, str]:
    """``assign``, ``startingOffsets`` and ``endingOffsets`` JSON for non-empty ``ranges``."""
    assign: dict[str, list[int]] = {}
    starting: dict[str, dict[str, int]] = {}
    ending: dict[str, dict[str, int]] = {}
    for r in ranges:
        if r.empty:
            continue
        assign.setdefault(r.topic, []).append(r.partition)
        starting.setdefault(r.topic, {})[str(r.partition)] = r.start
        ending.setdefault(r.topic, {})[str(r.partition)] = r.end
    return {
        "assign": orjson.dumps(assign).decode(),
        "startingOffsets": orjson.dumps(starting).decode(),
        "endingOffsets": orjson.dumps(ending).decode(),
    }


def empty_raw(spark: Any) -> Any:
    return spark.createDataFrame([], raw_schema())


def raw_schema() -> Any:
    header = T.StructType(
        [T.StructField("key", T.StringType()), T.StructField("value", T.BinaryType())]
    )
    return T.StructType(
        [
            T.StructField("dc", T.StringType(), False),
            T.StructField("topic", T.StringType()),
            T.StructField("ltopic", T.StringType()),
            T.StructField("partition", T.IntegerType()),
            T.StructField("offset", T.LongType()),
            T.StructField("key", T.BinaryType()),
            T.StructField("value", T.BinaryType()),
            T.StructField("ts", T.LongType()),
            T.StructField("headers", T.ArrayType(header)),
        ]
    )


def read_positions(
    spark: Any,
    datacenters: Mapping[str, Datacenter],
    logical: Mapping[str, str],
    positions: Any,
) -> Any:
    """``positions`` (``dc, topic, partition, offset`` and any other columns) joined with the
    records' ``record_key``, ``value`` and ``headers``, read again from Kafka: only the offset span
    of each partition that holds a position (repair payloads, suspect keys' events).
    ``logical``: physical topic -> logical name."""
    spans = (
        positions.groupBy("dc", "topic", "partition")
        .agg(F.min("offset").alias("lo"), F.max("offset").alias("hi"))
        .collect()
    )
    ranges: dict[str, list[PartitionRange]] = {}
    for s in spans:
        ranges.setdefault(s.dc, []).append(
            PartitionRange(
                s.dc, s.topic, logical.get(s.topic, s.topic), s.partition, s.lo, s.hi + 1
            )
        )
    cols = ["dc", "topic", "partition", "offset"]
    raw = read_dcs(spark, datacenters, ranges).select(
        *cols, F.col("key").alias("record_key"), "value", "headers"
    )
    return positions.join(raw, cols)


def read_dcs(
    spark: Any,
    datacenters: Mapping[str, Datacenter],
    ranges: Mapping[str, Sequence[PartitionRange]],
    min_partitions: int | None = None,
) -> Any:
    """All DCs' records in the ranges as one DataFrame with :data:`RAW_COLUMNS`.
    ``min_partitions``: Spark's ``minPartitions`` (split large offset ranges across cores)."""
    frames = []
    for dc, dc_ranges in sorted(ranges.items()):
        todo = [r for r in dc_ranges if not r.empty]
        if not todo:
            continue
        logical = {r.topic: r.logical for r in todo}
        mapping = F.create_map(*[F.lit(x) for kv in sorted(logical.items()) for x in kv])
        reader = spark.read.format("kafka").option("includeHeaders", "true")
        reader = reader.option("failOnDataLoss", "false")
        if min_partitions:
            reader = reader.option("minPartitions", str(min_partitions))
        for k, v in {**kafka_options(datacenters[dc]), **offset_options(todo)}.items():
            reader = reader.option(k, v)
        df = reader.load().select(
            F.lit(dc).alias("dc"),
            F.col("topic"),
            mapping[F.col("topic")].alias("ltopic"),
            F.col("partition"),
            F.col("offset"),
            F.col("key"),
            F.col("value"),
            F.unix_millis(F.col("timestamp")).alias("ts"),
            F.col("headers"),
        )
        frames.append(df)
    if not frames:
        return empty_raw(spark)
    out = frames[0]
    for df in frames[1:]:
        out = out.unionByName(df)
    return out
