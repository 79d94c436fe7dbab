"""Trusted copies: decode an event once, where its origin wrote it, not in every DC.

The mirror copies an event's value byte for byte, so a copy whose bytes equal those of a row
the native decoder accepted decodes the same (same verdict, id and key), provided it carries
no ``event-*`` header (those take part in the verdict). The job's read stage therefore gives
the full envelope check only to the rows that are not such *tentative* copies; a tentative
copy gets its id and key cut from the value (what the envelope pattern would have confirmed)
and ``tent`` set. The presence aggregation, which already groups every row of an event id,
then tells per id whether its tentative rows are *confirmed*: every in-window event row of
the id has the same value hash and at least one of them was fully decoded. The tentative rows
of unconfirmed ids (a forged or broken copy, an origin outside the read) get the full check
afterwards (:func:`unconfirmed_ids`, :func:`refused`, picked in one scan by
:mod:`spark_reconcile.picked`); if any fails it, the job writes its records again with every
row decoded (``trust_copies=False``), so the findings are always those of a full decode.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import functions as F

from aa.provenance import SRC
from spark_reconcile.native_decode import verdict

_LOOKS_LIKE_ID = r'^\{"id":"[0-9A-HJKMNP-TV-Z]{26}"'
TENT, VERIFIED, UNSURE = 1, 2, 4
"""Bits of presence's per-row ``trust`` flag (:func:`trust_flag`)."""


def tentative(header_keys: Any, has_envelope_headers: Any, max_bytes: int) -> Any:
    """A mirrored copy (an ``aa-src`` header) without ``event-*`` headers whose value starts
    like an envelope (``{"id":"`` and 26 id characters): its bytes decide for it. (Not
    ``has_prov``: its three header lookups here pushed the read stage's generated method past
    HotSpot's 8,000-byte limit for compiling a method, 5.2 -> 9.0 kB, so it ran interpreted.)"""
    value = F.col("value")
    head = F.substring(value, 1, 34).cast("string")
    return F.coalesce(
        (F.array_position(header_keys, SRC) > 0)
        & ~has_envelope_headers
        & value.isNotNull()
        & (F.length(value) <= max_bytes)
        & head.rlike(_LOOKS_LIKE_ID),
        F.lit(False),
    )


def trust_flag(is_event: Any) -> Any:
    """Per row, for presence: ``TENT`` a tentative event row its hash can confirm, ``UNSURE``
    a tentative row outside what presence compares (out of the window, bad provenance),
    ``VERIFIED`` an event row the native decoder accepted; 0 otherwise. (A row only the
    Python decoder accepted vouches for nothing: its key may be written with escapes, which
    a tentative copy's cut key would keep.)"""
    return (
        F.when(F.col("tent") & is_event, F.lit(TENT))
        .when(F.col("tent"), F.lit(UNSURE))
        .when(is_event & ~F.col("needs_slow"), F.lit(VERIFIED))
        .otherwise(F.lit(0))
    )


def unconfirmed(trust: Any, v_min: Any, v_max: Any) -> Any:
    """Per id (``trust``: bit_or of :func:`trust_flag`): tentative rows that its fully
    decoded rows do not vouch for."""
    tent = trust.bitwiseAND(TENT | UNSURE) != 0
    vouched = (trust.bitwiseAND(UNSURE) == 0) & (trust.bitwiseAND(VERIFIED) != 0) & (v_min == v_max)
    return tent & ~F.coalesce(vouched, F.lit(False))


def unconfirmed_ids(per_id: Any) -> Any:
    """``ltopic, event_id`` of the :func:`~.presence.ids` rows with unconfirmed tentative
    copies (a tentative row's rid is "event:" + its event id)."""
    return per_id.filter(F.col("unconfirmed")).select(
        "ltopic", F.expr("substring(rid, 7)").alias("event_id")
    )


def refused(rows: Any) -> Any:
    """Of tentative rows read back from a small file (with ``ev_value``; they have no
    ``event-*`` header), those the native decoder refuses. Checked on the file: in one query
    with the join that picks them, Spark's optimizer moves the check below the join (onto
    every tentative row), whatever the condition is written as."""
    no_headers = F.lit(None).cast("array<struct<key:string,value:binary>>")
    return rows.withColumn("no_headers", no_headers).filter(~verdict("ev_value", "no_headers"))
