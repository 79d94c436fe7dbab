"""Event ids (``conflict.ids``)."""

from __future__ import annotations

import pytest

from conflict.ids import is_id, new_id

pytestmark = pytest.mark.unit


def test_ids_sort_by_time() -> None:
    a, b = new_id(1000), new_id(2000)
    assert is_id(a)
    assert a < b
