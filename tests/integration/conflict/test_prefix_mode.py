"""Prefix mode without the mirror: each DC's conflicting events for 1,000 keys are produced
directly into ``<DC>.<topic>`` in every cluster — in a different order per cluster, with
duplicates, and with the provenance headers a mirror adds to copies — and every DC's pattern
consumer must materialize byte-identical state, equal to the pure ``resolve`` of the events.
Also: snapshot + resume from offsets, ``run()`` with change callbacks, and every kind of bad
input dead-lettered (or raised), never dropped."""

from __future__ import annotations

import asyncio
import base64
import random
from collections.abc import Callable
from typing import Any

import orjson
import pycrdt
import pytest

from aa import provenance
from conflict import (
    HLC,
    Clock,
    ClockSkewError,
    DecodeError,
    Event,
    EventWriter,
    Materializer,
    PatternConsumer,
    ResolverRegistry,
    resolve,
    state_bytes,
)
from conflict.consumer import topic_pattern
from conflict.ids import new_id
from tests.conftest import DcCluster
from tests.helpers.kafka import Rec, consume_all, create_topic, eventually, produce

pytestmark = pytest.mark.integration

DCS = ("SF", "NYC", "LON")
KEYS = 1000
RESOLVERS = ("lww", "field-lww", "multi-value", "counter", "set", "document")
NOW = 1_800_000_000_000


def _payload(resolver: str, dc: str, i: int) -> tuple[str, Any]:
    if resolver == "counter":
        return ("inc" if i % 3 else "dec"), {"by": i % 7 + 1}
    if resolver == "set":
        return "add", {"element": f"{dc}-{i % 5}"}
    if resolver == "document":
        doc: pycrdt.Doc[Any] = pycrdt.Doc()
        doc.get("root", type=pycrdt.Map)[dc] = i
        doc.get("root", type=pycrdt.Map)["shared"] = dc
        return "yjs", {"update": base64.b64encode(doc.get_update()).decode()}
    if resolver == "field-lww":
        return "patch", {"shared": f"{dc}:{i}", dc: i}
    return "set", {"book": f"{dc}-{i}"}


def _events(resolver: str) -> dict[str, list[Event]]:
    """Per DC, one event per key, all in the same millisecond (HLC ties broken by DC)."""
    out = {}
    for dc in DCS:
        w = EventWriter(dc, "unused", clock=Clock(dc, now=lambda: NOW))
        out[dc] = [w.event(f"key-{i}", *_payload(resolver, dc, i)) for i in range(KEYS)]
    return out


