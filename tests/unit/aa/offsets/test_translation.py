"""Offset syncs and translation without a broker: every copied offset translates exactly
(hypothesis, with skipped records, batch splits and other writers interleaved in the target),
the reverse lookup, at-least-once re-copies, and per-origin translation in a 2-DC mesh."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aa.offsets.store import NotReadyError, OffsetSyncStore
from aa.offsets.sync import OffsetSync, runs
from aa.offsets.translate import translate_offset

pytestmark = pytest.mark.unit


def _store(syncs: list[OffsetSync], src: str = "A", dst: str = "B") -> OffsetSyncStore:
    s = OffsetSyncStore(src, dst)
    s.extend(syncs)
    s.ready = True
    return s


@st.composite
def copies(draw: st.DrawFn) -> tuple[list[OffsetSync], dict[int, int], int]:
    """A simulated flow over one partition: which source offsets were copied, in which produced
    batches, where they landed (other writers' records between batches)."""
    n = draw(st.integers(1, 120))
    copied = [o for o in range(n) if draw(st.booleans()) or o % 7 == 0]
    target = draw(st.integers(0, 50))
    landed: dict[int, int] = {}
    syncs: list[OffsetSync] = []
    covered = 0
    i = 0
    while i < len(copied):
        size = draw(st.integers(1, 10))
        batch = copied[i : i + size]
        syncs += runs("t", 0, "t", batch, target, covered)
        for j, o in enumerate(batch):
            landed[o] = target + j
        covered = batch[-1] + 1
        target += len(batch) + draw(st.integers(0, 5))  # other origins' records
        i += size
    return syncs, landed, n


@settings(max_examples=300, deadline=None)
@given(copies())
def test_every_copied_offset_translates_exactly(
    case: tuple[list[OffsetSync], dict[int, int], int],
) -> None:
    syncs, landed, n = case
    store = _store(syncs)
    last = max(landed)
    for offset in range(n + 2):
        pos = store.translate("t", 0, offset)
        later = [landed[o] for o in sorted(landed) if o >= offset]
        if later:
            assert pos.exactness == "exact"
            assert pos.offset == later[0], offset  # error bound: zero records
        else:
            assert pos.exactness == "ahead"
            assert pos.offset == landed[last] + 1


@settings(max_examples=300, deadline=None)
@given(copies())
def test_reverse_lookup_never_skips_an_unseen_record(
    case: tuple[list[OffsetSync], dict[int, int], int],
) -> None:
    syncs, landed, _ = case
    store = _store(syncs)
    by_target = {t: s for s, t in landed.items()}
    for t_offset in range(max(by_target) + 3):
        pos = store.upstream("t", 0, t_offset)
        seen = [s for t, s in by_target.items() if t < t_offset]
        assert pos.offset == (max(seen) + 1 if seen else 0)


def test_runs_split_at_source_gaps() -> None:
    assert runs("t", 0, "t", [3, 4, 5, 9, 10], 100, 0) == [
        OffsetSync("t", 0, "t", 0, 3, 5, 100),
        OffsetSync("t", 0, "t", 6, 9, 10, 103),
    ]


def test_a_recopy_after_restart_wins_and_older_offsets_use_the_first_copy() -> None:
    first = runs("t", 0, "t", list(range(10)), 0, 0)  # 0..9 -> 0..9
    again = runs("t", 0, "t", list(range(6, 12)), 10, 6)  # restart from 6: 6..11 -> 10..15
    store = _store(first + again)
    assert store.translate("t", 0, 3).offset == 3
    assert store.translate("t", 0, 7).offset == 11
    assert store.translate("t", 0, 12).exactness == "ahead"


def test_store_refuses_before_it_has_read_its_topic() -> None:
    store = OffsetSyncStore("A", "B")
    with pytest.raises(NotReadyError):
        store.translate("t", 0, 0)


def test_sync_round_trip() -> None:
    s = OffsetSync("users", 3, "SF.users", 10, 12, 20, 500)
    assert OffsetSync.decode(s.encode()) == s
    assert s.key() == b"users/3"


def test_mixed_origins_take_the_smallest_safe_position() -> None:
    # SF/users/0: SF records at 0..4, NYC's 0..2 copied in at 5..7, SF's again at 8..9.
    # NYC/users/0: NYC records at 0..2, SF 0..4 copied at 3..7, SF 8..9 copied at 8..9.
    stores = {
        ("SF", "NYC"): _store(
            runs("users", 0, "users", [0, 1, 2, 3, 4], 3, 0)
            + runs("users", 0, "users", [8, 9], 8, 5),
            "SF",
            "NYC",
        ),
        ("NYC", "SF"): _store(runs("users", 0, "users", [0, 1, 2], 5, 0), "NYC", "SF"),
    }
    # the group consumed SF 0..5: SF's 0..4 and NYC's record 0
    plan = translate_offset("users", 0, 6, "SF", "NYC", stores)
    assert {dc: off for dc, off, _ in plan.origins} == {"SF": 8, "NYC": 1}
    assert plan.target_offset == 1  # NYC's 1 and 2 unseen: nothing lost
    assert plan.exactness == "min-of-origins"
    # at SF offset 3 the group has seen none of NYC's records: NYC from 0
    assert translate_offset("users", 0, 3, "SF", "NYC", stores).target_offset == 0
    # a partition holding one origin (no NYC->SF copies): exact
    one = {("SF", "NYC"): stores[("SF", "NYC")]}
    single = translate_offset("users", 0, 3, "SF", "NYC", one)
    assert (single.target_offset, single.exactness) == (6, "exact")


def test_unmirrored_partition_is_refused() -> None:
    plan = translate_offset("other", 0, 5, "SF", "NYC", {("SF", "NYC"): _store([])})
    assert plan.target_offset is None
    assert plan.exactness == "not-mirrored"
