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


# Headers are read with ``headers.key`` / ``headers.value`` (whole-array projections) and
# ``array_position``: Spark evaluates lambda functions (``filter``, ``forall``...) row by row in
# an interpreter that, on executors, builds a new SQL configuration for every array element it
# reads, which made header decoding the bulk of the job.


def _header_keys(headers: str = "headers") -> Any:
    from pyspark.sql import functions as F

    return F.coalesce(F.col(f"{headers}.key"), F.array().cast("array<string>"))


def _header_count(name: str, headers: str = "headers") -> Any:
    """How many headers are called ``name``."""
    from pyspark.sql import functions as F

    keys = _header_keys(headers)
    return F.size(keys) - F.size(F.array_remove(keys, name))


def _first_text(name: str, headers: str = "headers") -> Any:
    """The value of the first header called ``name`` as text (null when there is none)."""
    from pyspark.sql import functions as F

    position = F.array_position(_header_keys(headers), name)  # 1-based, 0 when absent
    return F.get(F.col(f"{headers}.value"), (position - 1).cast("int")).cast("string")


def with_provenance(df: Any) -> Any:
    """Add ``has_prov``, ``origin``, ``path`` (array), ``src``, ``mirrored_at`` (ms or null) and
    ``prov_error`` (null when the headers are well formed)."""
    from pyspark.sql import functions as F

    h_origin, h_path, h_src = _first_text(ORIGIN), _first_text(PATH), _first_text(SRC)
    repeated = (_header_count(ORIGIN) > 1) | (_header_count(PATH) > 1) | (_header_count(SRC) > 1)
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
        .withColumn("mirrored_at", _first_text(MIRRORED_AT).try_cast("long"))
    )


# The envelope exactly as conflict writes it (orjson, fields in ``Event.to_json`` order, no
# escapes in id, key, type and origin, the HLC's DC equal to the origin) with a payload in a
# strict JSON grammar: one regular expression decides, no JSON parser runs. Every other row of
# an event topic goes to ``Event.decode`` for its exact verdict. A JSON parser is not used
# because Spark's accepts what orjson refuses (infinite numbers, lone surrogates, raw control
# characters, single quotes), so a broken event would have been read as a good one.
_ID = "[0-9A-HJKMNP-TV-Z]{26}"
_DC = "[A-Za-z][A-Za-z0-9_-]{0,31}"
_TEXT = r'[^"\\\x00-\x1f]+'
_WS = r"[ \t\n\r]*+"
# a string: runs of plain characters, escapes between them; \u escapes outside the surrogate
# range (a surrogate pair is valid JSON but is left to the Python decoder)
_STRING = (
    r'"[^"\\\x00-\x1f]*+(?:\\(?:["\\/bfnrt]|u(?![dD][89a-fA-F])[0-9a-fA-F]{4})'
    r'[^"\\\x00-\x1f]*+)*+"'
)
# finite for orjson: at most 18 significant digits and a 2-digit exponent
_NUMBER = r"-?+(?:0|[1-9][0-9]{0,17}+)(?:\.[0-9]{1,17}+)?+(?:[eE][+-]?+[0-9]{1,2}+)?+"
_SCALAR = rf"(?:{_STRING}|{_NUMBER}|true|false|null)"
PAYLOAD_DEPTH = 4
"""Arrays and objects nested deeper than this go to the Python decoder."""
MAX_FAST_BYTES = 2048
"""Longer values go to the Python decoder: Java's regex engine recurses once per repeated
group (array element, object member, escape), so an unbounded input could overflow the
executor thread's stack."""


def _json_value(depth: int) -> str:
    """A JSON value nested at most ``depth`` arrays/objects deep. Each element is written once
    (followed by a comma that a next element follows, or by the closing bracket), so the
    pattern doubles per level instead of quadrupling; possessive throughout (no backtracking)."""
    if depth == 0:
        return _SCALAR
    inner = _json_value(depth - 1)
    member = rf"{_STRING}{_WS}:{_WS}{inner}"
    array = rf"\[{_WS}(?:{inner}{_WS}(?:,{_WS}(?!\])|(?=\])))*+\]"
    obj = rf"\{{{_WS}(?:{member}{_WS}(?:,{_WS}(?!\}})|(?=\}})))*+\}}"
    return rf"(?:{_SCALAR}|{array}|{obj})"


_ENVELOPE_RE = (
    rf'^\{{"id":"{_ID}","key":"{_TEXT}","type":"{_TEXT}","origin":"({_DC})",'
    # the HLC as conflict encodes it (no leading zeros): an ``event-hlc`` header is compared
    # with that text, so a padded one is left to the Python decoder
    rf'"hlc":"(?:0|[1-9][0-9]{{0,14}}):(?:0|[1-9][0-9]{{0,19}}):\1",'
    rf'"payload":{_WS}{_json_value(PAYLOAD_DEPTH)}{_WS}'
    # \z, not $: Java's $ also matches before a final line terminator (\u2028 among them)
    rf'(?:,"supersedes":\[(?:"{_ID}"(?:,"{_ID}")*+)?+\])?+\}}\z'
)
_MAX_PHYSICAL = (1 << 48) - 1
_ENVELOPE_HEADERS = ("event-id", "event-type", "event-origin", "event-hlc")
_ID_AT = len('{"id":"') + 1


