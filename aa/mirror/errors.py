"""Why a flow stopped."""

from __future__ import annotations

from aa.errors import AaError


class FlowError(AaError):
    """The flow cannot go on; ``retriable`` says whether a restart may help (the supervisor
    restarts retriable failures with backoff and leaves the others stopped, with the message)."""

    def __init__(self, message: str, *, kind: str, retriable: bool) -> None:
        super().__init__(message)
        self.kind = kind
        self.retriable = retriable
