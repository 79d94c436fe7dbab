"""The protocols of the conflict package."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from conflict.envelope import Event


class Resolver(Protocol):
    """Turns the set of events of one key into its state.

    ``value`` receives the events deduplicated by id and sorted by :attr:`Event.order`, so its
    result depends only on the *set* of events: the same in every DC, whatever order the events
    arrived in and however often. It must be pure and return JSON-able data.
    """

    name: str

    def validate(self, event: Event) -> None:
        """Raise :class:`~conflict.errors.ResolverError` for an event this resolver cannot use."""
        ...

    def value(self, events: Sequence[Event]) -> Any:
        """The resolved state of one key."""
        ...
