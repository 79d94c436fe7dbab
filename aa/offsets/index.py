"""Bounded, sorted indexes of the offset syncs of one partition (pure).

:class:`SourceIndex` answers "where in the target is source offset ``o``"; :class:`TargetIndex`
answers the reverse. Both hold at most ``recent + older`` syncs however long the flow has run:
the newest ``recent`` exactly, older ones thinned so that their spacing grows with their age
(like MirrorMaker 2's OffsetSyncStore, which keeps 64 exponentially spaced syncs). Lookups are
binary searches. A thinned sync leaves a hole that is answered conservatively from the sync
before it: a translation may be behind (duplicates), never ahead (loss).
"""

from __future__ import annotations

import itertools
import math
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable
from dataclasses import replace
from typing import Literal

from aa.offsets.sync import OffsetSync

RECENT = 256
"""Syncs per partition kept exactly, newest first (translation of recent offsets is exact)."""
OLDER = 128
"""Room for older syncs per partition: about two per doubling of their age are kept
(translation of old offsets is coarse and behind)."""

Kind = Literal["exact", "behind", "ahead"]


def _keep(starts: list[int], end: int, may_drop: Callable[[int, int], bool]) -> list[int]:
    """Indexes of the older entries to keep: the oldest, and the newest one of each age
    bucket, buckets growing by a factor of sqrt(2) with the age (``end - start``), so that
    at most ~2 per doubling of the age are kept. ``may_drop(j, kept)`` says whether entry
    ``j`` may go when ``kept`` is the nearest older entry kept."""
    keep = [0] if starts else []
    newest_in: dict[int, int] = {}
    for j in range(1, len(starts)):
        newest_in[int(2 * math.log2(max(1, end - starts[j])))] = j
    wanted = set(newest_in.values())
    for j in range(1, len(starts)):
        if j in wanted or not may_drop(j, keep[-1]):
            keep.append(j)
    return keep


class SourceIndex:
    """The syncs of one source partition, as disjoint source ranges ``[covered_from,
    source_last]`` sorted by source offset. Where syncs overlap (an at-least-once re-copy), the
    newest written holds the range; an older sync keeps the part nobody re-copied."""

    def __init__(self, recent: int = RECENT, older: int = OLDER) -> None:
        self._cap = recent + older
        self._recent = recent
        self.entries: list[OffsetSync] = []
        self._starts: list[int] = []
        self._monotonic = True  # targets grow with source offsets (no re-copies kept)

    def __len__(self) -> int:
        return len(self.entries)

    def add(self, s: OffsetSync) -> None:
        """Add the newest-written sync ``s``."""
        e, starts = self.entries, self._starts
        if e and (s.covered_from, s.source_first, s.target_first) == (
            e[-1].covered_from,
            e[-1].source_first,
            e[-1].target_first,
        ):  # the newest run again (an anchor of it, or the run grown): keep the longest
            if s.source_last > e[-1].source_last:
                e[-1] = s
            return
        if e and s.covered_from > e[-1].source_last:  # the common case: the run goes on
            if s.target_first <= e[-1].target_last:
                self._monotonic = False
            e.append(s)
            starts.append(s.covered_from)
            self._thin()
            return
        lo = bisect_right(starts, s.covered_from) - 1
        if lo < 0 or e[lo].source_last < s.covered_from:
            lo += 1  # the first kept sync that may overlap ``s``
        hi = lo
        while hi < len(e) and e[hi].covered_from <= s.source_last:
            hi += 1
        new: list[OffsetSync] = []
        if lo < hi:  # e[lo:hi] overlap ``s``: it wins there (the newest copy)
            first, last = e[lo], e[hi - 1]
            if first.covered_from < s.covered_from:
                if first.source_first < s.covered_from:
                    new.append(replace(first, source_last=s.covered_from - 1))
                else:  # only its "not copied" claim is left: ``s`` takes it over
                    s = replace(s, covered_from=first.covered_from)
            new.append(s)
            if last.source_last > s.source_last:  # an older copy of later records stays
                new.append(_right_of(last, s.source_last))
        else:
            new.append(s)
        e[lo:hi] = new
        starts[lo:hi] = [x.covered_from for x in new]
        if self._monotonic:  # only the pairs around the replaced range can break it
            a, b = max(0, lo - 1), min(len(e), lo + len(new) + 1)
            self._monotonic = all(
                x.target_last < y.target_first for x, y in itertools.pairwise(e[a:b])
            )
        else:  # rare (a re-copy is held): a removal may have restored the order
            self._monotonic = all(x.target_last < y.target_first for x, y in itertools.pairwise(e))
        self._thin()

    def _thin(self) -> None:
        """Past ``recent + older`` syncs, thin the older ones (amortised: one pass per
        ``older / 2`` adds). A sync goes only if every copy it describes lies after the end of
        the kept one before it: the hole it leaves is then answered from that end, behind."""
        e = self.entries
        if len(e) <= self._cap:
            return
        n = len(e) - self._recent
        old = e[:n]
        keep = _keep(
            self._starts[:n],
            self._starts[n],
            lambda j, k: old[j].target_first > old[k].target_last,
        )
        # Hard bound: past it the oldest go (offsets before the oldest kept are refused).
        kept = [old[j] for j in keep][-(self._cap - self._recent) :]
        e[:n] = kept
        self._starts[:n] = [x.covered_from for x in kept]

    def lookup(self, offset: int) -> tuple[int, Kind] | None:
        """The target offset from which a consumer sees a copy of every record at or after
        source ``offset`` (``None``: before every sync kept)."""
        e = self.entries
        i = bisect_right(self._starts, offset) - 1
        if i < 0:
            return None
        s = e[i]
        kind: Kind
        if offset <= s.source_last:
            at, kind = s.target_first + max(0, offset - s.source_first), "exact"
        elif i == len(e) - 1:
            at, kind = s.target_last + 1, "ahead"
        else:  # a hole between kept syncs (thinned, or copied by a process whose syncs are
            # not here): the end of the copies before it, which precede the hole's copies
            at, kind = s.target_last + 1, "behind"
        if not self._monotonic:  # an older copy of a later record may sit before ``at``
            later = min((x.target_first for x in e[i + 1 :]), default=at)
            if later < at:
                at, kind = later, "behind"
        return at, kind

    def copied_end(self) -> int | None:
        return self.entries[-1].source_last + 1 if self.entries else None