def _records(events: list[Event], origin: str, here: str, rng: random.Random) -> list[Rec]:
    """The records ``events`` (written in ``origin``) are as copies in ``here``: shuffled,
    some twice (an at-least-once redelivery), with the mirror's provenance headers."""
    copies = events + rng.sample(events, len(events) // 10)
    rng.shuffle(copies)
    out = []
    for e in copies:
        k, v, headers = e.encode()
        if here != origin:
            headers += provenance.Provenance(origin, (origin, here), None).headers()
        out.append(Rec(k, v, headers))
    return out


async def test_prefix_mode_every_resolver_converges_byte_identical(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    clusters = {dc: dc_clusters[dc].bootstrap for dc in DCS}
    topics = {r: unique_name(r.replace("-", "")) for r in RESOLVERS}
    registry = ResolverRegistry(by_topic={t: r for r, t in topics.items()})
    expected: dict[str, bytes] = {}
    for r, t in topics.items():
        events = _events(r)
        by_key: dict[str, list[Event]] = {}
        for e in (e for dc in DCS for e in events[dc]):
            by_key.setdefault(e.key, []).append(e)
        expected[r] = state_bytes({k: resolve(r, es) for k, es in by_key.items()})
        for n, (here, bootstrap) in enumerate(clusters.items()):
            rng = random.Random(n)
            for origin in DCS:
                await create_topic(bootstrap, f"{origin}.{t}", partitions=2)
                await produce(
                    bootstrap, f"{origin}.{t}", _records(events[origin], origin, here, rng)
                )
    states: dict[str, dict[str, bytes]] = {dc: {} for dc in DCS}
    for dc, bootstrap in clusters.items():
        for r, t in topics.items():
            # both pattern styles of the issue: DCs named, or any prefix
            pattern = topic_pattern(t, DCS) if r != "lww" else rf".*\.{t}"
            async with PatternConsumer(
                pattern, Materializer(registry), bootstrap_servers=bootstrap, dcs=DCS
            ) as view:
                read = await view.catch_up()
                assert read == 3 * (KEYS + KEYS // 10)
                assert len(view) == KEYS
                states[dc][r] = view.materializer.state_bytes()
                if r == "multi-value":  # concurrent siblings from every DC survive
                    assert [s["origin"] for s in view.get("key-7")] == ["LON", "NYC", "SF"]
                if r == "lww":  # same HLC everywhere: the greatest DC name wins
                    assert view.get("key-7") == {"book": "SF-7"}
    for r in RESOLVERS:
        assert states["SF"][r] == states["NYC"][r] == states["LON"][r] == expected[r], r


async def test_snapshot_resume_and_follow(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    bootstrap = dc_clusters["NYC"].bootstrap
    t = unique_name("carts")
    for dc in DCS:
        await create_topic(bootstrap, f"{dc}.{t}", partitions=2)
    registry = ResolverRegistry(by_topic={t: "multi-value"})
    writers = {dc: EventWriter(dc, f"{dc}.{t}", bootstrap_servers=bootstrap) for dc in DCS}
    for w in writers.values():
        await w.start()
    try:
        for dc, w in writers.items():
            for i in range(100):
                await w.write(f"key-{i}", "set", {"item": f"{dc}-{i}"}, wait=False)
            await w.flush()
        pattern = topic_pattern(t, DCS)
        async with PatternConsumer(
            pattern, Materializer(registry), bootstrap_servers=bootstrap
        ) as v:
            assert await v.catch_up() == 300
            snapshot = v.materializer.snapshot()

        # more writes, some superseding what was read: the resumed view reads only those
        sup = v.get("key-0")
        await writers["LON"].write(
            "key-0", "set", {"item": "merged"}, supersedes=tuple(s["id"] for s in sup)
        )
        for i in range(100, 150):
            await writers["SF"].write(f"key-{i}", "set", {"item": i}, wait=False)
        await writers["SF"].flush()

        resumed = PatternConsumer(
            pattern, Materializer.from_snapshot(snapshot, registry), bootstrap_servers=bootstrap
        )
        fresh = PatternConsumer(pattern, Materializer(registry), bootstrap_servers=bootstrap)
        async with resumed, fresh:
            assert await resumed.catch_up() == 51
            assert await fresh.catch_up() == 351
            assert resumed.materializer.state_bytes() == fresh.materializer.state_bytes()
            assert [s["value"] for s in resumed.get("key-0")] == [{"item": "merged"}]

            # follow: run() in the background, a change callback sees a new write
            changes: list[tuple[str, Any]] = []
            resumed.on_change(lambda key, value: changes.append((key, value)))
            follow = asyncio.create_task(resumed.run())
            e = await writers["NYC"].write("key-1", "set", {"item": "late"})
            await eventually(
                lambda: any(k == "key-1" and e.id in {s["id"] for s in v} for k, v in changes),
                message="change callback for key-1",
            )
            await resumed.stop()
            await asyncio.wait_for(follow, 10)
    finally:
        for w in writers.values():
            await w.stop()


def _bad_records(topic_dc: str) -> list[tuple[Rec, str]]:
    """(record, start of the reason) for every kind of bad input."""

    def value(**over: Any) -> bytes:
        e = Event(new_id(), "k1", "inc", topic_dc, HLC(NOW, 0, topic_dc), {"by": 1})
        doc = {**e.to_json(), **over}
        return orjson.dumps({k: v for k, v in doc.items() if v is not ...})

    future = Event(new_id(), "k1", "inc", "NYC", HLC(NOW * 2, 0, "NYC"), {"by": 1})
    ok = Event(new_id(), "k1", "inc", topic_dc, HLC(NOW, 0, topic_dc), {"by": 1})
    k, v, h = ok.encode()
    return [
        (Rec(b"k1", value()[:-9]), "event.value: not JSON"),  # truncated JSON
        (Rec(b"k1", value(type="mul")), "event "),  # unknown type for a counter
        (Rec(b"k1", value(key=...)), "event.key: missing"),
        (Rec(b"k1", value(payload={"update": "bm90IHlqcw=="}, type="yjs")), "event "),
        (Rec(b"k1", future.encode()[1]), "HLC "),  # far in the future
        (Rec(b"k2", v, h), "event.key: record key"),  # record key differs from the event's
        (Rec(k, v, [*h, (provenance.ORIGIN, b"LON")]), "event.headers.aa-origin:"),
    ]


async def test_bad_input_is_dead_lettered_or_raised_never_dropped(
    dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    bootstrap = dc_clusters["LON"].bootstrap
    counts, docs, dlq = unique_name("counts"), unique_name("docs"), unique_name("dlq")
    await create_topic(bootstrap, f"SF.{counts}")
    await create_topic(bootstrap, f"SF.{docs}")
    bad = _bad_records("SF")
    yjs = [b for b in bad if b"yjs" in (b[0].value or b"")]
    rest = [b for b in bad if b not in yjs]
    good = Event(new_id(), "k1", "inc", "SF", HLC(NOW, 0, "SF"), {"by": 5})
    await produce(bootstrap, f"SF.{counts}", [r for r, _ in rest] + [Rec(*good.encode())])
    await produce(bootstrap, f"SF.{docs}", [r for r, _ in yjs])
    registry = ResolverRegistry(by_topic={counts: "counter", docs: "document"})

    def view(on_error: Any, pattern: str = f"^SF\\.({counts}|{docs})$") -> PatternConsumer:
        clock = Clock("LON", now=lambda: NOW)  # this DC's wall clock, for the drift check
        return PatternConsumer(
            pattern,
            Materializer(registry, clock=clock),
            bootstrap_servers=bootstrap,
            on_error=on_error,
            dead_letter_topic=dlq,
        )

    async with view("dead-letter") as v:
        assert await v.catch_up() == len(bad) + 1
        assert v.dead_lettered == len(bad)
        assert v.get("k1") == 5  # the good event was folded
    dead = await consume_all(bootstrap, dlq, count=len(bad))
    reasons = sorted(dict(r.headers)["conflict-error"].decode() for r in dead)
    for _, start in bad:
        assert any(reason.startswith(start) for reason in reasons), (start, reasons)
    assert any("not a valid Yjs update" in r for r in reasons)
    assert any("counter accepts inc or dec, not 'mul'" in r for r in reasons)
    assert sorted(r.value for r in dead) == sorted(r.value for r, _ in bad)  # whole records

    async with view("raise") as v:
        with pytest.raises(DecodeError, match=r"event\.value: not JSON"):
            await v.catch_up()
    only_future = view("raise", f"^SF\\.{counts}$")
    async with only_future:
        future_at = [r for r, _ in rest].index(next(r for r, s in rest if s == "HLC "))
        only_future.materializer.offsets[f"SF.{counts}:0"] = future_at
        with pytest.raises(ClockSkewError, match="ahead of LON's clock"):
            await only_future.catch_up()
