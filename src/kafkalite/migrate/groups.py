"""Consumer groups' positions, translated from source offsets to target offsets and committed on the target.

Only offsets of migrated topics are carried over, each through its partition's `OffsetMap`; the commit metadata
string goes with it. Kafka accepts offsets for a group only while it has no members, so a group already active on
the target is reported and left alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kafkalite.admin import AdminError, Cluster
from kafkalite.admin.groups import commit_offsets, committed_offsets, describe_group_state
from kafkalite.admin.offsets import Key
from kafkalite.migrate.checkpoint import Checkpoint, partition_key


@dataclass
class GroupResult:
    group: str
    offsets: dict[str, tuple[int, int]] = field(default_factory=dict)  # "topic/p" → (source offset, target offset)
    skipped: str | None = None  # why the group was left alone


def migrate_group(
    source: Cluster, target: Cluster, checkpoint: Checkpoint, group: str, topics: Sequence[str]
) -> GroupResult:
    result = GroupResult(group)
    committed = committed_offsets(source, group)
    wanted = set(topics)
    translated: dict[Key, int] = {}
    metadata: dict[Key, str] = {}
    for (topic, partition), (offset, note) in sorted(committed.items()):
        if topic not in wanted:
            continue
        key = partition_key(topic, partition)
        mapping = checkpoint.partitions.get(key)
        if mapping is None:
            continue
        translated[(topic, partition)] = mapping.translate(offset)
        metadata[(topic, partition)] = note
        result.offsets[key] = (offset, translated[(topic, partition)])
    if not translated:
        result.skipped = "no committed offsets on the migrated topics"
        return result
    state, members = describe_group_state(target, group)
    if members:
        result.skipped = f"{members} member(s) active on the target (state {state}); offsets not changed"
        return result
    try:
        commit_offsets(target, group, translated, metadata)
    except AdminError as exc:
        raise AdminError(f"committing group {group!r} on {target.settings.bootstrap}: {exc}") from None
    checkpoint.groups[group] = {key: target_offset for key, (_, target_offset) in result.offsets.items()}
    checkpoint.save()
    return result
