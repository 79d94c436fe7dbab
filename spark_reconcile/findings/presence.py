"""Presence: where each record is, from ONE aggregation on (logical topic, record id).

``missing`` (an origin record a DC that should hold it lacks) and ``duplicated`` (a record held
twice in one DC) both ask, per record id, which DCs hold it and how often. One hash
aggregation over every record answers both with fixed-width buffers (a DC bitmask and two
counts), and keeps only the *flagged* ids: those some expected DC lacks, and those held more
often than by distinct DCs. The exact answers are then computed from the few rows behind
flagged ids, never by joining every record with every other (the shuffle joins on string keys
this replaced were most of the job's wall time).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import functions as F

from spark_reconcile.copies import trust_flag, unconfirmed
from spark_reconcile.findings.looped import is_looped
from spark_reconcile.findings.masks import dc_bits, mask_of

FLAGGED_COLUMNS = ("ltopic", "rid", "held", "lacking", "maybe_duplicated")


def wanted_masks(
    expected: Iterable[tuple[str, str, str]], bits: Mapping[str, int]
) -> dict[tuple[str, str], int]:
    """(origin, logical topic) -> bitmask of the other DCs that should hold its records."""
    out: dict[tuple[str, str], int] = {}
    for origin, ltopic, target in expected:
        if target != origin and target in bits:
            out[(origin, ltopic)] = out.get((origin, ltopic), 0) | bits[target]
    return out


def is_origin_record() -> Any:
    """The record as its origin wrote it (no provenance), in the window."""
    return F.col("in_window") & ~F.col("has_prov") & F.col("prov_error").isNull()


def counts_as_copy() -> Any:
    """A row ``duplicated`` counts: in the window, well-formed provenance, not a loop."""
    return F.col("in_window") & F.col("prov_error").isNull() & ~is_looped()


def is_event() -> Any:
    """A decodable event in the window with well-formed provenance: what ``divergent``
    compares between DCs."""
    return (
        F.col("in_window")
        & F.col("resolver").isNotNull()
        & F.col("event_error").isNull()
        & F.col("prov_error").isNull()
    )


def ids(dcs: Sequence[str], expected: Iterable[tuple[str, str, str]]) -> Callable[[Any], Any]:
    """Normalised records -> one row per record id that is flagged or is an event: the
    columns of :func:`presence` (``rid`` only where flagged, else null) and, for ``divergent``,
    per event id: ``ek_min`` / ``ek_max`` (the 64-bit hash of its event key; ``ek_max`` only
    when copies name another key), ``ev_held`` (bitmask of the DCs holding it as an event, 0
    for non-events) and ``v_differ`` (its copies' values differ). One aggregation on (logical
    topic, record id) serves missing, duplicated and divergent's suspects (an event's record
    id is its event id), so every record is shuffled once for the three. ``unconfirmed``
    (with ``rid``): the id has tentative copies its decoded rows do not vouch for
    (:mod:`spark_reconcile.copies`)."""
    bits = dc_bits(dcs)
    wanted = {f"{o}\x00{t}": m for (o, t), m in wanted_masks(expected, bits).items()}
    zero = F.lit(0).cast("long")

    def transform(df: Any) -> Any:
        bit = mask_of(bits, F.col("dc"))
        need = F.when(
            is_origin_record(),
            mask_of(wanted, F.concat(F.col("origin"), F.lit("\x00"), F.col("ltopic"))),
        ).otherwise(zero)
        # each row's few fixed-width values, shuffled on (logical topic, record id) first: the
        # copies of one id sit in different DCs' partitions, so a map-side partial aggregation
        # could not combine them and only built a hash map of every id per task (spilling);
        # after this shuffle the aggregation needs no second one and combines every id's rows
        rows = df.select(
            "ltopic",
            "rid",
            bit.alias("bit"),
            need.alias("need"),
            counts_as_copy().alias("counted"),
            is_event().alias("event"),
            # the key's 64-bit hash: string buffers would make Spark fall back from its
            # fixed-width hash aggregation
            F.when(is_event(), F.xxhash64("event_key")).alias("ek"),
            F.when(is_event(), F.col("vhash")).alias("vh"),
            trust_flag(is_event()).alias("trust"),
        ).repartition("ltopic", "rid")
        b, counted, event = F.col("bit"), F.col("counted"), F.col("event")
        per_id = rows.groupBy("ltopic", "rid").agg(
            F.bit_or(b).alias("held"),
            F.bit_or("need").alias("need"),
            F.count_if(counted).alias("counted"),
            F.bit_or(F.when(counted, b).otherwise(zero)).alias("counted_in"),
            F.min("ek").alias("ek_min"),
            F.max("ek").alias("ek_max"),
            F.bit_or(F.when(event, b).otherwise(zero)).alias("ev_held"),
            F.min("vh").alias("v_min"),
            F.max("vh").alias("v_max"),
            F.bit_or("trust").alias("trust"),
        )
        lacking = F.col("need").bitwiseAND(F.bitwise_not(F.col("held"))) != 0
        # a DC outside ``dcs`` has no bit: its rows make a candidate, which the exact
        # re-count clears
        maybe_dup = F.col("counted") > F.bit_count(F.col("counted_in"))
        flagged = F.col("lacking") | F.col("maybe_duplicated")
        unsure = F.col("unconfirmed")
        return (
            per_id.withColumn("lacking", lacking)
            .withColumn("maybe_duplicated", maybe_dup)
            .withColumn("unconfirmed", unconfirmed(F.col("trust"), F.col("v_min"), F.col("v_max")))
            .filter(flagged | (F.col("ev_held") != 0) | unsure)
            .select(
                "ltopic",
                F.when(flagged | unsure, F.col("rid")).alias("rid"),
                "held",
                "lacking",
                "maybe_duplicated",
                "ek_min",
                F.when(F.col("ek_max") != F.col("ek_min"), F.col("ek_max")).alias("ek_max"),
                "ev_held",
                (F.col("v_min") != F.col("v_max")).alias("v_differ"),
                "unconfirmed",
            )
        )

    return transform


def flagged_only(ids_rows: Any) -> Any:
    """:func:`ids` rows -> :func:`presence` rows."""
    return ids_rows.filter(F.col("lacking") | F.col("maybe_duplicated")).select(*FLAGGED_COLUMNS)


def presence(dcs: Sequence[str], expected: Iterable[tuple[str, str, str]]) -> Callable[[Any], Any]:
    """Normalised records -> the flagged record ids: ``ltopic, rid, held`` (bitmask of
    :func:`dc_bits` of the DCs holding a row with that id, any row), ``lacking`` (an origin
    record of the id is absent from a DC that should hold it) and ``maybe_duplicated`` (more
    counted rows than DCs holding them: a candidate, re-counted exactly by ``duplicated``).
    ``expected``: ``(origin, ltopic, target)``."""

    def transform(df: Any) -> Any:
        return df.transform(ids(dcs, expected)).transform(flagged_only)

    return transform


@dataclass(frozen=True, slots=True)
class Flagged:
    """The flagged record ids of one run (:func:`presence`) and the DCs their bits name."""

    dcs: tuple[str, ...]
    rows: Any

    def holds(self, column: str) -> Any:
        """True where ``held`` has the bit of the DC named in ``column``."""
        bit = mask_of(dc_bits(self.dcs), F.col(column))
        return (bit != 0) & (F.col("held").bitwiseAND(bit) != 0)


def flag_dcs(dcs: Iterable[str], expected: Iterable[tuple[str, str, str]]) -> tuple[str, ...]:
    """The DCs one run's bitmasks name: ``dcs`` and every DC ``expected`` names."""
    return tuple(sorted({*dcs, *(o for o, _, _ in expected), *(t for _, _, t in expected)}))


def flag(df: Any, dcs: Iterable[str], expected: Iterable[tuple[str, str, str]]) -> Flagged:
    """:func:`presence` of ``df`` over ``dcs`` (and every DC ``expected`` names)."""
    rows = list(expected)
    names = flag_dcs(dcs, rows)
    return Flagged(names, df.transform(presence(names, rows)))
