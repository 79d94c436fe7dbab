"""The job's stages, in the order :mod:`spark_reconcile.job` wires them: the run's scope
(:mod:`.scope`, driver-side values), the read stage (:mod:`.read`: Kafka rows to the records
file, presence per id, the picked rows), the findings (:mod:`.find`: each written as Parquet)
and the summary (:mod:`.summary`: small aggregates for summary.json and the report)."""
