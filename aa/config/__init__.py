"""The topology config: which DCs, which flows, which topics, how loops are prevented.

Entry points: :func:`load_config` (YAML or MM2 properties by extension), :func:`read_yaml`,
:func:`read_mm2`, the frozen model in :mod:`aa.config.model`, and :func:`client_kwargs` for the
aiokafka clients of one DC.
"""

from aa.config.client import client_kwargs
from aa.config.load import load_config
from aa.config.mm2 import read_mm2
from aa.config.model import (
    Checkpoints,
    Datacenter,
    Flow,
    FlowGraph,
    Heartbeats,
    LoopPrevention,
    MetricsEndpoint,
    OffsetSyncs,
    OnError,
    TopicFilter,
    TopicSync,
    Topology,
    Tuning,
)
from aa.config.secret import Secret
from aa.config.yaml_file import read_yaml

__all__ = [
    "Checkpoints",
    "Datacenter",
    "Flow",
    "FlowGraph",
    "Heartbeats",
    "LoopPrevention",
    "MetricsEndpoint",
    "OffsetSyncs",
    "OnError",
    "Secret",
    "TopicFilter",
    "TopicSync",
    "Topology",
    "Tuning",
    "client_kwargs",
    "load_config",
    "read_mm2",
    "read_yaml",
]
