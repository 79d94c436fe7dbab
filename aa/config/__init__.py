"""The topology config: which DCs, which flows, which topics, how loops are prevented.

Entry points: :func:`load_config` (YAML or MM2 properties by extension), :func:`read_yaml`,
:func:`read_mm2`, the frozen model in :mod:`aa.config.model`, and :func:`client_kwargs` for the
aiokafka clients of one DC.
"""

from aa.config import model
from aa.config.client import client_kwargs
from aa.config.load import load_config
from aa.config.mm2 import read_mm2
from aa.config.model import *  # noqa: F403  # the frozen model's names, listed once: model.__all__
from aa.config.secret import Secret
from aa.config.yaml_file import read_yaml

__all__ = ["Secret", "client_kwargs", "load_config", "read_mm2", "read_yaml"]
__all__ += model.__all__
