"""The committed-lag read's consumer (the exporter runs it every ``lag_interval_s``)."""

from __future__ import annotations

import pytest

from aa.lag import timestamp_reader
from aa.mirror.settings import FlowSettings

pytestmark = pytest.mark.unit


async def test_the_lag_read_fetches_one_batch_per_partition_for_its_timestamps() -> None:
    # it wants one record's timestamp per partition behind; with the consumer's default
    # (1 MiB per partition) each read decoded whole fetches: 3.7% of a W3 process's samples
    settings = FlowSettings("A", "B", {"bootstrap_servers": "-"}, {"bootstrap_servers": "-"}, "g")
    consumer = timestamp_reader(settings)
    assert consumer._max_partition_fetch_bytes == 1


def test_lag_json_names_its_fields_as_the_table_does(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 35, item 8: `aa lag --json` said `records`/`seconds` where the table said
    `lag`/`lag_s`. The same names in both (those of `aa status --json`), one per line."""
    from aa.cli import lag as lag_cli
    from aa.lag import PartitionLag

    rows = [
        PartitionLag("SF->NYC", "users", 0, 12, 10, 3.25),
        PartitionLag("SF->NYC", "users", 1, 5, 5, None),
    ]
    table = lag_cli.format_lag(rows).splitlines()
    assert table[0].split() == list(lag_cli.FIELDS)
    assert all(line == line.rstrip() for line in table), table
    assert table[1].split() == ["SF->NYC", "users", "0", "12", "10", "2", "3.2"]
    assert [list(lag_cli.lag_row(r)) for r in rows] == [list(lag_cli.FIELDS)] * 2
    assert lag_cli.lag_row(rows[0])["lag_records"] == 2
    assert lag_cli.lag_row(rows[1])["lag_seconds"] is None
