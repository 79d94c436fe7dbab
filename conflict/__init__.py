"""Event-sourced state that converges in every DC.

* :class:`Event` — the envelope (:mod:`conflict.envelope`); ``Event.decode(value, headers)``
  parses a record strictly, raising :class:`DecodeError` that names the field;
* :class:`HLC`, :class:`Clock` — hybrid logical clock (:mod:`conflict.hlc`);
* resolvers (:mod:`conflict.resolvers`): ``lww``, ``field-lww``, ``multi-value``, ``counter``,
  ``set``, ``document`` (pycrdt) and :class:`UserFunctionResolver`, all behind the
  :class:`~conflict.types.Resolver` protocol, chosen per topic or event type by
  :class:`ResolverRegistry`;
* :class:`Materializer` folds events into per-key state; :class:`PatternConsumer` feeds it from
  every DC's copy of a logical topic; :class:`EventWriter` writes events.

Without Kafka (what the Spark reconcile job runs per key, e.g. in ``applyInPandas`` or a UDF
over the collected values and headers of one key)::

    from conflict import Event, resolve, state_bytes, state_hash

    events = [Event.decode(value, headers) for value, headers in records_of_one_key]
    state = resolve("multi-value", events)  # a built-in name, or any Resolver
    state_bytes(state)  # canonical bytes: equal in every DC that holds the same events
    state_hash(state)  # SHA-256 hex of those bytes

``resolve`` depends only on the *set* of events (any order, any duplicates) and raises
:class:`ResolverError` for an event its resolver cannot use. ``fold`` returns the resolver's
state instead of its value; ``resolver.merge(a, b)`` combines the states of two event sets.
"""

from conflict.consumer import PatternConsumer, logical_topic
from conflict.envelope import Event
from conflict.errors import (
    ClockSkewError,
    ConflictError,
    DecodeError,
    ResolverError,
    SnapshotError,
)
from conflict.hlc import HLC, Clock
from conflict.materializer import Materializer
from conflict.resolvers import BUILTIN, ResolverRegistry, UserFunctionResolver, resolve
from conflict.resolvers.crdts import encode_update
from conflict.resolvers.registry import canonical, fold, get_resolver, state_bytes, state_hash
from conflict.types import ResolvedState, Resolver
from conflict.writer import EventWriter

__all__ = [
    "BUILTIN",
    "HLC",
    "Clock",
    "ClockSkewError",
    "ConflictError",
    "DecodeError",
    "Event",
    "EventWriter",
    "Materializer",
    "PatternConsumer",
    "ResolvedState",
    "Resolver",
    "ResolverError",
    "ResolverRegistry",
    "SnapshotError",
    "UserFunctionResolver",
    "canonical",
    "encode_update",
    "fold",
    "get_resolver",
    "logical_topic",
    "resolve",
    "state_bytes",
    "state_hash",
]
