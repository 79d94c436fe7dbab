"""A fresh cluster answers group requests with "coordinator loading" until __consumer_offsets is
loaded. Listing groups must retry that (bounded) like reading a group's offsets does, instead of
failing the checkpoint task (seen in the demo: a restart and a GroupLoadInProgressError as the
task's last error in `aa status`, a few seconds after the DCs started)."""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka.errors import CoordinatorLoadInProgressError

from aa.offsets import groups

pytestmark = pytest.mark.unit


class _LoadingAdmin:
    """Answers ``list_consumer_groups`` with "loading" ``loading`` times, then the groups."""

    loading = 2
    calls = 0

    def __init__(self, **_: Any) -> None:
        pass

    async def start(self) -> None:
        pass

    async def close(self) -> None:
        pass

    async def list_consumer_groups(self) -> list[tuple[str, str]]:
        type(self).calls += 1
        if type(self).calls <= self.loading:
            raise CoordinatorLoadInProgressError("Error listing consumer groups")
        return [("shipping", "consumer"), ("billing", "consumer")]


async def test_listing_groups_while_the_coordinator_loads_waits_for_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(groups, "AIOKafkaAdminClient", _LoadingAdmin)
    monkeypatch.setattr(_LoadingAdmin, "calls", 0)
    assert await groups.list_groups({}) == ["billing", "shipping"]
    assert _LoadingAdmin.calls == 3
