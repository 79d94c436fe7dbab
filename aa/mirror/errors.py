"""Why a flow stopped."""

from __future__ import annotations

from typing import Any

from aiokafka.errors import CorruptRecordException, KafkaError

from aa.errors import AaError


class FlowError(AaError):
    """The flow cannot go on; ``retriable`` says whether a restart may help (the supervisor
    restarts retriable failures with backoff and leaves the others stopped, with the message)."""

    def __init__(self, message: str, *, kind: str, retriable: bool) -> None:
        super().__init__(message)
        self.kind = kind
        self.retriable = retriable

    def __reduce__(self) -> tuple[Any, ...]:
        # copy and pickle rebuild from args alone, which lack the keyword-only fields; aiokafka
        # copies the error a flow abandons its producer with, once per pending send
        return (_rebuild, (type(self), str(self), self.kind, self.retriable))


def _rebuild(cls: type[FlowError], message: str, kind: str, retriable: bool) -> FlowError:
    return cls(message, kind=kind, retriable=retriable)


def aiokafka_part(client: Any, path: str, needs: str) -> Any:
    """The private object at ``path`` below an aiokafka client (``"_fetcher._x"``: the
    ``_fetcher`` that has an ``_x``), where aa sets what aiokafka has no option for. If a later
    aiokafka renames it, the flow refuses to start instead of behaving differently."""
    owner_name, attr = path.split(".")
    owner = getattr(client, owner_name, None)
    if owner is None or not hasattr(owner, attr):
        raise RuntimeError(
            f"this aiokafka has no {type(client).__name__}.{path}: aa cannot {needs}; install "
            "the aiokafka version pyproject.toml pins"
        )
    return owner


def is_crash(exc: BaseException) -> bool:
    """True for a failure aa cannot explain (a defect, or an input it does not expect) or one
    that waiting does not cure: a batch failing its CRC check (a damaged log) fails the same
    way on every read. False for a DC down (another Kafka client error, an ``OSError``) or an
    error aa explains. (The flows' own consumers never raise for a damaged batch: see
    :class:`aa.mirror.batches.CorruptBatch`; other readers, of internal topics, do.)"""
    if isinstance(exc, CorruptRecordException):
        return True
    return not isinstance(exc, AaError | KafkaError | OSError)
