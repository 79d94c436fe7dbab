"""A DC that is down must not flood the log: aiokafka retries every 100 ms and logs each failed
connect, fetch, metadata update and heartbeat at ERROR (a source broker down for 75 s wrote
5,300 lines). Each kind of client complaint is logged once a minute, with how many like it
were left out since; aa's own lines and other messages are not held back."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import orjson
import pytest
import structlog

from aa import logs

pytestmark = pytest.mark.unit


@pytest.fixture
def json_logs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """JSON logs with a clock the test moves (seconds)."""
    now = [1_000.0]
    monkeypatch.setattr(logs, "_clock", lambda: now[0], raising=False)
    saved, handlers = structlog.get_config(), list(logging.getLogger().handlers)
    logs.configure(json=True)
    try:
        yield now
    finally:  # leave logging as other tests expect it
        structlog.configure(**saved)
        logging.getLogger().handlers[:] = handlers


def _lines(capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in capsys.readouterr().err.splitlines() if line]


def test_a_client_complaint_ten_times_a_second_is_logged_once_a_minute(
    json_logs: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    fetcher = logging.getLogger("aiokafka.consumer.fetcher")
    for i in range(500):
        json_logs[0] += 0.1
        fetcher.error("Failed fetch messages from %s: %s", 1, f"NodeNotReadyError (try {i})")
    first = _lines(capsys)
    assert [line["event"] for line in first] == [
        "Failed fetch messages from 1: NodeNotReadyError (try 0)"
    ]
    assert "suppressed" not in first[0]
    json_logs[0] += 60.0
    fetcher.error("Failed fetch messages from %s: %s", 1, "NodeNotReadyError (try 500)")
    again = _lines(capsys)
    assert len(again) == 1
    assert again[0]["suppressed"] == 499  # the lines left out since the last one


def test_other_messages_and_aas_own_lines_are_not_held_back(
    json_logs: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    client = logging.getLogger("aiokafka")
    for _ in range(3):
        client.error("Unable connect to node with id %s: %s", 1, "refused")
        client.error("Unable to update metadata from %s", [1])
        logs.get_logger("aa.test").error("flow_restarting", flow="SF->NYC")
    events = [line["event"] for line in _lines(capsys)]
    assert events.count("Unable connect to node with id 1: refused") == 1
    assert events.count("Unable to update metadata from [1]") == 1
    assert events.count("flow_restarting") == 3


def test_the_same_complaint_about_another_node_counts_as_the_same_kind(
    json_logs: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    """Messages aiokafka formats itself (not through %-arguments) differ only in numbers."""
    client = logging.getLogger("aiokafka")
    for port in range(9092, 9192):
        client.error(f"Unable connect to 127.0.0.1:{port}")
    assert len(_lines(capsys)) == 1


def test_a_topic_being_created_is_not_an_error_on_a_first_start(
    json_logs: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 35, item 8: on a normal first start aiokafka logged "Topic heartbeats not found in
    cluster metadata" (and, for a partition still electing its leader, "Failed fetch offsets
    ... NotLeaderForPartitionError") at ERROR, while aa was creating the topic. Those states
    pass on their own; other client errors still show."""
    logging.getLogger("aiokafka.cluster").error(
        "Topic %s not found in cluster metadata", "heartbeats"
    )
    logging.getLogger("aiokafka.consumer.fetcher").error(
        "Failed fetch offsets from %s: %s", 1, "[Error 6] NotLeaderForPartitionError: tp"
    )
    assert _lines(capsys) == []
    logging.getLogger("aiokafka.cluster").error("Topic %s is not authorized for this client", "t")
    [shown] = _lines(capsys)
    assert shown["level"] == "error"
