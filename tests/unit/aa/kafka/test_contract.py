"""One test per aiokafka internal aa relies on (:data:`aa.kafka.private.NAMES`): after an
aiokafka upgrade, each name that moved fails its own test, named after it, and
:func:`aa.kafka.private.check` (run when the first flow starts) refuses to start with the
same names."""

from __future__ import annotations

import pytest

from aa.kafka import private
from aa.kafka.private import ClientChanged, Private

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("name", private.NAMES, ids=str)
def test_aiokafka_still_has(name: Private) -> None:
    assert private.present(name), (
        f"aiokafka no longer has {name}, which aa uses to {name.needs}: adapt aa/kafka/"
    )


def test_the_names_are_listed_once() -> None:
    assert len({str(p) for p in private.NAMES}) == len(private.NAMES)


def test_the_start_check_names_what_moved_and_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    gone = Private("aiokafka.consumer.fetcher:Fetcher", "_renamed_away", "fetch")
    monkeypatch.setattr(private, "NAMES", (*private.NAMES, gone))
    private.check.cache_clear()
    try:
        with pytest.raises(ClientChanged, match=r"Fetcher\._renamed_away \(to fetch\).*pins"):
            private.check()
    finally:
        private.check.cache_clear()


def test_an_instance_attribute_counts_only_where_aiokafka_assigns_it() -> None:
    """``_in_flight`` exists on no class: the fetcher's ``__init__`` assigns it."""
    assert private.present(Private("aiokafka.consumer.fetcher:Fetcher", "_in_flight", ""))
    assert not private.present(Private("aiokafka.consumer.fetcher:Fetcher", "_in_fligh", ""))
    assert not private.present(Private("aiokafka.consumer.fetcher:Nothing", "_in_flight", ""))


def test_aa_imports_when_a_protocol_name_moved_so_the_start_check_can_name_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """aiokafka 0.15.0rc1 has no ``aiokafka.protocol.types.TaggedFields``: ``import aa.admin``
    failed with an ImportError before :func:`aa.kafka.private.check` could say what moved."""
    import importlib

    from aiokafka.protocol import types

    from aa.kafka import topic_ids

    monkeypatch.delattr(types, "TaggedFields")
    try:
        importlib.reload(topic_ids)
        private.check.cache_clear()
        with pytest.raises(ClientChanged, match=r"aiokafka\.protocol\.types\.TaggedFields"):
            private.check()
    finally:
        monkeypatch.undo()
        importlib.reload(topic_ids)
        private.check.cache_clear()
