"""Normalise raw Kafka rows: provenance columns, record identity, window and bucket.

Pure ``DataFrame -> DataFrame`` transforms (:func:`with_provenance`, :func:`with_events`,
:func:`with_identity`), composed by :func:`normalise`. Decoding follows ``aa.provenance.read``
in Spark SQL: a malformed ``aa-*`` header gives the row a ``prov_error`` (reported as a finding),
never an exception. A record without provenance headers was written here by an application:
its origin is the DC it is read from and its identity its own ``dc/topic/partition/offset``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import functions as F
from pyspark.sql import types as T

from aa.provenance import MIRRORED_AT, ORIGIN, PATH, SRC
from spark_reconcile.copies import tentative
from spark_reconcile.errors import EventDecodeError
from spark_reconcile.events import identity
from spark_reconcile.headers import first_text, header_count, header_keys
from spark_reconcile.native_decode import MAX_FAST_BYTES, fast_decode
from spark_reconcile.window import Window

_DC_RE = r"^[A-Za-z][A-Za-z0-9_-]{0,31}$"
_PATH_RE = r"^[A-Za-z][A-Za-z0-9_-]{0,31}(,[A-Za-z][A-Za-z0-9_-]{0,31})*$"
_SRC_RE = r"^[A-Za-z][A-Za-z0-9_-]{0,31}/[^/]+/[0-9]+/[0-9]+$"

NORMALISED_EXTRA = (
    "has_prov",
    "origin",
    "path",
    "src",
    "mirrored_at",
    "prov_error",
    "resolver",
    "event_id",
    "event_key",
    "event_error",
    "rid",
    "in_window",
    "bucket",
)

RAW_KEPT = ("dc", "topic", "ltopic", "partition", "offset", "ts")
"""Raw columns every finding reads (``key``, ``value`` and ``headers`` are not kept)."""

NARROW_COLUMNS = (
    *RAW_KEPT,
    *(c for c in NORMALISED_EXTRA if c not in ("rid", "in_window", "bucket")),
    "needs_slow",
    "tent",
    "vhash",
    "key_hash",
)
"""What :func:`prepare` keeps: the raw columns findings read, the normalised columns known
before :func:`finish` (``rid``, ``in_window`` and ``bucket`` are added there) and the hashes;
derived from :data:`NORMALISED_EXTRA` so a new normalised column is never dropped by hand."""


def with_provenance(df: Any) -> Any:
    """Add ``has_prov``, ``origin``, ``path`` (array), ``src``, ``mirrored_at`` (ms or null) and
    ``prov_error`` (null when the headers are well formed)."""
    h_origin, h_path, h_src = first_text(ORIGIN), first_text(PATH), first_text(SRC)
    repeated = (header_count(ORIGIN) > 1) | (header_count(PATH) > 1) | (header_count(SRC) > 1)
    path_parts = F.split(h_path, ",")
    bad_path = ~h_path.rlike(_PATH_RE)
    error = (
        F.when(repeated, F.lit("an aa-* header appears more than once"))
        .when(
            h_origin.isNull() & (h_path.isNotNull() | h_src.isNotNull()),
            F.lit("aa-path or aa-src without aa-origin"),
        )
        .when(h_origin.isNotNull() & ~h_origin.rlike(_DC_RE), F.lit("aa-origin is not a DC name"))
        .when(h_path.isNotNull() & bad_path, F.lit("aa-path names something that is not a DC"))
        .when(
            h_path.isNotNull() & (F.get(path_parts, 0) != h_origin),
            F.lit("aa-path does not start with aa-origin"),
        )
        .when(
            h_src.isNotNull() & ~h_src.rlike(_SRC_RE),
            F.lit("aa-src is not dc/topic/partition/offset"),
        )
        .when(
            h_origin.isNotNull() & h_src.isNull(),
            F.lit("aa-origin without aa-src: cannot be matched to its origin record"),
        )
    )
    own_src = F.concat_ws("/", "dc", "topic", "partition", "offset")
    return (
        df.withColumn("prov_error", error)
        .withColumn("has_prov", h_origin.isNotNull() | h_path.isNotNull() | h_src.isNotNull())
        .withColumn("origin", F.coalesce(h_origin, F.col("dc")))
        .withColumn(
            "path",
            F.when(h_path.isNotNull(), path_parts)
            .when(h_origin.isNotNull(), F.array(h_origin, F.col("dc")))
            .otherwise(F.array(F.col("dc"))),
        )
        .withColumn("src", F.coalesce(h_src, own_src))
        .withColumn("mirrored_at", first_text(MIRRORED_AT).try_cast("long"))
    )


def _decode_udf() -> Any:
    schema = T.StructType(
        [
            T.StructField("id", T.StringType()),
            T.StructField("key", T.StringType()),
            T.StructField("error", T.StringType()),
        ]
    )

    def decode(value: bytes | None, headers: Any) -> tuple[Any, ...] | None:
        hs = [(h[0], h[1]) for h in headers or ()]
        try:
            ev = identity(value, hs)
        except EventDecodeError as exc:
            return (None, None, str(exc)[:500])
        return (ev.id, ev.key, None)

    return F.udf(decode, schema, useArrow=False)


def with_events(
    resolvers: Mapping[str, str], *, trust_copies: bool = False
) -> Callable[[Any], Any]:
    """Add ``resolver`` (for event-sourced logical topics), ``event_id``, ``event_key``,
    ``event_error`` (null until :func:`decode_slow` for rows that need it), ``needs_slow``
    (an event row the native decoder did not accept), ``vhash`` (a 64-bit hash of the value:
    two copies of one event with different values conflict) and ``tent``. With
    ``trust_copies``, a mirrored copy that looks like an event (:func:`~.copies.tentative`) is
    not decoded: its id and key are cut from the value and ``tent`` marks it, to be confirmed
    against its origin's bytes (:mod:`spark_reconcile.copies`); without, ``tent`` is false."""

    def transform(df: Any) -> Any:
        out = df.withColumn("vhash", F.xxhash64("value")).withColumn("key_hash", F.xxhash64("key"))
        if not resolvers:
            return (
                out.withColumn("resolver", F.lit(None).cast("string"))
                .withColumn("event_id", F.lit(None).cast("string"))
                .withColumn("event_key", F.lit(None).cast("string"))
                .withColumn("event_error", F.lit(None).cast("string"))
                .withColumn("needs_slow", F.lit(False))
                .withColumn("tent", F.lit(False))
            )

        mapping = F.create_map(*[F.lit(x) for kv in sorted(resolvers.items()) for x in kv])
        resolver = mapping[F.col("ltopic")]
        ok, ev_id, ev_key, has_envelope_headers = fast_decode()
        tent = resolver.isNotNull() & tentative(header_keys(), has_envelope_headers, MAX_FAST_BYTES)
        if trust_copies:
            # the full verdict only where the row is not a tentative copy (a CASE evaluates
            # the branch it takes)
            ok = F.when(tent, F.lit(True)).otherwise(ok)
        else:
            tent = F.lit(False)
        fast = resolver.isNotNull() & ok
        return (
            out.withColumn("resolver", resolver)
            .withColumn("tent", tent)
            .withColumn("needs_slow", resolver.isNotNull() & ~ok)
            .withColumn("event_id", F.when(fast, ev_id))
            .withColumn("event_key", F.when(fast, ev_key))
            .withColumn("event_error", F.lit(None).cast("string"))
        )

    return transform


