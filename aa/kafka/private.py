"""Every aiokafka internal aa relies on, in one table, and the one check that they are there.

aiokafka has no public call for a handful of things aa needs (a fetcher's per-partition size,
an accumulator that waits for a leader, a batch builder's buffer, Metadata v12); the modules of
:mod:`aa.kafka` reach them, and no module outside it does (``tests/unit/aa/kafka/
test_private_names.py`` fails if one does). :func:`check` runs once when the first flow or
reader starts (:func:`aa.kafka.fetched.install`): if an aiokafka upgrade renamed or dropped one
of these names, aa refuses to start with one message naming each, instead of behaving
differently. ``tests/unit/aa/kafka/test_contract.py`` pins each name with its own test.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
from dataclasses import dataclass
from typing import Any

from aa.mirror.errors import FlowError


class ClientChanged(FlowError):
    """The installed aiokafka lacks internals aa relies on (an upgrade moved them): no restart
    cures it, so a flow that meets it stops for good with the message."""

    def __init__(
        self, message: str, *, kind: str = "client-changed", retriable: bool = False
    ) -> None:
        super().__init__(message, kind=kind, retriable=retriable)


@dataclass(frozen=True, slots=True)
class Private:
    """One name aa reaches inside aiokafka: ``owner`` (``module`` or ``module:Class``) has
    ``name`` (a class or instance attribute, or a module attribute), for ``needs``."""

    owner: str
    name: str
    needs: str

    def __str__(self) -> str:
        return f"{self.owner}.{self.name}"


_CONSUMER = "aiokafka.consumer.consumer:AIOKafkaConsumer"
_FETCHER = "aiokafka.consumer.fetcher:Fetcher"
_PARTITION_RECORDS = "aiokafka.consumer.fetcher:PartitionRecords"
_PRODUCER = "aiokafka.producer.producer:AIOKafkaProducer"
_ACCUMULATOR = "aiokafka.producer.message_accumulator:MessageAccumulator"
_BATCH_BUILDER = "aiokafka.producer.message_accumulator:BatchBuilder"
_PY_RECORDS = "aiokafka.record.default_records:_DefaultRecordBatchBuilderPy"
_ADMIN = "aiokafka.admin.client:AIOKafkaAdminClient"

_MEMORY = "keep a flow within tuning.memory_budget_mb"
_RESTAMP = "re-encode local batches whole (aa.mirror.restamp)"

NAMES = (
    # fetched.py: the consumer hook
    Private("aiokafka.consumer.fetcher", "PartitionRecords", "hook the flow consumer's fetches"),
    Private("aiokafka.consumer.fetcher", "MemoryRecords", "hook the flow consumer's fetches"),
    Private("aiokafka.consumer.fetcher", "READ_COMMITTED", "hook the flow consumer's fetches"),
    Private(_PARTITION_RECORDS, "_unpack_records", "hook the flow consumer's fetches"),
    Private(_PARTITION_RECORDS, "_consume_aborted_up_to", "skip aborted transactions"),
    Private(_PARTITION_RECORDS, "_contains_abort_marker", "skip aborted transactions"),
    Private(_PARTITION_RECORDS, "_aborted_producers", "skip aborted transactions"),
    Private(_PARTITION_RECORDS, "_isolation_level", "skip aborted transactions"),
    Private(_PARTITION_RECORDS, "_records", "hook the flow consumer's fetches"),
    # consumer.py: fetch sizes and metadata
    Private(_CONSUMER, "_fetcher", _MEMORY),
    Private(_CONSUMER, "_client", "refresh a consumer's topic metadata"),
    Private(_FETCHER, "_max_partition_fetch_bytes", _MEMORY),
    Private(_FETCHER, "_fetch_min_bytes", "apply tuning.fetch_min_bytes"),
    Private(_FETCHER, "_in_flight", "send the next fetch before routing"),
    Private(_FETCHER, "_select_read_replica", "see which broker a fetch reads"),
    # producer.py: the target's producers and batches
    Private(_PRODUCER, "_message_accumulator", "keep a leaderless partition's batches in order"),
    Private(_PRODUCER, "_txn_manager", "mark the batches a flow writes with its producer id"),
    Private(
        "aiokafka.producer.transaction_manager:TransactionManager",
        "_transaction_waiter",
        "read the error that broke a transaction before aborting it",
    ),
    Private(_ACCUMULATOR, "_batch_ttl", "keep a leaderless partition's batches in order"),
    Private(_ACCUMULATOR, "fail_all", "fail what a stopped flow's target did not take"),
    Private(_BATCH_BUILDER, "_builder", "append records without aiokafka's per-record wrapper"),
    Private(_BATCH_BUILDER, "_relative_offset", "seal a batch filled record by record"),
    Private(_BATCH_BUILDER, "_set_producer_state", _RESTAMP),
    # builders.py: the batch path's record batch builder
    Private("aiokafka.record.default_records", "_DefaultRecordBatchBuilderPy", _RESTAMP),
    Private(_PY_RECORDS, "_write_header", _RESTAMP),
    Private(_PY_RECORDS, "_maybe_compress", _RESTAMP),
    Private(_PY_RECORDS, "_compression_type", _RESTAMP),
    Private(_PY_RECORDS, "_get_attributes", _RESTAMP),
    Private(_PY_RECORDS, "_buffer", _RESTAMP),
    Private(_PY_RECORDS, "_magic", _RESTAMP),
    Private(_PY_RECORDS, "_first_timestamp", _RESTAMP),
    Private(_PY_RECORDS, "_max_timestamp", _RESTAMP),
    Private(_PY_RECORDS, "_last_offset", _RESTAMP),
    Private(_PY_RECORDS, "_num_records", _RESTAMP),
    Private(_PY_RECORDS, "_batch_size", _RESTAMP),
    Private(_PY_RECORDS, "_producer_id", _RESTAMP),
    Private(_PY_RECORDS, "_producer_epoch", _RESTAMP),
    Private(_PY_RECORDS, "_base_sequence", _RESTAMP),
    # requests.py: requests aiokafka's admin client sends for aa
    Private(_ADMIN, "_get_cluster_metadata", "list topics and brokers"),
    Private(_ADMIN, "_send_to_controller", "create topics with CreateTopics v4+"),
    Private(_ADMIN, "_send_request", "read topic ids (Metadata v12)"),
    # classes and functions of aiokafka's internal modules the adapter imports
    *(
        Private(module, name, needs)
        for module, names, needs in (
            ("aiokafka.producer.message_accumulator", "BatchBuilder", "write target batches"),
            (
                "aiokafka.record.default_records",
                "DefaultRecordBatch DefaultRecordBatchBuilder",
                "decode and build record batches",
            ),
            (
                "aiokafka.codec",
                "gzip_decode snappy_decode lz4_decode zstd_decode",
                "decode batches aiokafka cannot",
            ),
            *(
                (module, "lz4_encode gzip_encode", "compress at Kafka's levels")
                for module in (
                    "aiokafka.record.default_records",
                    "aiokafka.record._crecords.default_records",
                )
            ),
            ("aiokafka.conn", "create_conn", "check a DC's TLS and SASL at start"),
            ("aiokafka.protocol.metadata", "MetadataRequest", "read a DC's cluster id at start"),
            (
                "aiokafka.protocol.admin",
                "CreateTopicsRequest_v3 CreateTopicsResponse_v3",
                "create topics with CreateTopics v4+",
            ),
            ("aiokafka.protocol.api", "Request RequestStruct Response", "build requests"),
            (
                "aiokafka.coordinator.assignors.abstract",
                "AbstractPartitionAssignor",
                "share an exactly-once flow's partition sets",
            ),
            (
                "aiokafka.coordinator.protocol",
                "ConsumerProtocolMemberAssignment ConsumerProtocolMemberMetadata",
                "share an exactly-once flow's partition sets",
            ),
            ("aiokafka.protocol.abstract", "AbstractType", "read topic ids (Metadata v12)"),
            (
                "aiokafka.protocol.types",
                "Boolean CompactArray CompactString Int16 Int32 Schema TaggedFields",
                "read topic ids (Metadata v12)",
            ),
        )
        for name in names.split()
    ),
)
"""What aa uses of aiokafka that aiokafka does not offer as public API."""


def _resolve(owner: str) -> Any:
    module, _, cls = owner.partition(":")
    try:
        found: Any = importlib.import_module(module)
    except ImportError:
        return None
    for part in cls.split(".") if cls else ():
        found = getattr(found, part, None)
        if found is None:
            return None
    return found


def present(p: Private) -> bool:
    """Whether the installed aiokafka still has ``p``: a class or module attribute, or an
    instance attribute one of the class's own methods (or its bases') assigns."""
    owner = _resolve(p.owner)
    if owner is None:
        return False
    if hasattr(owner, p.name):
        return True
    if not inspect.isclass(owner):
        return False
    assigned = re.compile(rf"\bself\.{re.escape(p.name)}\b\s*(:[^=\n]*)?=[^=]")
    return any(
        assigned.search(_source(cls.__module__))
        for cls in owner.__mro__
        if cls.__module__.startswith("aiokafka")
    )


@functools.cache
def _source(module: str) -> str:
    """A module's source ("" when compiled: only class attributes can be seen there)."""
    try:
        return inspect.getsource(importlib.import_module(module))
    except (OSError, TypeError):
        return ""


@functools.cache
def check() -> None:
    """Raise :class:`ClientChanged` naming every internal of :data:`NAMES` this aiokafka
    lacks (cached: one check per process)."""
    missing = [p for p in NAMES if not present(p)]
    if missing:
        import aiokafka

        lines = "; ".join(f"{p} (to {p.needs})" for p in missing)
        raise ClientChanged(
            f"aiokafka {aiokafka.__version__} has moved what aa relies on: {lines}. Install "
            "the aiokafka version pyproject.toml pins, or adapt aa/kafka/ to this one"
        )
