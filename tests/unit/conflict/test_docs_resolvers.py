"""The examples of docs/resolvers.md run as written (the incremental one also checked for
order and duplicates)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.unit

DOC = Path(__file__).resolve().parents[3] / "docs" / "resolvers.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def test_resolver_examples_run_and_converge() -> None:
    blocks = _blocks()
    assert len(blocks) >= 2
    scope: dict[str, Any] = {}
    exec(compile(blocks[0], "resolvers.md#function", "exec"), scope)
    exec(compile(blocks[1], "resolvers.md#protocol", "exec"), scope)
    r, events, resolve = scope["r"], scope["events"], scope["resolve"]
    for order in (events, events[::-1], events[1:] + events[:2]):
        assert resolve(r, order) == {"amount": 120}
