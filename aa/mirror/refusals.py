"""What a flow calls the records a target refuses, and which produce errors are refusals."""

from __future__ import annotations

from aiokafka.errors import (
    CorruptRecordException,
    InvalidTimestampError,
    MessageSizeTooLargeError,
    RecordListTooLargeError,
    UnknownError,
)

DEAD_LETTER_REASON = "aa-dlq-reason"
"""The header a dead letter carries: the refusal kind and what refused it."""

REFUSED = {
    "malformed-headers": "malformed provenance headers",
    "record-too-large": "a record the target refuses as too large",
    "invalid-record": "a record the target refuses as invalid",
    "invalid-timestamp": "a record whose timestamp the target refuses",
    "schema-unknown": "a record whose schema id the source's schema registry does not know",
    "schema-refused": "a record whose schema the target's schema registry refuses",
}
"""What each kind of refused record is called in the message that stops a flow."""

FIXES = {
    "schema-unknown": "register the schema in the source's registry, or",
    "schema-refused": "make the target's registry accept the schema, or",
}
"""What the message that stops a flow says to fix, by refusal kind (default: the target
topic's config)."""

BROKER_REFUSALS: dict[type[BaseException], str] = {
    MessageSizeTooLargeError: "record-too-large",
    RecordListTooLargeError: "record-too-large",
    CorruptRecordException: "invalid-record",
    InvalidTimestampError: "invalid-timestamp",
    UnknownError: "invalid-record",  # INVALID_RECORD (87) has no aiokafka class
}
"""Produce errors that no retry fixes (the broker refused records), by refusal kind."""
