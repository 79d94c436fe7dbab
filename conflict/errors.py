"""Errors of the conflict package; each names the field or event at fault."""

from __future__ import annotations


class ConflictError(Exception):
    """Base of conflict's errors."""


class DecodeError(ConflictError):
    """A record is not a valid event envelope; ``field`` names what is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"event.{field}: {message}")
        self.field = field


class ClockSkewError(ConflictError):
    """An HLC timestamp is further in the future than the allowed drift."""


class ResolverError(ConflictError):
    """An event a resolver cannot apply: unknown type, bad payload, invalid Yjs update."""


class SnapshotError(ConflictError):
    """A materializer snapshot cannot be restored: wrong version, malformed, or an event in it
    is refused (for example by a resolver the registry no longer knows)."""
