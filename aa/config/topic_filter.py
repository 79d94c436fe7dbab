"""The include/exclude regex filter used for topics and consumer groups."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TopicFilter:
    """Regexes matched against whole topic names (``fullmatch``, like MM2)."""

    include: tuple[str, ...] = (".*",)
    exclude: tuple[str, ...] = ()
