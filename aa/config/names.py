"""The names aa gives its own topics, consumer groups and transactional ids: spelled here only.

Every name starts with :data:`PREFIX`, so no flow ever copies one
(:func:`aa.policy.naming.is_internal`), the checkpoint task never translates the mirror's own
groups, and no DC may be called ``aa``. Templates take ``{source}`` and ``{target}``: the DCs of
the flow the name belongs to. The topic templates are the defaults of settings a topology may
override (``on_error.dead_letter_topic``, ``offset_sync.topic``, ``checkpoints.topic``, a
flow's ``schemas.ids_topic``); the others are fixed.
"""

from __future__ import annotations

PREFIX = "aa."
"""aa's own topics and groups start with this; never copied, never a DC name."""

DEAD_LETTER_TOPIC = PREFIX + "dead-letter.{source}"
"""Records a flow could not copy (``on_error: dead-letter``), in the target DC."""
OFFSET_SYNCS_TOPIC = PREFIX + "offset-syncs.{source}.internal"
"""Offset syncs of the flows from ``source``, in the target DC."""
CHECKPOINTS_TOPIC = PREFIX + "checkpoints.{source}.internal"
"""Translated group offsets of ``source``'s groups, in the target DC."""
EOS_OFFSETS_TOPIC = PREFIX + "offsets.{source}.internal"
"""Exactly-once: the source offsets, written in the same transaction as the copies."""
CONTROL_TOPIC = PREFIX + "control.{source}.internal"
"""What operators paused in the flows from ``source`` and their rate limits, in the target DC
(compacted: one record per pause, a tombstone when it is lifted)."""
SCHEMA_IDS_TOPIC = PREFIX + "schema-ids.{source}.internal"
"""Schema translation: which target registry id each source registry id became (compacted)."""
MIRROR_GROUP = PREFIX + "mirror.{source}.{target}"
"""The consumer group every process of a flow shares (it splits the partitions)."""
TRANSACTIONAL_ID = PREFIX + "eos.{source}.{target}"
"""One per flow: a restarted or second process of the flow fences the older one."""
SET_TRANSACTIONAL_ID = TRANSACTIONAL_ID + ".{set}-of-{sets}"
"""One per partition set of a flow split in sets (``exactly_once.partition_sets``): the process
that takes a set over fences the one that had it."""


def for_flow(template: str, source: str, target: str) -> str:
    """``template`` with the flow's DCs filled in."""
    return template.format(source=source, target=target)


def set_transactional_id(source: str, target: str, partition_set: int, sets: int) -> str:
    """The transactional id of partition set ``partition_set`` of ``sets`` of a flow."""
    return SET_TRANSACTIONAL_ID.format(source=source, target=target, set=partition_set, sets=sets)


def is_own_group(group: str) -> bool:
    """A consumer group aa itself uses (never translated into the other DCs)."""
    return group.startswith(PREFIX)
