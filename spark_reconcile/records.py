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

from aa.provenance import MIRRORED_AT, ORIGIN, PATH, SRC
from spark_reconcile.window import Window

_DC_RE = r"^[A-Za-z][A-Za-z0-9_-]{0,31}$"
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


def _headers_named(name: str) -> Any:
    from pyspark.sql import functions as F

    return F.filter(F.coalesce(F.col("headers"), F.array()), lambda h: h["key"] == F.lit(name))


def _first_text(name: str) -> Any:
    from pyspark.sql import functions as F

    return F.get(_headers_named(name), 0)["value"].cast("string")


def with_provenance(df: Any) -> Any:
    """Add ``has_prov``, ``origin``, ``path`` (array), ``src``, ``mirrored_at`` (ms or null) and
    ``prov_error`` (null when the headers are well formed)."""
    from pyspark.sql import functions as F

    h_origin, h_path, h_src = _first_text(ORIGIN), _first_text(PATH), _first_text(SRC)
    repeated = (
        (F.size(_headers_named(ORIGIN)) > 1)
        | (F.size(_headers_named(PATH)) > 1)
        | (F.size(_headers_named(SRC)) > 1)
    )
    path_parts = F.split(h_path, ",")
    bad_path = F.exists(path_parts, lambda p: ~p.rlike(_DC_RE))
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
        .withColumn("mirrored_at", _first_text(MIRRORED_AT).try_cast("long"))
    )


def _decode_udf() -> Any:
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    schema = T.StructType(
        [
            T.StructField("id", T.StringType()),
            T.StructField("key", T.StringType()),
            T.StructField("error", T.StringType()),
        ]
    )

    def decode(resolver: str | None, value: bytes | None, headers: Any) -> tuple[Any, ...] | None:
        if resolver is None:
            return None
        from spark_reconcile.errors import EventDecodeError
        from spark_reconcile.events import identity

        hs = [(h[0], h[1]) for h in headers or ()]
        try:
            ev = identity(value, hs)
        except EventDecodeError as exc:
            return (None, None, str(exc)[:500])
        return (ev.id, ev.key, None)

    return F.udf(decode, schema, useArrow=False)


def with_events(resolvers: Mapping[str, str]) -> Callable[[Any], Any]:
    """Add ``resolver`` (for event-sourced logical topics), ``event_id``, ``event_key`` and
    ``event_error`` (why the payload is not a valid event; the row is kept)."""
    from pyspark.sql import functions as F

    def transform(df: Any) -> Any:
        if resolvers:
            mapping = F.create_map(*[F.lit(x) for kv in sorted(resolvers.items()) for x in kv])
            resolver = mapping[F.col("ltopic")]
        else:
            resolver = F.lit(None).cast("string")
        out = df.withColumn("resolver", resolver)
        if not resolvers:
            return (
                out.withColumn("event_id", F.lit(None).cast("string"))
                .withColumn("event_key", F.lit(None).cast("string"))
                .withColumn("event_error", F.lit(None).cast("string"))
            )
        decoded = _decode_udf()(F.col("resolver"), F.col("value"), F.col("headers"))
        return (
            out.withColumn("_ev", decoded)
            .withColumn("event_id", F.col("_ev.id"))
            .withColumn("event_key", F.col("_ev.key"))
            .withColumn("event_error", F.col("_ev.error"))
            .drop("_ev")
        )

    return transform


def with_identity(window: Window, bucket_ms: int) -> Callable[[Any], Any]:
    """Add ``rid`` (event id for envelopes, else ``aa-src``), ``in_window`` and ``bucket``."""
    from pyspark.sql import functions as F

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


def normalise(window: Window, bucket_ms: int, resolvers: Mapping[str, str]) -> Callable[[Any], Any]:
    """Raw rows -> normalised rows: provenance, events, identity."""

    def transform(df: Any) -> Any:
        return (
            df.transform(with_provenance)
            .transform(with_events(resolvers))
            .transform(with_identity(window, bucket_ms))
        )

    return transform
