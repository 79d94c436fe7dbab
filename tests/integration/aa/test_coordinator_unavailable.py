"""A cluster whose brokers cannot create their internal topics: a single broker still set to
Kafka's default ``offsets.topic.replication.factor=3`` (or
``transaction.state.log.replication.factor=3``) never gets a group (or transaction)
coordinator. Kafka's clients wait on it forever; the flow says why, names the setting and the
fix, and retries until the brokers are fixed, instead of restarting every 30 s on a bare
``GroupCoordinatorNotAvailableError`` or, exactly-once, hanging with no word at all."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from aa.dev import cluster as devcluster
from aa.mirror.supervisor import FlowState
from tests.conftest import DcCluster, start_local_clusters
from tests.helpers.kafka import Rec, create_topic, eventually, produce
from tests.helpers.mirror import OriginOnlyRouter, exact, sf_to_nyc, supervised

pytestmark = pytest.mark.integration

UNFIT = (
    ("offsets.topic.replication.factor", "3"),
    ("transaction.state.log.replication.factor", "3"),
)


@pytest.fixture(scope="module")
def unfit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One broker that cannot create ``__consumer_offsets`` nor ``__transaction_state``."""
    root: Path = tmp_path_factory.mktemp("aa-unfit")
    [spec] = start_local_clusters(("UNFIT",), root, UNFIT)
    try:
        yield spec.bootstrap
    finally:
        devcluster.down(root)


async def _says_why(state: FlowState) -> str:
    """The flow's error once it names a cause (it keeps retrying: never stopped for good)."""
    await eventually(
        lambda: "replication.factor" in (state.last_error or ""),
        timeout=25,
        message=f"the flow says why its coordinator is missing (last error: {state.last_error})",
    )
    assert state.state != "failed", state.last_error
    return state.last_error or ""


async def test_source_whose_brokers_cannot_create_consumer_offsets_says_why_and_retries(
    unfit: str, dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    topic = await create_topic(unfit, unique_name("unfit-src"))
    await produce(unfit, topic, [Rec(None, b"v")])
    settings = sf_to_nyc(unfit, dc_clusters["NYC"].bootstrap, unique_name("g"))
    async with supervised(settings, OriginOnlyRouter("SF", "NYC", exact(topic))) as sup:
        error = await _says_why(sup.states[settings.name])
    for said in ("SF", "offsets.topic.replication.factor=3", "1 live broker", "__consumer_offsets"):
        assert said in error, error


async def test_exactly_once_target_whose_brokers_cannot_create_transaction_state_says_why(
    unfit: str, dc_clusters: dict[str, DcCluster], unique_name: Callable[[str], str]
) -> None:
    sf = dc_clusters["SF"].bootstrap
    topic = await create_topic(sf, unique_name("unfit-eos"))
    await create_topic(unfit, topic)
    settings = sf_to_nyc(sf, unfit, unique_name("g"), delivery="exactly-once")
    async with supervised(settings, OriginOnlyRouter("SF", "NYC", exact(topic))) as sup:
        error = await _says_why(sup.states[settings.name])
    for said in ("NYC", "transaction.state.log.replication.factor=3", "1 live broker"):
        assert said in error, error
    assert "__transaction_state" in error, error
