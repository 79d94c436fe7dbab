"""Nightly PySpark jobs that prove the DCs converged, and repair them when they did not.

The job (:mod:`spark_reconcile.job`, wiring only) reads a time window of every DC's copies of
the configured topics with Spark's Kafka source, normalises provenance
(:mod:`spark_reconcile.records`), runs the findings (:mod:`spark_reconcile.findings`, pure
``DataFrame -> DataFrame`` transforms), writes Parquet, ``summary.json`` and ``report.html``,
and optionally repairs missing records; its stages are in :mod:`spark_reconcile.stages`.
Nothing in ``aa`` imports this package (only the CLI command, lazily).
"""
