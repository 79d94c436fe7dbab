"""Spark's Kafka source jars for the installed PySpark, resolved by Maven like Kafka's."""

from __future__ import annotations

from pathlib import Path

from aa.dev.artifacts import fetch, spark_kafka_artifacts
from aa.errors import DevClusterError


def installed_spark_version() -> str:
    try:
        import pyspark
    except ImportError:
        raise DevClusterError(
            "PySpark is not installed: install aa with the spark extra (pip install 'aa[spark]')"
        ) from None
    return str(pyspark.__version__)


def spark_kafka_jars(*, refresh: bool = False) -> list[Path]:
    """The jars to put on ``spark.jars`` so ``format("kafka")`` works, fetched when missing."""
    return fetch(spark_kafka_artifacts(installed_spark_version()), refresh=refresh)
