"""Why a flow stopped."""

from __future__ import annotations

from typing import Any

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
