"""Topic sync for one flow: create missing target topics with the source's partition count and
replicated configs, grow partitions, and keep configs in step.

Who owns the target topic decides what happens to an existing one:

* prefix mode (and headers mode with ``topic_sync.headers_mode: sync``): the target topic is a
  replica of the source's, and the source is the authority — partitions only grow (Kafka cannot
  shrink them) and target configs are set to the source's, except the keys in the exclude list,
  which stay as the target has them (AlterConfigs replaces every dynamic config, so those are
  sent back as-is);
* headers mode (default ``create-only``): the same-named topic in the target is the target DC's
  own application topic, written by its applications and by every inbound flow. Topic sync
  creates it when missing (like the source's) and then leaves its configs alone; a difference
  from the source is logged once as ``topic_mismatch`` (with two sources that differ, syncing
  would flip the target's configs at every pass).

Partition counts are the topology's in both modes: a target with fewer partitions than its
source is grown to the source's count (partitions only ever grow), so every record keeps its
partition and offset translation stays exact. In a mesh each DC's growth reaches every other DC
through the flows out of it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from aa.admin import ClusterAdmin, TopicInfo, TopicRefused
from aa.logs import get_logger
from aa.protocols import Router

GROWN = (
    "partition counts are the topology's: a topic grown in one DC is grown in every DC it is "
    "copied to, so records keep their partition and offset translation stays exact; "
    "partitions only ever grow"
)
"""Why a target topic the DC owns (headers mode) was grown all the same: in every log line."""


@dataclass(frozen=True, slots=True)
class SyncResult:
    created: tuple[str, ...]
    grown: tuple[str, ...]
    reconfigured: tuple[str, ...]


def replicated_configs(configs: Mapping[str, str], exclude: frozenset[str]) -> dict[str, str]:
    return {k: v for k, v in configs.items() if k not in exclude}


class TopicSync:
    """Keeps the target's copies of a flow's topics shaped like the source's."""

    def __init__(
        self,
        source: ClusterAdmin,
        target: ClusterAdmin,
        router: Router,
        exclude: frozenset[str],
        *,
        dead_letter_topic: str | None = None,
    ) -> None:
        self._source = source
        self._target = target
        self._router = router
        self._exclude = exclude
        self._pattern = re.compile(router.subscription())
        self._dead_letter = dead_letter_topic
        self.owned = bool(getattr(router, "target_owns_topics", False))
        """The target owns existing topics: create missing ones only (headers mode)."""
        self._warned: set[tuple[str, str, str]] = set()
        self.partitions: dict[str, int] = {}
        """Target partition count per *target* topic, as of the last sync."""
        self.max_message_bytes: dict[str, int] = {}
        self.refused: dict[str, str] = {}
        """Target topics the target refuses to create for good, with why, as of the last try
        (their source topics fail: :meth:`aa.mirror.placement.Placement.target_topic`)."""
        """Target topics' ``max.message.bytes`` where set on the topic, as of the last sync."""
        self._log = get_logger("aa.topics", flow=f"{router.source}->{router.target}")

    def routed(self, topics: Mapping[str, TopicInfo]) -> dict[str, tuple[str, TopicInfo]]:
        """Source topics this flow copies: source name -> (target name, source info)."""
        out = {}
        for name, info in topics.items():
            if info.internal or not self._pattern.fullmatch(name):
                continue
            target = self._router.target_topic(name)
            if target is not None:
                out[name] = (target, info)
        return out

    async def sync(self, only: str | None = None) -> SyncResult:
        """One pass; ``only`` restricts it to one source topic (a topic seen for the first time)."""
        source_topics = await self._source.topics()
        if only is not None:
            source_topics = {k: v for k, v in source_topics.items() if k == only}
        routed = self.routed(source_topics)
        target_topics = await self._target.topics()
        src_cfg = await self._source.topic_configs(routed)
        missing = [  # a source deleted since it was listed has no configs to copy: left out
            (tgt, info.partitions, replicated_configs(src_cfg[src], self._exclude))
            for src, (tgt, info) in routed.items()
            if tgt not in target_topics and src in src_cfg
        ]
        if self._dead_letter and self._dead_letter not in target_topics:
            missing.append((self._dead_letter, 1, {}))
        for name, _, _ in missing:
            self.refused.pop(name, None)
        try:
            created = await self._target.create_topics(missing)
        except TopicRefused as exc:  # those topics fail (the route stage), not the flow
            if self._dead_letter in exc.refused:  # the flow's own: it stops
                raise
            self.refused.update(exc.refused)
            created = exc.created
        for name in created:
            self._log.info("topic_created", topic=name)
        grown = []
        for _src, (tgt, info) in routed.items():
            have = target_topics.get(tgt)
            if have is None or have.partitions >= info.partitions:
                continue  # a target with more keeps them: Kafka never shrinks a topic
            if await self._target.add_partitions(tgt, info.partitions):
                self._log.info(
                    "partitions_added", topic=tgt, partitions=info.partitions,
                    before=have.partitions, detail=GROWN,
                )  # fmt: skip
            grown.append(tgt)
        reconfigured = await self._sync_configs(routed, src_cfg, exclude_new=set(created))
        for _src, (tgt, info) in routed.items():
            have = target_topics.get(tgt)
            if tgt in self.refused:  # not there: created again at its topic's retry
                self.partitions.pop(tgt, None)
            elif have is None or tgt in grown:
                self.partitions[tgt] = info.partitions
            else:
                self.partitions[tgt] = have.partitions
        if self._dead_letter:
            self.partitions.setdefault(self._dead_letter, 1)
        return SyncResult(tuple(created), tuple(grown), tuple(reconfigured))

    async def _sync_configs(
        self,
        routed: Mapping[str, tuple[str, TopicInfo]],
        src_cfg: Mapping[str, Mapping[str, str]],
        exclude_new: set[str],
    ) -> list[str]:
        tgt_cfg = await self._target.topic_configs(
            routed_targets := [t for t, _ in routed.values() if t not in self.refused]
        )
        # only topics whose configs were read on both sides: one deleted meanwhile has none to
        # copy, and a copy must never be set to "no configs" for want of reading the source's
        targets = {
            tgt: src
            for src, (tgt, _) in routed.items()
            if tgt not in exclude_new and src in src_cfg and tgt in tgt_cfg
        }
        for tgt in routed_targets:
            limit = tgt_cfg.get(tgt, {}).get("max.message.bytes")
            if limit is not None:
                self.max_message_bytes[tgt] = int(limit)
        changed = []
        for tgt, src in targets.items():
            want = replicated_configs(src_cfg[src], self._exclude)
            have = tgt_cfg[tgt]
            if replicated_configs(have, self._exclude) != want and self.owned:
                diff = sorted(
                    k
                    for k in set(want) | set(replicated_configs(have, self._exclude))
                    if want.get(k) != have.get(k)
                )
                self._mismatch(tgt, "configs", ", ".join(diff))
            elif replicated_configs(have, self._exclude) != want:
                kept = {k: v for k, v in have.items() if k in self._exclude}
                await self._target.set_topic_configs(tgt, {**kept, **want})
                changed.append(tgt)
                self._log.info("topic_config_synced", topic=tgt, configs=want)
        return changed

    def _mismatch(self, topic: str, difference: str, detail: str) -> None:
        """Log a difference between source and target once per topic, kind and detail."""
        key = (topic, difference, detail)
        if key in self._warned:
            return
        self._warned.add(key)
        self._log.warning(
            "topic_mismatch",
            topic=topic,
            difference=difference,
            detail=detail,
            kept="target",
            fix="the target DC owns this topic in headers mode; change it there, or set "
            "topic_sync.headers_mode: sync to make it like the source",
        )
