"""The native decoder: conflict's envelope recognised in Spark SQL, no Python worker.

The envelope exactly as conflict writes it (orjson, fields in ``Event.to_json`` order, no
escapes in id, key, type and origin, the HLC's DC equal to the origin) with a payload in a
strict JSON grammar: one regular expression decides, no JSON parser runs. Every other row of
an event topic goes to ``Event.decode`` for its exact verdict
(:func:`~spark_reconcile.records.decode_slow`). A JSON parser is not used because Spark's
accepts what orjson refuses (infinite numbers, lone surrogates, raw control characters, single
quotes), so a broken event would have been read as a good one.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import functions as F

from spark_reconcile.headers import first_text, header_count, header_keys

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

    def field(quotes: int) -> Any:
        return F.substring_index(F.substring_index(text, '"', quotes + 1), '"', -1)

    return {"key": field(7), "type": field(11), "origin": field(15), "hlc": field(19)}


def fast_decode(value: str = "value", headers: str = "headers") -> tuple[Any, Any, Any, Any]:
    """(ok, id, key, has envelope headers) columns: ``ok`` is true only for values
    ``Event.decode`` accepts."""
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
        n = header_count(name, headers)
        agree = agree & ((n == 0) | ((n == 1) & (first_text(name, headers) == want[name])))
    has_envelope_headers = F.arrays_overlap(
        header_keys(headers), F.array(*[F.lit(h) for h in _ENVELOPE_HEADERS])
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


def verdict(value: str, headers: str) -> Any:
    """True where the native decoder accepts the row (``value``, ``headers`` columns)."""
    return fast_decode(value, headers)[0]
