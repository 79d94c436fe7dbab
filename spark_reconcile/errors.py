"""Errors of the reconciliation job; each names the DC, file or option and the fix."""

from __future__ import annotations

from aa.errors import AaError


class ReconcileError(AaError):
    """The job cannot run as asked (bad window, bad thresholds, unreadable state file)."""


class DcUnreachableError(ReconcileError):
    """A DC's cluster did not answer before the deadline; the message names the DC."""


class EventDecodeError(ReconcileError):
    """A record of an event-sourced topic is not a valid event envelope."""
