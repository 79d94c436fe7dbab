"""A FlowError must survive what aiokafka does with the error a flow abandons its producer with
(``abandon``: ``fail_all`` copies it once per pending ``send()`` future)."""

from __future__ import annotations

import copy
import pickle

import pytest

from aa.mirror.errors import FlowError

pytestmark = pytest.mark.unit


def test_flow_error_abandoning_pending_sends_can_be_copied() -> None:
    """Seen: a flow stopping on a malformed record while an offset sync was in flight failed
    with ``TypeError: FlowError.__init__() missing 2 required keyword-only arguments`` raised
    from aiokafka's ``copy.copy(exception)``, hiding the real error."""
    error = FlowError("SF->NYC: the flow stopped", kind="stopped", retriable=True)
    for twin in (copy.copy(error), pickle.loads(pickle.dumps(error))):
        assert (str(twin), twin.kind, twin.retriable) == (str(error), "stopped", True)