def _envelope_fields(text: Any) -> dict[str, Any]:
    """The texts of ``key``, ``type``, ``origin`` and ``hlc`` of a value the envelope pattern
    matched. Those fields and the id hold no quote, so each is the text after a fixed quote:
    ``{"id":"ID","key":"KEY","type":"TYPE","origin":"ORIGIN","hlc":"HLC"`` has KEY after the
    7th quote, TYPE after the 11th, ORIGIN after the 15th and HLC after the 19th. Each field is
    cut on its own, with ``substring_index`` (a byte search) up to the quote that ends it, then
    back to the one before: a copy's key, cut alone, scans 8 quotes instead of the 20 a cut of
    the whole prefix first would. (Nesting the cuts, each in the previous one's prefix, cost
    ~4.5 s more of the read stage's CPU at 3 x 1M: Spark evaluates each field's chain apart,
    so every field paid for the longest prefix; a ``substr`` to the end of the value walks and
    copies every character, once per field.)"""
    from pyspark.sql import functions as F

    def field(quotes: int) -> Any:
        return F.substring_index(F.substring_index(text, '"', quotes + 1), '"', -1)

    return {"key": field(7), "type": field(11), "origin": field(15), "hlc": field(19)}


def _fast_decode(value: str = "value", headers: str = "headers") -> tuple[Any, Any, Any, Any]:
    """(ok, id, key, has envelope headers) columns: ``ok`` is true only for values
    ``Event.decode`` accepts."""
    from pyspark.sql import functions as F

    text = F.col(value).cast("string")
    event_id = F.substring(text, _ID_AT, 26)
    fields = _envelope_fields(text)
    key, hlc = fields["key"], fields["hlc"]
    want = {
        "event-id": event_id,
        "event-type": fields["type"],
        "event-origin": fields["origin"],
        "event-hlc": hlc,
    }
    # each envelope header present at most once and equal to the value's field (a repeated
    # one goes to the Python decoder, which decides); most records carry none of them
    agree = F.lit(True)
    for name in _ENVELOPE_HEADERS:
        n = _header_count(name, headers)
        agree = agree & ((n == 0) | ((n == 1) & (_first_text(name, headers) == want[name])))
    has_envelope_headers = F.arrays_overlap(
        _header_keys(headers), F.array(*[F.lit(h) for h in _ENVELOPE_HEADERS])
    )
    headers_agree = F.when(~has_envelope_headers, F.lit(True)).otherwise(agree)
    ok = F.when(
        F.col(value).isNull() | (F.length(F.col(value)) > MAX_FAST_BYTES), F.lit(False)
    ).otherwise(
        F.is_valid_utf8(text)
        & text.rlike(_ENVELOPE_RE)
        & (F.substring_index(hlc, ":", 1).cast("long") <= F.lit(_MAX_PHYSICAL))
        & headers_agree
    )
    return F.coalesce(ok, F.lit(False)), event_id, key, has_envelope_headers


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

    def decode(value: bytes | None, headers: Any) -> tuple[Any, ...] | None:
        from spark_reconcile.errors import EventDecodeError
        from spark_reconcile.events import identity

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
    from pyspark.sql import functions as F

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
        from spark_reconcile.copies import tentative

        mapping = F.create_map(*[F.lit(x) for kv in sorted(resolvers.items()) for x in kv])
        resolver = mapping[F.col("ltopic")]
        ok, ev_id, ev_key, has_envelope_headers = _fast_decode()
        tent = resolver.isNotNull() & tentative(
            _header_keys(), has_envelope_headers, MAX_FAST_BYTES
        )
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


def verdict(value: str, headers: str) -> Any:
    """True where the native decoder accepts the row (``value``, ``headers`` columns)."""
    return _fast_decode(value, headers)[0]


def narrow(df: Any) -> Any:
    """The columns every finding needs, and ``ev_value`` / ``ev_headers``: the value of
    event-topic rows and the headers of the rows the native decoder refused (the Python
    decoder reads both for those rows; the divergence fold reads them for suspect keys).
    Findings select their columns, so a columnar copy of these rows costs them nothing."""
    from pyspark.sql import functions as F

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
    from pyspark.sql import functions as F

    own_src = F.concat_ws("/", "dc", "topic", "partition", "offset")
    return df.withColumn("path", F.split("path_s", ",")).withColumn(
        "src", F.coalesce(F.col("src"), F.when(~F.col("has_prov"), own_src))
    )


def decode_slow_rows(value: str = "value", headers: str = "headers") -> Callable[[Any], Any]:
    """Decode every row in Python (``Event.decode``: an id, or the exact error); for the rows
    the native decoder refused only (a Python UDF runs on every row it is given)."""
    from pyspark.sql import functions as F

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
    from pyspark.sql import functions as F

    def transform(df: Any) -> Any:
        fast = df.filter(~F.col("needs_slow"))
        slow = df.filter(F.col("needs_slow")).transform(decode_slow_rows(value, headers))
        return fast.unionByName(slow)

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
