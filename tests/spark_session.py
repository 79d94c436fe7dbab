"""The one session-scoped local[2] SparkSession every Spark test shares (loaded by conftest)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from spark_reconcile.session import build_session

    session = build_session(master="local[2]", driver_memory="1g", shuffle_partitions=2)
    yield session
    session.stop()