def narrow(df: Any) -> Any:
    """The columns every finding needs, and ``ev_value`` / ``ev_headers``: the value of
    event-topic rows and the headers of the rows the native decoder refused (the Python
    decoder reads both for those rows; the divergence fold reads them for suspect keys).
    Findings select their columns, so a columnar copy of these rows costs them nothing."""
    keep = [c for c in NARROW_COLUMNS if c in df.columns and c not in ("path", "src")]
    return df.select(
        *keep,
        # a string caches smaller than an array; widened again by :func:`widen`
        F.concat_ws(",", "path").alias("path_s"),
        # aa-src is only needed where no event id identifies the record; a local write's own
        # src is recomputed from its position
        F.when(
            F.col("has_prov") & (F.col("resolver").isNull() | F.col("needs_slow")), F.col("src")
        ).alias("src"),
        F.when(F.col("resolver").isNotNull(), F.col("value")).alias("ev_value"),
        # headers only where the Python decoder reads them: a row the native decoder
        # accepted has envelope headers that agree with its value (or none), so the fold of
        # suspect keys decodes it the same without them; Parquet writes nested arrays slowly
        F.when(F.col("needs_slow"), F.col("headers")).alias("ev_headers"),
    )


def widen(df: Any) -> Any:
    """Undo :func:`narrow`'s savings: ``path`` as an array, ``src`` of local writes."""
    own_src = F.concat_ws("/", "dc", "topic", "partition", "offset")
    return df.withColumn("path", F.split("path_s", ",")).withColumn(
        "src", F.coalesce(F.col("src"), F.when(~F.col("has_prov"), own_src))
    )


