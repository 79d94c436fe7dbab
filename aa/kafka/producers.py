"""What aa reads of a started aiokafka producer that aiokafka keeps private.

The broker gives an idempotent (or transactional) producer its id as it starts; aiokafka keeps
it on the producer's transaction manager. aa marks each batch it writes with that id (the
``aa-batch`` header, :func:`aa.provenance.batch_mark`), so the flows out of a DC believe
provenance only in batches a mirror (or a repair) wrote."""

from __future__ import annotations

from aiokafka import AIOKafkaProducer


def producer_id(producer: AIOKafkaProducer) -> int | None:
    """The broker-given id of a started idempotent producer; ``None`` when it has none."""
    manager = getattr(producer, "_txn_manager", None)
    pid = getattr(manager, "producer_id", None)
    return pid if isinstance(pid, int) and pid >= 0 else None
