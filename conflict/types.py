"""The protocols of the conflict package."""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

from conflict.envelope import Event

S = TypeVar("S")

ResolvedState = Any
"""What a resolver's :meth:`Resolver.value` returns: JSON-able data (``None``, numbers, strings,
lists, dicts with string keys); :func:`conflict.state_bytes` gives its canonical bytes."""


class Resolver(Protocol[S]):
    """Folds the events of one key into a state, incrementally, as a join-semilattice.

    ``add`` and ``merge`` must be commutative, associative and idempotent (an event added twice,
    or present in both merged states, counts once), so the state depends only on the *set* of
    events: the same in every DC, whatever order the events arrived in and however often.

    * ``empty()`` — the state of no events;
    * ``add(state, event)`` — ``state`` with ``event`` folded in; may update ``state`` in place
      and return it (the caller owns it);
    * ``merge(a, b)`` — the state of the union of both event sets; never modifies ``a`` or ``b``;
    * ``value(state)`` — the resolved, JSON-able value; never modifies ``state``.

    ``validate`` raises :class:`~conflict.errors.ResolverError` for an event ``add`` cannot use;
    callers validate before they add, so ``add`` may assume a valid event.
    """

    name: str

    def validate(self, event: Event) -> None: ...

    def empty(self) -> S: ...

    def add(self, state: S, event: Event) -> S: ...

    def merge(self, a: S, b: S) -> S: ...

    def value(self, state: S) -> ResolvedState: ...
