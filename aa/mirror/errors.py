"""Why a flow stopped."""

from __future__ import annotations

import asyncio
from typing import Any

from aa.errors import AaError


def retrieve(fut: asyncio.Future[Any]) -> None:
    """Done-callback for every send future: its exception counts as retrieved even when the
    flow stops before settling it (it is reported where the flow settles, or not at all
    because the flow already failed for an earlier reason)."""
    if not fut.cancelled():
        fut.exception()


class FlowError(AaError):
    """The flow cannot go on; ``retriable`` says whether a restart may help (the supervisor
    restarts retriable failures with backoff and leaves the others stopped, with the message)."""

    def __init__(self, message: str, *, kind: str, retriable: bool) -> None:
        super().__init__(message)
        self.kind = kind
        self.retriable = retriable
