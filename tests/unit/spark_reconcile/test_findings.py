"""Each finding on small DataFrames: a clean full mesh gives nothing; each injected fault is
found by its finding and by no other."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pyspark.testing import assertDataFrameEqual

from spark_reconcile import findings
from spark_reconcile.findings import fold
from spark_reconcile.findings.divergent import events, suspect_keys
from spark_reconcile.findings.presence import flag, ids
from spark_reconcile.frames import literal_frame
from spark_reconcile.records import normalise
from spark_reconcile.source import raw_schema
from spark_reconcile.window import Window
from tests.helpers.reconcile import T0, Row, copy_of, event_value, mesh, raw_rows

pytestmark = [pytest.mark.unit, pytest.mark.spark]

DCS = ("SF", "NYC", "LON")
WINDOW = Window(T0, T0 + 3_600_000, slack_ms=0)
RESOLVERS = {"users": "lww"}


def _expected(spark: Any) -> Any:
    rows = [(o, t, d) for t in ("orders", "users") for o in DCS for d in DCS if d != o]
    return spark.createDataFrame(rows, "origin string, ltopic string, target string")


def _normalised(spark: Any, orders: dict[str, list[Row]], users: dict[str, list[Row]]) -> Any:
    raw = spark.createDataFrame(raw_rows("orders", orders) + raw_rows("users", users), raw_schema())
    return raw.transform(normalise(WINDOW, 60_000, RESOLVERS)).cache()


def _values_from(df: Any) -> Any:
    """``with_values`` for records that still carry ``value`` and ``headers``."""

    def attach(positions: Any) -> Any:
        cols = ["dc", "topic", "partition", "offset"]
        return positions.join(df.select(*cols, "value", "headers"), cols)

    return attach


def _suspect_events(df: Any, suspect: Any) -> Any:
    """The events of the ``suspect`` keys (``ltopic, key_h``) with their ``value`` and
    ``headers``: what the job picks for divergent (``spark_reconcile.picked``)."""
    from pyspark.sql import functions as F

    evs = events(df, ("value", "headers")).withColumn("key_h", F.xxhash64("key"))
    keys = F.broadcast(suspect.select("ltopic", "key_h"))
    return evs.join(keys, ["ltopic", "key_h"], "left_semi")


def _all(spark: Any, df: Any) -> dict[str, Any]:
    expected = _expected(spark)
    # the job's path: one presence aggregation shared by missing and duplicated
    flows = [tuple(r) for r in expected.collect()]
    flagged = flag(df, DCS, flows)
    # the job's path for divergent: suspect keys from the same per-id aggregation
    suspect = df.transform(ids(DCS, flows)).transform(suspect_keys({"users": DCS}, DCS))
    return {
        "missing": df.transform(findings.missing(expected, flagged=flagged)),
        "missing_alone": df.transform(findings.missing(expected)),
        "duplicated": findings.duplicated(df, flagged),
        "duplicated_alone": findings.duplicated(df),
        "looped": df.transform(findings.looped),
        "malformed": df.transform(findings.malformed),
        "divergent": df.transform(findings.divergent({"users": DCS}, _values_from(df))),
        # the job's path: the suspect keys' events picked with their values
        "divergent_by_ids": df.transform(
            findings.divergent({"users": DCS}, None, suspect_events=_suspect_events(df, suspect))
        ),
        "incomplete": df.transform(findings.completeness(expected)).filter("missing > 0"),
    }


def test_clean_full_mesh_has_no_findings(spark: Any) -> None:
    df = _normalised(spark, mesh(DCS, "orders", 3), mesh(DCS, "users", 4, events=True))
    for name, out in _all(spark, df).items():
        assert out.count() == 0, name
    delay = df.transform(findings.delay_by_flow)
    assert delay.count() == 6 * 2
    assert {r.p99_ms for r in delay.collect()} == {7}
    comp = df.transform(findings.completeness(_expected(spark)))
    assert comp.groupBy().sum("origin_count", "count").first() == (27, 27)


def test_each_fault_is_found_by_its_finding_only(spark: Any) -> None:
    orders = mesh(DCS, "orders", 3)
    users = mesh(DCS, "users", 4, events=True)
    # missing: NYC lacks SF's orders record 1 (its copy sits at NYC offset 4)
    dropped = orders["NYC"].pop(4)
    assert b"SF/orders/0/1" in dict(dropped.headers).values()
    # duplicated: LON holds NYC's orders record 0 twice
    orders["LON"].append(orders["LON"][6])
    # looped: a record of SF that went SF -> NYC -> SF (appended to SF)
    loop = copy_of(orders["SF"][2], "SF", "NYC", "orders", 2)
    orders["SF"].append(
        replace(
            loop,
            headers=(
                *loop.headers[:1],
                ("aa-origin", b"SF"),
                ("aa-path", b"SF,NYC,SF"),
                ("aa-src", b"SF/orders/0/2"),
            ),
        )
    )
    # divergent: SF's copy of LON's event 1 (k1's LWW winner) has another payload (same id,
    # so nothing is missing)
    i = next(n for n, r in enumerate(users["SF"]) if b'"by":"LON","i":1}' in (r.value or b""))
    altered = (users["SF"][i].value or b"").replace(b'"by":"LON","i":1}', b'"by":"LON","i":9}')
    users["SF"][i] = replace(users["SF"][i], value=altered)
    # malformed: a bad aa-src in NYC, a truncated event in SF
    orders["NYC"].append(
        Row(
            b"k",
            b"v",
            (("aa-origin", b"LON"), ("aa-path", b"LON,NYC"), ("aa-src", b"LON/orders/zero")),
            T0,
        )
    )
    bad = Row(b"k", b'{"id": "x", "ke', (), T0)
    users["SF"].append(bad)  # written in SF and copied as bytes by the mirror
    users["NYC"].append(copy_of(bad, "SF", "NYC", "users", len(users["SF"]) - 1))
    users["LON"].append(copy_of(bad, "SF", "LON", "users", len(users["SF"]) - 1))

    out = _all(spark, _normalised(spark, orders, users))
    for name in ("missing", "missing_alone"):
        assertDataFrameEqual(
            out[name].select("ltopic", "origin", "target", "rid"),
            [("orders", "SF", "NYC", "SF/orders/0/1")],
        )
    for name in ("duplicated", "duplicated_alone"):
        assertDataFrameEqual(
            out[name].select("dc", "ltopic", "rid", "copies"),
            [("LON", "orders", "NYC/orders/0/0", 2)],
        )
    assertDataFrameEqual(
        out["looped"].select("dc", "ltopic", "rid", "path"),
        [("SF", "orders", "SF/orders/0/2", "SF,NYC,SF")],
    )
    assertDataFrameEqual(
        out["malformed"].select("dc", "ltopic", "kind"),
        [("NYC", "orders", "provenance")] + [(dc, "users", "event") for dc in DCS],
    )
    for name in ("divergent", "divergent_by_ids"):
        div = out[name].collect()
        assert [(r.ltopic, r.key, r.absent_in, r.reason) for r in div] == [
            ("users", "k1", [], "conflicting copies")
        ], name
        assert div[0].hashes["LON"] == div[0].hashes["NYC"] != div[0].hashes["SF"]
    assertDataFrameEqual(
        out["incomplete"].select("ltopic", "origin", "dc", "missing"),
        [("orders", "SF", "NYC", 1)],
    )


def test_records_without_provenance_are_local_writes(spark: Any) -> None:
    """A record with no aa-* headers is NYC's own write: NYC is its origin, and SF and LON are
    expected to hold it (so it is missing there); nothing crashes."""
    orders = {"SF": [], "NYC": [Row(b"k", b"v", (), T0 + 5)], "LON": []}
    df = _normalised(spark, orders, {"SF": [], "NYC": [], "LON": []})
    assertDataFrameEqual(
        df.select("dc", "origin", "has_prov", "rid", "path"),
        [("NYC", "NYC", False, "NYC/orders/0/0", ["NYC"])],
    )
    missing = df.transform(findings.missing(_expected(spark)))
    assertDataFrameEqual(
        missing.select("target", "rid"), [("LON", "NYC/orders/0/0"), ("SF", "NYC/orders/0/0")]
    )


def test_delay_percentiles_per_flow(spark: Any) -> None:
    rows = [
        copy_of(Row(b"k", b"v", (), T0 + i), "SF", "NYC", "orders", i, lag_ms=10 * (i + 1))
        for i in range(10)
    ]
    no_ts = replace(rows[0], headers=rows[0].headers[:-1])
    df = _normalised(spark, {"NYC": [*rows, no_ts]}, {})
    assertDataFrameEqual(
        df.transform(findings.delay_by_flow).select("flow", "copies", "p50_ms", "p99_ms", "max_ms"),
        [("SF->NYC", 10, 50, 100, 100)],
    )
    from spark_reconcile.findings.delay import unmeasured

    assertDataFrameEqual(df.transform(unmeasured), [("SF->NYC", 1)])


def test_delay_percentiles_of_long_and_negative_delays_stay_within_the_bucket_bound(
    spark: Any,
) -> None:
    """Delays from -40 s (clocks of two DCs disagree) to ~3 h: each percentile is the delay
    of nearest rank ceil(p * n), or the largest delay of its log-scale bucket: never below
    the exact value, less than DELAY_STEP of its magnitude above it, and always a delay that
    occurred (the job's one scan uses the same code: the next test compares them)."""
    import math

    from spark_reconcile.findings.delay import DELAY_STEP, QUANTILES

    lags = [-40_000, -3, 0, 5, 255, 257, *(7 + 997 * i * i for i in range(1, 104))]
    rows = [
        copy_of(Row(b"k", b"v", (), T0 + 10 * i), "SF", "NYC", "orders", i, lag_ms=lag)
        for i, lag in enumerate(lags)
    ]
    df = _normalised(spark, {"NYC": rows}, {})
    (got,) = df.transform(findings.delay_by_flow).collect()
    ordered = sorted(lags)
    assert got.copies == len(lags)
    assert got.max_ms == ordered[-1]
    for pct in QUANTILES:
        exact = ordered[math.ceil(pct * len(lags) / 100) - 1]
        reported = got[f"p{pct}_ms"]
        assert reported in lags
        assert exact <= reported < exact + DELAY_STEP * abs(exact) + 1, pct


def test_summary_scan_compiles_without_an_object_aggregation(spark: Any) -> None:
    """The summary's scan of every record is a code-generated hash aggregation:
    ``percentile_approx`` (an ``ObjectHashAggregate``, not whole-stage compiled) took 5.6 s
    of a 3 x 1M run; its delay percentiles now come from histogram counts."""
    from spark_reconcile.record_stats import aggregate

    df = _normalised(spark, mesh(DCS, "orders", 2), mesh(DCS, "users", 2, events=True))
    plan = aggregate(df)._jdf.queryExecution().executedPlan().toString()
    assert "HashAggregate" in plan
    assert "ObjectHashAggregate" not in plan
    assert "SortAggregate" not in plan


def test_delay_counts_and_looped_from_one_scan_match_the_separate_queries(spark: Any) -> None:
    """The job's one scan of the records (delay per flow and per bucket, record counts,
    copies without aa-ts, looped rows) gives the rows the five separate queries give: two
    flows over two buckets with different lags, copies without aa-ts, local writes, a copy
    out of the window, a looped copy, a copy with broken provenance, two logical topics."""
    from pyspark.sql import functions as F

    from spark_reconcile.findings.delay import unmeasured
    from spark_reconcile.record_stats import record_stats

    sf_nyc = [
        copy_of(Row(b"k", b"v", (), T0 + 50_000 * i), "SF", "NYC", "orders", i, lag_ms=3 * i + 1)
        for i in range(4)
    ]
    lon_sf = [
        copy_of(Row(b"k", b"v", (), T0 + 70_000 * i), "LON", "SF", "users", i, lag_ms=5 + i)
        for i in range(3)
    ]
    no_ts = [replace(r, headers=r.headers[:-1]) for r in (sf_nyc[0], lon_sf[1])]
    late = copy_of(Row(b"k", b"v", (), T0 + 7_200_000), "SF", "NYC", "orders", 9, lag_ms=10)
    loop = copy_of(Row(b"k", b"v", (), T0 + 3), "SF", "NYC", "orders", 2)
    looped_copy = replace(
        loop,
        headers=(
            ("aa-origin", b"SF"),
            ("aa-path", b"SF,NYC,SF"),
            ("aa-src", b"SF/orders/0/2"),
            loop.headers[-1],
        ),
    )
    broken = Row(b"k", b"v", (("aa-origin", b"LON"), ("aa-path", b"LON,NYC")), T0 + 9)
    df = _normalised(
        spark,
        {
            "NYC": [*sf_nyc, no_ts[0], late, broken],
            "SF": [Row(b"k", b"v", (), T0 + 1), looped_copy],
            "LON": [Row(b"k", b"v", (), T0 + 2)],
        },
        {"SF": [*lon_sf, no_ts[1]], "LON": [], "NYC": []},
    )
    stats = record_stats(df)

    def rows(frame: Any, *order: str) -> list[dict[str, Any]]:
        return [r.asDict() for r in frame.orderBy(*order).collect()]

    assert stats.delay == rows(df.transform(findings.delay_by_flow), "flow", "ltopic")
    assert len(stats.delay) == 2
    buckets = rows(df.transform(findings.delay_by_bucket()), "flow", "bucket")
    assert stats.delay_buckets == buckets
    assert len(buckets) == 6
    separate = (
        df.filter(F.col("in_window"))
        .groupBy("dc", "ltopic")
        .agg(
            F.count(F.lit(1)).alias("records"),
            F.count_if(~F.col("has_prov")).alias("without_provenance"),
            F.count_if(F.col("has_prov")).alias("copies"),
            F.count_if(F.col("has_prov") & F.col("mirrored_at").isNull()).alias(
                "copies_without_aa_ts"
            ),
        )
    )
    assert stats.records == rows(separate, "dc", "ltopic")
    assert len(stats.records) == 4
    assert stats.unmeasured == rows(df.transform(unmeasured), "flow")
    assert stats.unmeasured == [{"flow": "LON->SF", "copies": 1}, {"flow": "SF->NYC", "copies": 1}]
    assert stats.looped == df.transform(findings.looped).count() == 1
    assert df.filter(F.col("prov_error").isNotNull()).count() == 1


def test_native_event_decode_agrees_with_conflicts_decoder(spark: Any) -> None:
    """The native fast path accepts only what ``Event.decode`` accepts, with the same id and
    key; every other row gets the Python decoder's verdict (an id or its exact error)."""
    from conflict import ConflictError, Event

    good = event_value("k", (T0, 0, "SF"), {"a": [1, "x"]})
    ev = Event.decode(good)
    _, value, headers = ev.encode()
    sup = Event(ev.id, "k", "set", "SF", ev.hlc, 1, (ev.id,)).encode()[1]
    variants: list[tuple[bytes | None, tuple[tuple[str, bytes], ...]]] = [
        (value, tuple(headers)),  # as conflict writes it, with its headers
        (good, ()),
        (sup, ()),  # supersedes
        (value.replace(b'"key":"k"', b'"key":"k\\u00e9"'), ()),  # an escape: Python decides
        (value.replace(b'"key":"k"', b'"key":5'), ()),  # not a string
        (value.replace(b'"key":"k"', b'"key":""'), ()),  # empty
        (value[:-1] + b',"extra":1}', ()),  # unknown field
        (value[:-1] + b',"key":"other"}', ()),  # a field twice
        (value.replace(b'"payload":', b'"payload":\n'), ()),  # whitespace
        (value, (("event-id", b"01ARZ3NDEKTSV4RRFFQ69G5FAV"),)),  # header disagrees
        (value.replace(b":0:SF", b":0:NYC"), ()),  # HLC DC is not the origin
        (value.replace(f'"hlc":"{T0}'.encode(), b'"hlc":"999999999999999'), ()),  # > 48 bits
        (value + b" x", ()),  # trailing garbage
        (b'{"id": "broken', ()),
        (None, ()),
    ]
    rows = [
        ("SF", "users", "users", 0, i, b"k", v, T0, [list(h) for h in hs])
        for i, (v, hs) in enumerate(variants)
    ]
    df = spark.createDataFrame(rows, raw_schema()).transform(normalise(WINDOW, 60_000, RESOLVERS))
    got = {r.offset: (r.event_id, r.event_key, r.event_error is None) for r in df.collect()}
    for i, (v, hs) in enumerate(variants):
        want: tuple[str | None, str | None, bool]
        try:
            e = Event.decode(v, list(hs))
            want = (e.id, e.key, True)
        except ConflictError:
            want = (None, None, False)
        assert got[i] == want, (i, v)
    fast = df.filter("not needs_slow").select("offset").collect()
    # only conflict's own layout (whitespace inside the payload is fine) takes the fast path
    assert {r.offset for r in fast} == {0, 1, 2, 8}


def test_hlc_with_leading_zeros_and_agreeing_header_is_refused_like_conflicts_decoder(
    spark: Any,
) -> None:
    """``Event.decode`` compares an ``event-hlc`` header with the HLC re-encoded (no leading
    zeros), so a value written ``"hlc":"0<ms>:00:SF"`` with the same text in its header is
    refused; the native decoder compared the two texts and accepted it. The fold of suspect
    keys relies on the native verdict (it gets no headers for natively decoded rows)."""
    from conflict import ConflictError, Event

    value = event_value("k", (T0, 0, "SF"), {"a": 1})
    padded_hlc = f"0{T0}:00:SF".encode()
    padded = value.replace(f'"hlc":"{T0}:0:SF"'.encode(), b'"hlc":"' + padded_hlc + b'"')
    assert padded != value
    variants = [(padded, (("event-hlc", padded_hlc),)), (padded, ())]
    rows = [
        ("SF", "users", "users", 0, i, b"k", v, T0, [list(h) for h in hs])
        for i, (v, hs) in enumerate(variants)
    ]
    df = spark.createDataFrame(rows, raw_schema()).transform(normalise(WINDOW, 60_000, RESOLVERS))
    got = {r.offset: r.event_error is None and r.event_id is not None for r in df.collect()}
    for i, (v, hs) in enumerate(variants):
        try:
            Event.decode(v, list(hs))
            want = True
        except ConflictError:
            want = False
        assert got[i] == want, (i, v, hs, "decoded" if got[i] else "refused")


def test_payload_conflict_refuses_is_not_accepted_by_the_native_decoder(spark: Any) -> None:
    """Payloads a JSON parser lets through but ``Event.decode`` (orjson) refuses: an infinite
    number, a lone surrogate, a raw control character, single quotes. Each must be an event
    error (reported as malformed), never a decoded event."""
    from conflict import ConflictError, Event

    good = event_value("k", (T0, 0, "SF"), {"a": 1})
    payloads = [
        b"1e999",
        b"[1e308,1e309]",
        b'"\\ud800"',
        b'"a\x01b"',
        b"'a'",
        # and some it accepts, nested and flat, with whitespace, escapes and big numbers
        b'{"a":{"b":[1,2,{"c":null}]},"d":"\\u00e9\\n"}',
        b"[ 1 , -0.5e-3 , true , false , null ]",
        b"12345678901234567890123456789012345678901234567890",
        b'"\\ud83d\\ude00"',
        # long, just under and over the native decoder's size limit: no regex stack overflow
        b"[" + b",".join([b"1"] * 950) + b"]",
        b'"' + b"\\n" * 940 + b'"',
        b"[" + b",".join([b"[{}]"] * 380) + b"]",
        b"[" + b",".join([b"1"] * 3000) + b"]",
        b'"' + b"\\n" * 3000 + b'"',
    ]
    rows: list[tuple[Any, ...]] = [
        ("SF", "users", "users", 0, i, b"k", good.replace(b'{"a":1}', p), T0, [])
        for i, p in enumerate(payloads)
    ]
    df = spark.createDataFrame(rows, raw_schema()).transform(normalise(WINDOW, 60_000, RESOLVERS))
    got = {r.offset: r.event_error is None and r.event_id is not None for r in df.collect()}
    for i, (*_, value, _ts, _hs) in enumerate(rows):
        try:
            Event.decode(value)
            want = True
        except ConflictError:
            want = False
        assert got[i] == want, (i, payloads[i][:60], "decoded" if got[i] else "refused")


def test_literal_frame_builds_small_tables_in_the_jvm(spark: Any) -> None:
    schema = "origin string, committed long, empty boolean"
    rows = [("SF", 7, False), ("NYC", None, True)]
    assertDataFrameEqual(literal_frame(spark, rows, schema), spark.createDataFrame(rows, schema))
    none = literal_frame(spark, [], schema)
    assert none.count() == 0
    assert none.dtypes == [("origin", "string"), ("committed", "bigint"), ("empty", "boolean")]
    with pytest.raises(ValueError, match="has 2 values"):
        literal_frame(spark, [("SF", 1)], schema)


def test_divergent_suspects_from_the_presence_aggregation_match_the_digests(spark: Any) -> None:
    """The job takes divergent's suspect keys from presence's per-id aggregation (one shuffle
    of every record for missing, duplicated and divergent); the findings are the digests'."""
    users = mesh(DCS, "users", 8, events=True)
    # NYC lacks LON's event 5, k1's LWW winner: k1 differs there by an absent event
    at = next(n for n, r in enumerate(users["NYC"]) if ("aa-src", b"LON/users/0/5") in r.headers)
    users["NYC"].pop(at)
    # k9 is only in SF (its copies never left): absent from NYC and LON
    users["SF"].append(Row(b"k9", event_value("k9", (T0 + 50_000, 0, "SF"), {"i": 9}), (), T0))
    df = _normalised(spark, mesh(DCS, "orders", 2), users)
    out = _all(spark, df)
    for name in ("divergent", "divergent_by_ids"):
        rows = sorted((r.key, r.absent_in, r.reason) for r in out[name].collect())
        assert rows == [
            ("k1", [], "absent events"),
            ("k9", ["LON", "NYC"], "absent events"),
        ], name


def _forged_users(spark: Any, tmp_path: Path) -> Any:
    """A mesh of events where SF's copy of LON's event 1 (k1's LWW winner) is forged, read
    from Parquet as the job reads its records (the slow decoder's UDF is not in its plan)."""
    users = mesh(DCS, "users", 4, events=True)
    i = next(n for n, r in enumerate(users["SF"]) if b'"by":"LON","i":1}' in (r.value or b""))
    altered = (users["SF"][i].value or b"").replace(b'"by":"LON","i":1}', b'"by":"LON","i":9}')
    users["SF"][i] = replace(users["SF"][i], value=altered)
    _normalised(spark, mesh(DCS, "orders", 2), users).write.parquet(str(tmp_path / "records"))
    return spark.read.parquet(str(tmp_path / "records"))


def _divergent_as_the_job(spark: Any, df: Any) -> Any:
    flows = [tuple(r) for r in _expected(spark).collect()]
    suspect = df.transform(ids(DCS, flows)).transform(suspect_keys({"users": DCS}, DCS))
    return df.transform(
        findings.divergent({"users": DCS}, None, suspect_events=_suspect_events(df, suspect))
    )


def test_divergent_folds_a_few_suspect_keys_without_a_python_worker(
    spark: Any, tmp_path: Path
) -> None:
    """The job's divergent (few suspect keys, as a rule) folds them on the driver: no Python
    UDF in its plan (the first Python worker of a 3 x 1M run took ~2.5 s to start)."""
    div = _divergent_as_the_job(spark, _forged_users(spark, tmp_path))
    plan = div._jdf.queryExecution().executedPlan().toString()
    assert "EvalPython" not in plan
    assert [(r.key, r.reason) for r in div.collect()] == [("k1", "conflicting copies")]


def test_divergent_decided_on_the_driver_matches_the_python_workers(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Folded and decided on the driver, or in Python workers (more suspect events than the
    driver folds): the same rows for conflicting copies, absent events and an unfoldable key,
    every key of the topic suspect."""
    from pyspark.sql import functions as F

    users = mesh(DCS, "users", 8, keys=5, events=True)
    i = next(n for n, r in enumerate(users["SF"]) if b'"by":"LON","i":6}' in (r.value or b""))
    altered = (users["SF"][i].value or b"").replace(b'"by":"LON","i":6}', b'"by":"LON","i":9}')
    users["SF"][i] = replace(users["SF"][i], value=altered)  # k1: conflicting copies
    at = next(n for n, r in enumerate(users["NYC"]) if ("aa-src", b"LON/users/0/7") in r.headers)
    users["NYC"].pop(at)  # k2: absent events (NYC lacks its LWW winner)
    users["SF"].append(Row(b"k9", event_value("k9", (T0 + 50_000, 0, "SF"), {"i": 9}), (), T0))
    _normalised(spark, mesh(DCS, "orders", 2), users).write.parquet(str(tmp_path / "records"))
    # k3's events under a resolver the fold refuses: unfoldable
    df = spark.read.parquet(str(tmp_path / "records")).withColumn(
        "resolver",
        F.when(F.col("event_key") == "k3", F.lit("nope")).otherwise(F.col("resolver")),
    )
    every_key = df.filter(F.col("event_key").isNotNull()).select(
        "ltopic", F.xxhash64("event_key").alias("key_h")
    )

    def divergent(**options: Any) -> Any:
        every_event = _suspect_events(df, every_key.distinct())
        return df.transform(
            findings.divergent({"users": DCS}, None, suspect_events=every_event, **options)
        )

    workers = divergent(fold_on_driver=0)
    assert "EvalPython" in workers._jdf.queryExecution().executedPlan().toString()
    driver = divergent()
    assert "EvalPython" not in driver._jdf.queryExecution().executedPlan().toString()
    assertDataFrameEqual(driver, workers)
    # few events but large values: never collected to the driver
    monkeypatch.setattr(fold, "DRIVER_FOLD_MAX_BYTES", 100)
    large = divergent()
    assert "EvalPython" in large._jdf.queryExecution().executedPlan().toString()
    assertDataFrameEqual(large, workers)
    assert sorted((r.key, r.absent_in, r.reason) for r in driver.collect()) == [
        ("k1", [], "conflicting copies"),
        ("k2", [], "absent events"),
        ("k3", [], "unfoldable"),
        ("k9", ["LON", "NYC"], "absent events"),
    ]
