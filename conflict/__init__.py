"""Event-sourced state that converges in every DC.

* :class:`Event` — the envelope (:mod:`conflict.envelope`), ``Event.decode(value, headers)``;
* :class:`HLC`, :class:`Clock` — hybrid logical clock (:mod:`conflict.hlc`);
* resolvers (:mod:`conflict.resolvers`): ``lww``, ``field-lww``, ``multi-value``, ``counter``,
  ``set``, ``document`` (pycrdt) and user functions, chosen by :class:`ResolverRegistry`;
  :func:`resolve` is the pure fold (usable without Kafka, e.g. per key inside Spark) and
  :func:`state_hash` the canonical hash of a state;
* :class:`Materializer` folds events into per-key state; :class:`PatternConsumer` feeds it from
  every DC's copy of a logical topic; :class:`EventWriter` writes events.
"""

from conflict.consumer import PatternConsumer, logical_topic
from conflict.envelope import Event
from conflict.errors import ClockSkewError, ConflictError, DecodeError, ResolverError
from conflict.hlc import HLC, Clock
from conflict.materializer import Materializer
from conflict.resolvers import BUILTIN, ResolverRegistry, UserFunctionResolver, resolve
from conflict.resolvers.registry import canonical, state_bytes, state_hash
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
    "ResolverError",
    "ResolverRegistry",
    "UserFunctionResolver",
    "canonical",
    "logical_topic",
    "resolve",
    "state_bytes",
    "state_hash",
]
