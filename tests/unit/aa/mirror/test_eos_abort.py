"""Aborting an exactly-once flow's transaction the target broke says nothing but aa's line."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest
from aiokafka.errors import TopicAuthorizationFailedError
from aiokafka.producer.transaction_manager import TransactionManager

from aa.logs import get_logger
from aa.mirror.delivery import FlowClients
from aa.mirror.eos import ExactlyOnce
from aa.mirror.settings import FlowSettings

pytestmark = pytest.mark.unit


class _Producer:
    """aiokafka's abort, without a broker: its transaction manager goes through the states."""

    def __init__(self, manager: TransactionManager) -> None:
        self._txn_manager = manager

    async def abort_transaction(self) -> None:
        self._txn_manager.aborting_transaction()
        self._txn_manager.complete_transaction()


async def test_aborting_a_transaction_an_acl_broke_logs_no_unretrieved_future_error() -> None:
    """A topic the target's ACL refuses, exactly-once: aiokafka sets the refusal on its
    transaction's waiter, and its abort replaces that future unread, so asyncio logged
    ``Future exception was never retrieved ... TopicAuthorizationFailedError`` at ERROR beside
    aa's own ``topic_failed`` (seen in test_not_authorized.py's output): two more error lines,
    naming no flow, for one refusal aa already explained."""
    loop = asyncio.get_running_loop()
    seen: list[Any] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _, context: seen.append(context.get("message")))
    try:
        manager = TransactionManager("aa.eos.SF.NYC", 60_000)
        manager.set_pid_and_epoch(7, 0)
        manager.begin_transaction()
        manager.error_transaction(TopicAuthorizationFailedError({"denied"}))
        s = FlowSettings(
            "SF", "NYC", {"bootstrap_servers": "-"}, {"bootstrap_servers": "-"}, "g",
            delivery="exactly-once",
        )  # fmt: skip
        eos = ExactlyOnce(s)
        eos._clients = FlowClients(_Producer(manager), None, None, None, get_logger("t"))  # type: ignore[arg-type]
        eos._open = True
        await eos.abort()
        del manager, eos
        gc.collect()
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(previous)
    assert not [m for m in seen if "never retrieved" in str(m)], seen
