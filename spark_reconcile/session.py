"""The SparkSession: sane local defaults, or whatever ``spark-submit`` configured."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyspark
from pyspark import SparkContext
from pyspark.sql import SparkSession

from aa.dev.artifacts import cache_root
from aa.dev.spark import spark_kafka_jars
from spark_reconcile import jvm_cache as jvm_cache_mod

C2_THRESHOLDS = (
    "-XX:Tier4InvocationThreshold=50000",
    "-XX:Tier4MinInvocationThreshold=6000",
    "-XX:Tier4CompileThreshold=150000",
    "-XX:Tier4BackEdgeThreshold=400000",
)
"""HotSpot's thresholds for the optimising compiler (C2), ten times the JVM's defaults. A run
is one short-lived JVM that plans and compiles (Janino) ~70 queries: with the defaults C2
spent ~48 s of CPU at 3 x 200k events on methods that ran a few thousand times (Janino,
planning, serialisation, each query's generated code), competing with the tasks for the
cores. The per-row loops still reach C2 within the first tens of thousands of rows; lukewarm
code stays in C1 (docs/benchmarks.md, issue 14's fifth change)."""
LOCAL_JAVA_OPTIONS = " ".join(("-XX:+UseParallelGC", *C2_THRESHOLDS))
"""The local driver JVM's options: the throughput collector (a batch job has no pause
target; G1's remembered sets and concurrent threads cost CPU and resident memory) and
:data:`C2_THRESHOLDS`."""


def under_spark_submit() -> bool:
    """True when ``spark-submit`` launched this Python (it hands over a running JVM gateway)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def build_session(
    *,
    master: str | None = None,
    driver_memory: str = "1g",
    shuffle_partitions: int | None = None,
    jars: Sequence[Path] | None = None,
    extra: Mapping[str, str] | None = None,
    app_name: str = "aa-reconcile",
    jvm_cache: bool = False,
) -> Any:
    """A SparkSession for the job.

    Locally: ``local[*]`` (or ``master``), the Kafka source jars on ``spark.jars`` (resolved by
    Maven into the cache, no network at run time), few shuffle partitions, UI and console
    progress bars off. Under ``spark-submit`` the submitter's master, jars and memory win; only
    ``master`` given explicitly is applied. ``jvm_cache``: locally, the driver JVM uses (or
    the first run trains) an ahead-of-time cache on JDK 25+ (:mod:`spark_reconcile.jvm_cache`);
    a run that trains it must end with :func:`finish_session`.
    """
    builder = SparkSession.builder.appName(app_name)
    submitted = under_spark_submit()
    cache = jvm_cache_mod.NONE
    if master or not submitted:
        builder = builder.master(master or "local[*]")
    if not submitted:
        if jars is None:
            jars = spark_kafka_jars()
        # Local workers run this interpreter, so they import the same conflict/aa/aiokafka.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        # the JVM starts from this environment: few glibc malloc arenas (each thread would
        # otherwise get its own, resident memory beyond the heap); a value already set wins
        os.environ.setdefault("MALLOC_ARENA_MAX", "2")
        if jvm_cache and SparkContext._active_spark_context is None:
            cache = jvm_cache_mod.cache_options(
                cache_root() / "reconcile-jvm",
                Path(pyspark.__file__).parent,
                pyspark.__version__,
                jars,
            )
        java_options = " ".join(o for o in (LOCAL_JAVA_OPTIONS, cache.options) if o)
        builder = (
            builder.config("spark.pyspark.python", sys.executable)
            .config("spark.jars", ",".join(str(j) for j in jars))
            .config("spark.driver.memory", driver_memory)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            # spark-submit's --driver-java-options (PYSPARK_SUBMIT_ARGS) or ``extra`` win
            .config("spark.driver.extraJavaOptions", java_options)
        )
    if shuffle_partitions is not None:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    elif not submitted:
        # scale with the cores of the local master; a cluster's own setting wins under
        # spark-submit, and AQE coalesces small partitions either way
        builder = builder.config("spark.sql.shuffle.partitions", str(4 * _local_cores(master)))
    builder = (
        builder.config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.sql.adaptive.coalescePartitions.enabled", "true")
        # Plain pickled Python UDFs: pandas/pyarrow are not dependencies of aa.
        .config("spark.sql.execution.pythonUDF.arrow.enabled", "false")
    )
    for k, v in (extra or {}).items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if cache.training is not None:
        _TRAINING[id(spark)] = cache
    return spark


_TRAINING: dict[int, jvm_cache_mod.JvmCache] = {}
"""Sessions whose JVM trains the AOT cache as it exits (:func:`finish_session` finishes it)."""


def finish_session(spark: Any) -> None:
    """End of a run: when ``spark``'s JVM trains the AOT cache (the first run on a machine),
    stop it, wait for the JVM to write the cache as it exits and move it into place; any other
    session is left running (a caller's session is theirs). A training that fails leaves no
    cache: the next run trains again."""
    cache = _TRAINING.pop(id(spark), None)
    if cache is None:
        return
    # pyspark keeps its JVM's Popen on the gateway
    jvm = getattr(SparkContext._gateway, "proc", None)
    spark.stop()
    SparkContext._gateway = None  # a later session launches a JVM of its own
    SparkContext._jvm = None
    jvm_cache_mod.finish_training(cache, jvm)


def _local_cores(master: str | None) -> int:
    """Cores of ``local[N]`` / ``local[*]`` / ``local``."""
    inner = (master or "local[*]").partition("[")[2].partition("]")[0].split(",")[0]
    if inner.isdigit():
        return max(1, int(inner))
    return os.cpu_count() or 2
