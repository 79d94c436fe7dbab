"""A flow's ``schemas`` section: the schema registries of its two DCs and which topics carry
registry-framed keys and values, whose schema ids the flow translates (:mod:`aa.schemas`).

Written under a flow of the ``flows`` list (``- SF->NYC: {schemas: {...}}``): each DC has its
own registry, so the same schema has different ids in SF and NYC, and a record copied with
SF's id would not decode (or would decode as another schema) in NYC.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from aa.config import names
from aa.config.kinds import Filter, Integer, Password, Template, Text, Url
from aa.config.schema import REQUIRED, section, setting
from aa.config.secret import Secret
from aa.config.topic_filter import TopicFilter

NO_TOPICS = TopicFilter((), ())
NOT_FRAMED = (".*heartbeats",)
"""aa's heartbeats topic (prefixed or not: ``heartbeats.topic``'s default) carries JSON."""


@section(groups=("source", "target"))
@dataclass(frozen=True, slots=True)
class SchemaTranslation:
    """The flow's source and target registries (Confluent's REST API) and its framed topics."""

    source_url: str = setting(REQUIRED, Url())
    """the source DC's schema registry: Confluent's REST API (Apicurio's is under
    `/apis/ccompat/v7`)"""
    target_url: str = setting(REQUIRED, Url())
    """the target DC's schema registry"""
    source_username: str | None = setting(None, Text())
    """HTTP basic auth user for the source registry (with `password`)"""
    source_password: Secret | None = setting(None, Password())
    """its password"""
    source_cafile: str | None = setting(None, Text("PEM file"))
    """the CA(s) to trust for an `https` registry; none: the system's CAs"""
    target_username: str | None = setting(None, Text())
    """HTTP basic auth user for the target registry (with `password`)"""
    target_password: Secret | None = setting(None, Password())
    """its password"""
    target_cafile: str | None = setting(None, Text("PEM file"))
    """the CA(s) to trust for an `https` registry; none: the system's CAs"""
    values: TopicFilter = setting(TopicFilter((".*",), NOT_FRAMED), Filter(NOT_FRAMED))
    """source topics whose values are framed (magic byte 0, then a 4-byte schema id): their ids
    are translated; a value that is not framed (or null) is copied as it is. A plain list is the
    include list and keeps the default exclude (aa's heartbeats, JSON)"""
    keys: TopicFilter = setting(NO_TOPICS, Filter())
    """source topics whose keys are framed"""
    cache_size: int = setting(10_000, Integer(lo=1))
    """source ids whose target id the flow keeps in memory; an id it forgot is looked up in the
    registries again (registering a schema the target has is idempotent)"""
    ids_topic: str = setting(names.SCHEMA_IDS_TOPIC, Template())
    """where the flow remembers source id → target id, in the target DC (compacted), so a
    restart neither asks nor registers again"""

    def frames(self, topic: str) -> bool:
        """Whether source ``topic``'s keys or values carry schema ids this flow translates."""
        return matches(self.keys, topic) or matches(self.values, topic)


def matches(f: TopicFilter, topic: str) -> bool:
    return any(re.fullmatch(p, topic) for p in f.include) and not any(
        re.fullmatch(p, topic) for p in f.exclude
    )
