"""Divergent state: keys of event-sourced topics whose resolved state differs between DCs.

Equal event sets always fold to the same state (the fold ignores order and duplicates), so the
DCs first compare, natively, a digest of each key's event set: the XOR of a 64-bit hash of
every distinct (event id, value hash). Only the keys whose digests differ, or that are absent
from a DC that should hold the topic, are *suspect*: their events' values are fetched and
folded by the topic's ``conflict`` resolver in Python, and those whose canonical states differ
are divergent. Each divergent key gets a ``reason``: ``conflicting copies`` when one event id
has different values in different DCs (a forged or corrupted copy), ``absent events`` when the
sets differ only by events some DC lacks (missing, in flight, expired or undecodable: already
reported there), ``unfoldable`` when the resolver refused the events.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import functions as F

from spark_reconcile.findings.fold import (
    ABSENT,
    CONFLICTING,
    DRIVER_FOLD_MAX_EVENTS,
    ERROR_PREFIX,
    UNFOLDABLE,
    divergent_on_driver,
    key_states,
)
from spark_reconcile.findings.masks import dc_bits, mask_of
from spark_reconcile.findings.presence import is_event

COUNTED = (CONFLICTING, UNFOLDABLE)
"""Reasons counted as ``divergent`` (absent events are counted where they are absent)."""


def events(df: Any, values: tuple[str, str] | None = None) -> Any:
    """The decodable events in the window: ``ltopic, resolver, key, dc, event_id, vhash`` and
    where they are (``topic, partition, offset``); with ``values`` (the names of ``df``'s value
    and headers columns) their ``value`` and ``headers`` too."""
    return df.filter(is_event()).select(*event_columns(values))


EVENT_FIELDS = (
    "ltopic",
    "resolver",
    "key",
    "dc",
    "event_id",
    "vhash",
    "topic",
    "partition",
    "offset",
)
"""The columns of :func:`events` (and ``value``, ``headers`` with values)."""


def event_columns(values: tuple[str, str] | None = None) -> list[Any]:
    """What :func:`events` selects from normalised records (``values``: as there)."""
    named = {"key": F.col("event_key").alias("key")}
    extra = (
        []
        if values is None
        else [F.col(values[0]).alias("value"), F.col(values[1]).alias("headers")]
    )
    return [named.get(c, F.col(c)) for c in EVENT_FIELDS] + extra


def suspects(topic_dcs: Mapping[str, Sequence[str]]) -> Callable[[Any], Any]:
    """From :func:`events`: per (logical topic, key) the DC digests, keeping the keys whose
    digests differ or that are absent from a DC that should hold them. Rows: ``ltopic,
    resolver, key, absent_in``.

    Fixed-width aggregations only (one shuffle, on the key): per-key lists (``collect_list``)
    make Spark fall back to a sort-based aggregation, and lambda functions over arrays run in
    a slow interpreter; the digests are computed for every key."""
    dcs = sorted({d for ds in topic_dcs.values() for d in ds})
    bit = {d: 1 << i for i, d in enumerate(dcs)}
    wanted_mask = {t: sum(bit[d] for d in ds) for t, ds in topic_dcs.items()}

    def transform(evs: Any) -> Any:
        per_dc = (
            # the 64-bit hash of (event id, value hash) is what the digest XORs: shuffling and
            # de-duplicating it instead of the 26-character id keeps every row fixed-width there
            evs.select(
                "ltopic", "resolver", "key", "dc", F.xxhash64("event_id", "vhash").alias("h")
            )
            # every aggregation below groups by (ltopic, key) and more: one shuffle serves all
            .repartition("ltopic", "key")
            .distinct()  # a copy held twice must not cancel itself out of the XOR
            .groupBy("ltopic", "resolver", "key", "dc")
            .agg(F.bit_xor("h").alias("digest"))
        )
        per_key = per_dc.groupBy("ltopic", "resolver", "key").agg(
            F.bit_or(mask_of(bit, F.col("dc"))).alias("held"),
            (F.min("digest") != F.max("digest")).alias("differ"),
        )
        absent_mask = mask_of(wanted_mask, F.col("ltopic")).bitwiseAND(F.bitwise_not("held"))
        absent_in = F.array_compact(
            F.array(
                *[
                    F.when(absent_mask.bitwiseAND(F.lit(b)) != 0, F.lit(d))
                    for d, b in sorted(bit.items())
                ]
            ).cast("array<string>")
        )
        return (
            per_key.filter(F.col("differ") | (absent_mask != 0))
            .withColumn("absent_in", absent_in)
            .drop("held", "differ")
        )

    return transform


def suspect_keys(
    topic_dcs: Mapping[str, Sequence[str]], dcs: Sequence[str]
) -> Callable[[Any], Any]:
    """From the per-id rows of :func:`~spark_reconcile.findings.presence.ids` (bitmasks over
    ``dcs``): ``ltopic, key_h`` (64-bit hash of the key) of the keys some DC holds
    differently. A key is suspect when one
    of its events has copies whose values (or keys) differ, when one of its events is held by
    fewer DCs than the key is (the DCs' event sets differ: the digests of :func:`suspects`
    would differ), or when a DC that should hold the topic holds none of its events. The same
    keys as :func:`suspects` (without its 64-bit XOR's collisions; a key hash's collision only
    adds a key to fold), from rows aggregated once per event id instead of a second shuffle of
    every event."""
    bit = dc_bits(dcs)
    wanted = {t: sum(bit[d] for d in ds if d in bit) for t, ds in topic_dcs.items()}

    def transform(per_id: Any) -> Any:
        per_key = (
            per_id.filter(F.col("ev_held") != 0)
            .select(
                "ltopic",
                # an event id whose copies name two keys makes both suspect
                F.explode(F.array_compact(F.array("ek_min", "ek_max"))).alias("key_h"),
                "ev_held",
                (F.col("v_differ") | F.col("ek_max").isNotNull()).alias("differ"),
            )
            .groupBy("ltopic", "key_h")
            .agg(
                F.bit_or("ev_held").alias("held"),
                F.bit_and("ev_held").alias("every"),
                F.bool_or("differ").alias("differ"),
            )
        )
        absent = mask_of(wanted, F.col("ltopic")).bitwiseAND(F.bitwise_not(F.col("held")))
        return per_key.filter(
            F.col("differ") | (F.col("held") != F.col("every")) | (absent != 0)
        ).select("ltopic", "key_h")

    return transform


def suspect_keys_written(
    per_id: Any, topic_dcs: Mapping[str, Sequence[str]], dcs: Sequence[str], work: Path
) -> Any:
    """:func:`suspect_keys` of ``per_id``, written in ``work`` and read back, grouping only the
    few events that can make a key suspect. An event is *settled* when exactly the DCs that
    should hold its topic hold it and its copies agree (value and key); a key whose events
    are all settled is not suspect. When no event is held by a DC outside its topic's DCs,
    a key with an unsettled event is always suspect (its DCs' event sets differ, or a copy
    differs): then only the unsettled events are grouped by key (few, as a rule), not every
    event id (the aggregation took 2.1 s of a 3 x 1M run). Otherwise :func:`suspect_keys`
    runs on every row."""
    bit = dc_bits(dcs)
    wanted = mask_of(
        {t: sum(bit[d] for d in ds if d in bit) for t, ds in topic_dcs.items()}, F.col("ltopic")
    )
    held = F.col("ev_held")
    differ = F.coalesce(F.col("v_differ"), F.lit(False)) | F.col("ek_max").isNotNull()
    spark = per_id.sparkSession
    (
        per_id.filter((held != 0) & (differ | (held != wanted)))
        .select(
            "ltopic",
            F.explode(F.array_compact(F.array("ek_min", "ek_max"))).alias("key_h"),
            (held.bitwiseAND(F.bitwise_not(wanted)) != 0).alias("outside"),
        )
        .groupBy("ltopic", "key_h")
        .agg(F.bool_or("outside").alias("outside"))
        .write.mode("overwrite")
        .parquet(str(work / "unsettled"))
    )
    unsettled = spark.read.parquet(str(work / "unsettled"))
    if unsettled.filter(F.col("outside")).isEmpty():
        return unsettled.select("ltopic", "key_h")
    per_id.transform(suspect_keys(topic_dcs, dcs)).write.mode("overwrite").parquet(
        str(work / "suspects")
    )
    return spark.read.parquet(str(work / "suspects"))


def absent_from(topic_dcs: Mapping[str, Sequence[str]], suspect_events: Any) -> Any:
    """``ltopic, key, absent_in``: the DCs that should hold the topic and hold none of the
    key's events (sorted), from the suspect keys' events."""
    if not topic_dcs:
        wanted = F.array().cast("array<string>")
    else:
        pairs = [
            x
            for t, ds in sorted(topic_dcs.items())
            for x in (F.lit(t), F.array(*[F.lit(d) for d in sorted(ds)]))
        ]
        wanted = F.coalesce(F.create_map(*pairs)[F.col("ltopic")], F.array().cast("array<string>"))
    return (
        suspect_events.groupBy("ltopic", "key")
        .agg(F.collect_set("dc").alias("_in"))
        .select("ltopic", "key", F.array_except(wanted, F.col("_in")).alias("absent_in"))
    )


def conflicting(suspect_events: Any) -> Any:
    """``ltopic, key, conflicting``: whether one event id of the key has different values in
    different DCs (a forged or corrupted copy). For the suspect keys' events only."""
    return (
        suspect_events.groupBy("ltopic", "key", "event_id")
        .agg(F.count_distinct("vhash").alias("values"))
        .groupBy("ltopic", "key")
        .agg(F.max(F.col("values") > 1).alias("conflicting"))
    )