def decode_slow_rows(value: str = "value", headers: str = "headers") -> Callable[[Any], Any]:
    """Decode every row in Python (``Event.decode``: an id, or the exact error); for the rows
    the native decoder refused only (a Python UDF runs on every row it is given)."""

    def transform(df: Any) -> Any:
        decoded = _decode_udf()(F.col(value), F.col(headers))
        return (
            df.withColumn("_ev", decoded)
            .withColumn("event_id", F.col("_ev.id"))
            .withColumn("event_key", F.col("_ev.key"))
            .withColumn("event_error", F.col("_ev.error"))
            .drop("_ev")
        )

    return transform


def decode_slow(value: str = "value", headers: str = "headers") -> Callable[[Any], Any]:
    """Decode the rows with ``needs_slow`` in Python (:func:`decode_slow_rows`); the filter
    keeps every other row out of the Python workers."""

    def transform(df: Any) -> Any:
        fast = df.filter(~F.col("needs_slow"))
        slow = df.filter(F.col("needs_slow")).transform(decode_slow_rows(value, headers))
        return fast.unionByName(slow)

    return transform


def with_identity(window: Window, bucket_ms: int) -> Callable[[Any], Any]:
    """Add ``rid`` (event id for envelopes, else ``aa-src``), ``in_window`` and ``bucket``."""

    def transform(df: Any) -> Any:
        return (
            df.withColumn(
                "rid",
                F.when(
                    F.col("event_id").isNotNull(), F.concat(F.lit("event:"), "event_id")
                ).otherwise(F.col("src")),
            )
            .withColumn(
                "in_window", (F.col("ts") >= window.since_ms) & (F.col("ts") < window.until_ms)
            )
            .withColumn("bucket", F.floor(F.col("ts") / bucket_ms).cast("long") * bucket_ms)
        )

    return transform


def prepare(resolvers: Mapping[str, str], *, trust_copies: bool = False) -> Callable[[Any], Any]:
    """Raw rows -> narrow rows with provenance and natively decoded events (what the job
    caches); :func:`finish` completes them. ``trust_copies``: see :func:`with_events`."""

    def transform(df: Any) -> Any:
        return (
            df.transform(with_provenance)
            .transform(with_events(resolvers, trust_copies=trust_copies))
            .transform(narrow)
        )

    return transform


def finish(window: Window, bucket_ms: int) -> Callable[[Any], Any]:
    """Prepared rows whose events are decoded (:func:`decode_slow` or
    :func:`decode_slow_rows` done) -> normalised rows: identity, window and bucket."""

    def transform(df: Any) -> Any:
        return df.transform(widen).transform(with_identity(window, bucket_ms))

    return transform


def normalise(window: Window, bucket_ms: int, resolvers: Mapping[str, str]) -> Callable[[Any], Any]:
    """Raw rows -> normalised rows: provenance, events, identity (raw columns kept)."""

    def transform(df: Any) -> Any:
        return (
            df.transform(with_provenance)
            .transform(with_events(resolvers))
            .transform(decode_slow())
            .transform(with_identity(window, bucket_ms))
        )

    return transform
