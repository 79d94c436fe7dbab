"""Why a flow stopped."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from aiokafka.errors import (
    ClusterAuthorizationFailedError,
    CorruptRecordException,
    GroupAuthorizationFailedError,
    KafkaError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailed,
)

from aa.admin import AdminNotAuthorized
from aa.errors import AaError

if TYPE_CHECKING:
    from aa.mirror.settings import FlowSettings


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


class TransactionBroken(FlowError):
    """Exactly-once: the producer's transaction is no longer open, ended by the target (a
    partition the target's ACL refused to add to it, a request it timed out): every send is
    refused until the run aborts it. The refused copy says why once settled
    (:class:`aa.mirror.pending.TopicsFailed` for a topic's ACL); a restart gets past it."""

    def __init__(self, message: str, *, kind: str = "transaction-broken", retriable: bool = True):
        super().__init__(message, kind=kind, retriable=retriable)


def _rebuild(cls: type[FlowError], message: str, kind: str, retriable: bool) -> FlowError:
    return cls(message, kind=kind, retriable=retriable)


_ACL = {
    # error: (what the flow was refused, kafka-acls resource option, operation to grant)
    GroupAuthorizationFailedError: ("use consumer group", "--group", "Read"),
    TransactionalIdAuthorizationFailed: ("use transactional id", "--transactional-id", "Write"),
    ClusterAuthorizationFailedError: ("act on the cluster", "--cluster", "IdempotentWrite"),
}
_READ = ("read topic", "--topic", "Read")
_WRITE = ("write topic", "--topic", "Write")


def refused_by_acl(exc: BaseException | None) -> BaseException | None:
    """The authorization error ``exc`` is, or was raised from; ``None`` when neither."""
    while exc is not None and not isinstance(
        exc, (TopicAuthorizationFailedError, AdminNotAuthorized, *_ACL)
    ):
        exc = exc.__cause__
    return exc


def _refused(exc: BaseException, s: FlowSettings, side: str | None) -> tuple[str, str, str, str]:
    """(DC, what was refused, operation, resource) of an authorization error."""
    if isinstance(exc, AdminNotAuthorized):
        return exc.dc, exc.doing, exc.operation, exc.resource
    if isinstance(exc, TopicAuthorizationFailedError):
        if side is None:  # as a consumer raised it (a producer's is wrapped, with its side):
            # a read, of the source or of the flow's own topics in the target
            internal = exc.args[:1] in ((s.sync_topic,), (s.eos_offsets_topic,))
            side, (doing, option, operation) = ("target" if internal else "source"), _READ
        else:
            doing, option, operation = _READ if side == "source" else _WRITE
    else:
        consumer = isinstance(exc, GroupAuthorizationFailedError)
        side = side or ("source" if consumer else "target")
        doing, option, operation = next(v for k, v in _ACL.items() if isinstance(exc, k))
    if option != "--cluster":
        name = str(exc.args[0]) if exc.args else "?"
        doing, option = f"{doing} {name}", f"{option} {name}"
    return (s.source if side == "source" else s.target), doing, operation, option


def not_authorized(
    exc: BaseException | None, s: FlowSettings, side: Literal["source", "target"] | None = None
) -> FlowError | None:
    """The flow's principal refused by an ACL: ``exc`` or an error it was raised from, raised
    by a client of the flow's ``side`` (``None``: as a client raised it, not wrapped: a topic or
    group refused to the consumer, a transactional id or idempotence to the producer; an admin
    request's refusal names its DC). No restart gets past an ACL, so the flow stops for good,
    with what to grant; ``None`` for any other error."""
    refused = acl_refusal(exc, s, side)
    if refused is None:
        return None
    return FlowError(
        f"{s.name}: {refused}; no restart gets past an ACL, so the flow stops. Grant it, e.g. "
        f"{_grant(refused, s)}, then restart aa",
        kind="not-authorized",
        retriable=False,
    )


def topic_not_authorized(exc: BaseException, s: FlowSettings) -> str | None:
    """The reason a target topic fails (the flow goes on) when the target's ACL refuses the
    flow's writes to it; ``None`` when ``exc`` is no such refusal."""
    refused = acl_refusal(exc, s, "target")
    if refused is None or not isinstance(refused.exc, TopicAuthorizationFailedError):
        return None
    return (
        f"{refused}; the topic stops (the flow's other topics go on) and is tried again with "
        f"backoff. Grant it, e.g. {_grant(refused, s)}: the topic resumes by itself, or on "
        "`aa resume`"
    )


@dataclass(frozen=True, slots=True)
class AclRefusal:
    """Who refused the flow what: the DC, what the flow was doing, the operation and the
    ``kafka-acls.sh`` resource option to grant, and the error."""

    dc: str
    doing: str
    operation: str
    resource: str
    exc: BaseException

    def __str__(self) -> str:
        return f"{self.dc} does not allow this flow to {self.doing} ({self.exc!r})"


def acl_refusal(
    exc: BaseException | None, s: FlowSettings, side: Literal["source", "target"] | None = None
) -> AclRefusal | None:
    """The ACL refusal ``exc`` is, or was raised from (see :func:`not_authorized`)."""
    exc = refused_by_acl(exc)
    if exc is None:
        return None
    return AclRefusal(*_refused(exc, s, side), exc)


def _grant(refused: AclRefusal, s: FlowSettings) -> str:
    """The ``kafka-acls.sh`` command that grants what ``refused`` says."""
    client = s.source_client if refused.dc == s.source else s.target_client
    user = client.get("sasl_plain_username")
    principal = f"User:{user}" if user else f"<the principal aa connects to {refused.dc} as>"
    return (
        f"kafka-acls.sh --bootstrap-server {client.get('bootstrap_servers')} --add "
        f"--allow-principal {principal} --operation {refused.operation} {refused.resource}"
    )


def is_crash(exc: BaseException) -> bool:
    """True for a failure aa cannot explain (a defect, or an input it does not expect) or one
    that waiting does not cure: a batch failing its CRC check (a damaged log) fails the same
    way on every read. False for a DC down (another Kafka client error, an ``OSError``) or an
    error aa explains. (The flows' own consumers never raise for a damaged batch: see
    :class:`aa.kafka.records.CorruptBatch`; other readers, of internal topics, do.)"""
    if isinstance(exc, CorruptRecordException):
        return True
    return not isinstance(exc, AaError | KafkaError | OSError)


def first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The error to report from a task group: a FlowError if any, else the first leaf."""
    leaves: list[BaseException] = []
    stack: list[BaseException] = [group]
    while stack:
        exc = stack.pop(0)
        if isinstance(exc, BaseExceptionGroup):
            stack.extend(exc.exceptions)
        else:
            leaves.append(exc)
    return next((e for e in leaves if isinstance(e, FlowError)), leaves[0])