def divergent(
    topic_dcs: Mapping[str, Sequence[str]],
    with_values: Callable[[Any], Any] | None,
    *,
    fold_on_driver: int = DRIVER_FOLD_MAX_EVENTS,
    suspect_events: Any = None,
) -> Callable[[Any], Any]:
    """Normalised records -> divergent keys. ``topic_dcs``: logical topic -> the DCs that should
    hold it. ``suspect_events``: the suspect keys' events with ``value`` and ``headers``, as
    the job picks them (:func:`suspect_keys_written`, :mod:`spark_reconcile.picked`); the
    records are then not read, and the driver folds the events when they are at most
    ``fold_on_driver`` (:mod:`~spark_reconcile.findings.fold`). Without them (the finding on
    its own), the suspect keys come from the digests of :func:`suspects` and ``with_values``
    reads their events' values: positions (``dc, topic, partition, offset`` plus columns to
    keep) -> the same rows with ``value`` and ``headers``. Rows: ``ltopic, key, hashes``
    (DC -> state hash), ``absent_in``, ``reason``."""

    def transform(df: Any) -> Any:
        if suspect_events is not None:
            return decided(suspect_events, carry_values=True)
        evs = events(df)
        few = evs.transform(suspects(topic_dcs)).select("ltopic", "key")
        return decided(evs.join(few, ["ltopic", "key"], "left_semi"), carry_values=False)

    def decided(evs: Any, *, carry_values: bool) -> Any:
        """Divergent's rows from the suspect keys' events: with their ``value`` and
        ``headers`` when ``carry_values``, else ``with_values`` reads them."""
        if carry_values:
            # few suspect events, as a rule: the driver folds them (no Python worker starts)
            # and decides each key as the plan below would
            on_driver = divergent_on_driver(evs, topic_dcs, fold_on_driver)
            if on_driver is not None:
                return on_driver
            states = key_states(evs)
        elif with_values is not None:
            positions = ("dc", "topic", "partition", "offset", "ltopic", "resolver", "key")
            states = key_states(with_values(evs.select(*positions)))
        else:
            raise ValueError("divergent needs with_values, or suspect_events")
        sus = conflicting(evs).join(absent_from(topic_dcs, evs), ["ltopic", "key"])
        per_key = states.groupBy("ltopic", "key").agg(
            F.map_from_entries(F.collect_list(F.struct("dc", "state_hash"))).alias("hashes"),
            F.count_if(F.col("state_hash").startswith(ERROR_PREFIX)).alias("errors"),
        )
        # an error state of the fold starts with ERROR_PREFIX; plain aggregation, no lambda
        error = F.col("errors") > 0
        return (
            per_key.join(sus, ["ltopic", "key"])
            .filter(
                (F.size(F.array_distinct(F.map_values("hashes"))) > 1)
                | (F.size("absent_in") > 0)
                | error
            )
            .withColumn(
                "reason",
                F.when(F.col("conflicting"), F.lit(CONFLICTING))
                .when(error, F.lit(UNFOLDABLE))
                .otherwise(F.lit(ABSENT)),
            )
            .select("ltopic", "key", "hashes", "absent_in", "reason")
        )

    return transform
