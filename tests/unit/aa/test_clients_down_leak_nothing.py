"""A client whose cluster is down when it starts is closed again, not leaked.

aiokafka leaves a consumer or producer whose bootstrap failed open. `aa run` with a DC down
leaked one consumer per checkpoint pass (the offset-sync reader of ``CheckpointTask``, a
``TopicReader``), each reported as ``Unclosed AIOKafkaConsumer`` when collected. No broker is
needed: nothing listens on port 1."""

from __future__ import annotations

import gc
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaConnectionError

from aa.lifecycle import AsyncResource, started
from aa.tail import TopicReader

pytestmark = pytest.mark.unit

DOWN = {"bootstrap_servers": "127.0.0.1:1", "request_timeout_ms": 2000}


async def _unclosed_after(fail: Callable[[], Awaitable[Any]]) -> list[str]:
    """The ``Unclosed …`` warnings once what ``fail`` built is collected."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(KafkaConnectionError):
            await fail()
        gc.collect()
    return [str(w.message) for w in caught if "nclosed" in str(w.message)]


async def test_topic_reader_of_a_dc_that_is_down_leaves_no_consumer_open() -> None:
    async def start_reader() -> None:
        await TopicReader("aa.offset-syncs.SF.NYC", DOWN).start()

    assert await _unclosed_after(start_reader) == []


@pytest.mark.parametrize("client", [AIOKafkaConsumer, AIOKafkaProducer])
async def test_started_closes_a_client_whose_bootstrap_failed(client: type) -> None:
    async def start_client() -> None:
        await started(client(**DOWN))

    assert await _unclosed_after(start_client) == []


async def test_a_resource_whose_open_fails_half_way_is_closed() -> None:
    class HalfOpen(AsyncResource):
        closed = 0

        async def _open(self) -> None:
            raise KafkaConnectionError("Unable to bootstrap")

        async def _close(self) -> None:
            self.closed += 1

    r = HalfOpen()
    with pytest.raises(KafkaConnectionError):
        await r.start()
    assert (r.closed, r.is_open) == (1, False)


async def test_topic_reader_built_but_never_started_leaves_no_consumer_behind() -> None:
    """The lag export builds an exactly-once flow's offsets reader before its first read; with
    the source DC down that read fails first, the reader is closed unstarted, and its consumer
    (made in ``__init__``) was collected unclosed, once per lag retry."""

    async def build_and_close() -> None:
        reader = TopicReader("aa.eos-offsets.SF.NYC", DOWN)
        await reader.close()
        raise KafkaConnectionError("the source DC is down")

    assert await _unclosed_after(build_and_close) == []