def _right_of(s: OffsetSync, last: int) -> OffsetSync:
    """The part of ``s`` after source offset ``last``."""
    first = max(s.source_first, last + 1)
    return replace(
        s,
        covered_from=last + 1,
        source_first=first,
        target_first=s.target_first + (first - s.source_first),
    )


class TargetIndex:
    """The syncs whose copies landed in one target partition, sorted by target offset."""

    def __init__(self, recent: int = RECENT, older: int = OLDER) -> None:
        self._cap = recent + older
        self._recent = recent
        self.entries: list[OffsetSync] = []
        self._starts: list[int] = []

    def __len__(self) -> int:
        return len(self.entries)

    def add(self, s: OffsetSync) -> None:
        i = bisect_left(self._starts, s.target_first)
        if i < len(self.entries) and self._starts[i] == s.target_first:
            # the same copies again (a ring slot and an anchor, or a run that grew): keep the
            # longest
            if s.source_last > self.entries[i].source_last:
                self.entries[i] = s
            return
        if i == len(self.entries):
            self.entries.append(s)
            self._starts.append(s.target_first)
        else:
            insort(self._starts, s.target_first)
            self.entries.insert(i, s)
        if len(self.entries) > self._cap:
            n = len(self.entries) - self._recent
            keep = _keep(self._starts[:n], self._starts[n], lambda j, k: True)
            keep = keep[-(self._cap - self._recent) :]
            self.entries[:n] = [self.entries[j] for j in keep]
            self._starts[:n] = [self._starts[j] for j in keep]

    @property
    def newest(self) -> OffsetSync | None:
        return self.entries[-1] if self.entries else None

    def lookup(self, offset: int) -> tuple[int, bool] | None:
        """The source offset before which a consumer of the target at ``offset`` has seen a
        copy of every record (conservative), and whether it is exact; ``None``: ``offset`` is
        at or before the oldest copy kept."""
        i = bisect_left(self._starts, offset) - 1
        if i < 0:
            return None
        s = self.entries[i]  # the newest copy below ``offset``
        if offset <= s.target_last:
            return s.source_first + offset - s.target_first, True
        return s.source_last + 1, True

    def oldest_covered(self) -> int:
        return self.entries[0].covered_from
