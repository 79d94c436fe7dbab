"""Divergent state: keys of event-sourced topics whose resolved state differs between DCs.

Per DC and key, the events in the window are folded by the topic's ``conflict`` resolver in a
Python UDF (the fold ignores order and duplicates, so equal event sets give equal states); the
canonical state bytes are hashed, and keys whose hashes differ, or that are absent from a DC
that should hold the topic, are divergent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

ERROR_PREFIX = "!error: "


def _fold_udf() -> Any:
    from pyspark.sql import functions as F

    def fold(resolver: str, events: Any) -> str:
        from spark_reconcile.events import state_hash

        records = [(e[0], [(h[0], h[1]) for h in e[1] or ()]) for e in events]
        try:
            return state_hash(resolver, records)
        except Exception as exc:  # noqa: BLE001 - reported as the key's state: one bad key never fails the job
            return f"{ERROR_PREFIX}{exc}"[:300]

    return F.udf(fold, "string", useArrow=False)


def key_states(df: Any) -> Any:
    """Per (logical topic, key, DC): number of events and the state hash."""
    from pyspark.sql import functions as F

    events = df.filter(
        F.col("in_window")
        & F.col("resolver").isNotNull()
        & F.col("event_error").isNull()
        & F.col("prov_error").isNull()
    )
    grouped = events.groupBy("ltopic", "resolver", F.col("event_key").alias("key"), "dc").agg(
        F.count(F.lit(1)).alias("events"),
        F.collect_list(F.struct("value", "headers")).alias("evs"),
    )
    return grouped.select(
        "ltopic", "key", "dc", "events", _fold_udf()("resolver", "evs").alias("state_hash")
    )


def divergent(topic_dcs: Mapping[str, Sequence[str]]) -> Callable[[Any], Any]:
    """From :func:`key_states`: keys whose DCs disagree. ``topic_dcs``: logical topic -> the DCs
    that should hold it. Rows: ``ltopic, key, hashes`` (DC -> hash), ``absent_in``."""
    from pyspark.sql import functions as F

    def transform(states: Any) -> Any:
        if topic_dcs:
            pairs = [
                x
                for t, dcs in sorted(topic_dcs.items())
                for x in (F.lit(t), F.array(*[F.lit(d) for d in sorted(dcs)]))
            ]
            want = F.create_map(*pairs)[F.col("ltopic")]
        else:
            want = F.array().cast("array<string>")
        per_key = states.groupBy("ltopic", "key").agg(
            F.map_from_entries(F.collect_list(F.struct("dc", "state_hash"))).alias("hashes")
        )
        return (
            per_key.withColumn(
                "absent_in",
                F.array_sort(F.array_except(F.coalesce(want, F.array()), F.map_keys("hashes"))),
            )
            .filter(
                (F.size(F.array_distinct(F.map_values("hashes"))) > 1)
                | (F.size("absent_in") > 0)
                | F.exists(F.map_values("hashes"), lambda h: h.startswith(ERROR_PREFIX))
            )
            .select("ltopic", "key", "hashes", "absent_in")
        )

    return transform
