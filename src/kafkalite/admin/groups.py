"""Consumer groups: list, describe (members, assignment, committed offsets, lag), reset offsets, delete.

Lag per partition is `end offset - committed offset` (Kafka's definition; a partition with no committed offset has
no lag figure). A reset writes offsets through OffsetCommit on behalf of the group, which Kafka accepts only while
the group has no members: the plan is refused up front when members are active, so nothing is half-applied.

A group with no members and no committed offsets is reported as not existing, whatever state the broker gives it:
Kafka answers Dead for an unknown group, some compatible brokers answer Empty, and neither has anything to show.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, TopicPartition

from kafkalite.admin.connection import AdminError, Cluster
from kafkalite.admin.offsets import Key, offsets_for_time, watermarks
from kafkalite.admin.topics import topic_metadata

NO_OFFSET = -1001  # librdkafka's OFFSET_INVALID: nothing committed


@dataclass(frozen=True)
class GroupSummary:
    group_id: str
    state: str
    simple: bool  # no members ever joined: offsets committed by assign()-style consumers only


@dataclass(frozen=True)
class Member:
    member_id: str
    client_id: str
    host: str
    assignment: list[Key]


@dataclass(frozen=True)
class PartitionLag:
    topic: str
    partition: int
    committed: int | None
    end_offset: int | None  # None: the topic no longer exists
    member: str | None  # the client id of the member it is assigned to

    @property
    def lag(self) -> int | None:
        if self.committed is None or self.end_offset is None:
            return None
        return max(0, self.end_offset - self.committed)


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    assignor: str
    members: list[Member]
    partitions: list[PartitionLag] = field(default_factory=list)

    @property
    def total_lag(self) -> int:
        return sum(p.lag or 0 for p in self.partitions)


@dataclass(frozen=True)
class OffsetChange:
    topic: str
    partition: int
    current: int | None
    new: int


def _state(state: ConsumerGroupState) -> str:
    return str(state.name).lower()


def list_groups(cluster: Cluster) -> list[GroupSummary]:
    future = cluster.admin.list_consumer_groups(request_timeout=cluster.settings.timeout_s)
    result = cluster.wait({"groups": future}, "list")["groups"]
    return sorted(
        (GroupSummary(g.group_id, _state(g.state), bool(g.is_simple_consumer_group)) for g in result.valid),
        key=lambda g: g.group_id,
    )


def committed_offsets(cluster: Cluster, group: str) -> dict[Key, tuple[int, str]]:
    """Every committed (offset, metadata) of `group`, keyed by (topic, partition); empty when it committed none."""
    futures = cluster.admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group)], request_timeout=cluster.settings.timeout_s
    )
    result = cluster.wait(futures, "committed offsets of group")[group]
    return {
        (tp.topic, tp.partition): (tp.offset, tp.metadata or "")
        for tp in result.topic_partitions
        if tp.offset != NO_OFFSET and tp.error is None
    }


def describe_group(cluster: Cluster, group: str) -> GroupDescription:
    futures = cluster.admin.describe_consumer_groups([group], request_timeout=cluster.settings.timeout_s)
    described = cluster.wait(futures, "describe group")[group]
    members = [
        Member(
            m.member_id,
            m.client_id,
            m.host,
            sorted((tp.topic, tp.partition) for tp in (m.assignment.topic_partitions if m.assignment else [])),
        )
        for m in described.members
    ]
    committed = committed_offsets(cluster, group)
    state = _state(described.state)
    if not members and not committed and state in ("dead", "unknown", "empty"):
        raise AdminError(f"group {group!r} does not exist on {cluster.settings.bootstrap}")
    owner = {key: m.client_id for m in members for key in m.assignment}
    keys = sorted({*committed, *owner})
    topics = cluster.refresh().topics
    # Offsets committed on a topic since deleted stay listed, without an end offset or lag.
    live = [(t, p) for t, p in keys if t in topics and p in topics[t].partitions]
    ends = watermarks(cluster, live)
    partitions = [
        PartitionLag(
            topic,
            partition,
            committed[(topic, partition)][0] if (topic, partition) in committed else None,
            ends[(topic, partition)].end if (topic, partition) in ends else None,
            owner.get((topic, partition)),
        )
        for topic, partition in keys
    ]
    return GroupDescription(group, state, described.partition_assignor or "", members, partitions)


@dataclass(frozen=True)
class ResetTarget:
    """Where to move a group: exactly one of the Kafka tool's `--to-*` / `--shift-by` choices."""

    kind: str  # "earliest" | "latest" | "datetime" | "offset" | "shift"
    value: int = 0  # ms since the epoch for "datetime", the offset for "offset", the delta for "shift"


def plan_reset(
    cluster: Cluster,
    group: str,
    topics: Iterable[str],
    target: ResetTarget,
    partitions: Iterable[int] | None = None,
) -> list[OffsetChange]:
    """The new offset of every chosen partition, clamped to the log's [start, end]; refuses an active group."""
    described = describe_group_state(cluster, group)
    if described[1]:
        raise AdminError(
            f"group {group!r} has {described[1]} active member(s) (state {described[0]}); "
            "stop its consumers first: Kafka only accepts new offsets for an empty group"
        )
    cluster.refresh()
    keys: list[Key] = []
    for topic in topics:
        known = topic_metadata(cluster, topic, refresh=False)
        chosen = sorted(known.partitions) if partitions is None else list(partitions)
        for p in chosen:
            if p not in known.partitions:
                raise AdminError(f"topic {topic!r} has no partition {p} (it has {len(known.partitions)})")
            keys.append((topic, p))
    committed = committed_offsets(cluster, group)
    marks = watermarks(cluster, keys)
    at_time = offsets_for_time(cluster, keys, target.value) if target.kind == "datetime" else {}
    changes = []
    for key in keys:
        current = committed[key][0] if key in committed else None
        mark = marks[key]
        if target.kind == "earliest":
            new = mark.start
        elif target.kind == "latest":
            new = mark.end
        elif target.kind == "datetime":
            new = at_time[key]
        elif target.kind == "offset":
            new = target.value
        elif target.kind == "shift":
            new = (current if current is not None else mark.end) + target.value
        else:
            raise AdminError(f"unknown reset target {target.kind!r}")
        changes.append(OffsetChange(key[0], key[1], current, min(max(new, mark.start), mark.end)))
    return changes


def describe_group_state(cluster: Cluster, group: str) -> tuple[str, int]:
    """(state, number of members) from DescribeGroups."""
    futures = cluster.admin.describe_consumer_groups([group], request_timeout=cluster.settings.timeout_s)
    described = cluster.wait(futures, "describe group")[group]
    return _state(described.state), len(described.members)


def commit_offsets(cluster: Cluster, group: str, offsets: Mapping[Key, int], metadata: Mapping[Key, str] = {}) -> None:
    """OffsetCommit on behalf of an empty group (AlterConsumerGroupOffsets); a refused partition raises AdminError."""
    if not offsets:
        return
    partitions = []
    for (topic, partition), offset in sorted(offsets.items()):
        note = metadata.get((topic, partition))
        partitions.append(
            TopicPartition(topic, partition, offset, metadata=note)
            if note
            else TopicPartition(topic, partition, offset)
        )
    futures = cluster.admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, partitions)], request_timeout=cluster.settings.timeout_s
    )
    result = cluster.wait(futures, "commit offsets of group")[group]
    for tp in result.topic_partitions:
        if tp.error is not None:
            raise AdminError(f"commit offsets of group {group!r} on {tp.topic}[{tp.partition}]: {tp.error.str()}")


def apply_reset(cluster: Cluster, group: str, changes: Iterable[OffsetChange]) -> None:
    commit_offsets(cluster, group, {(c.topic, c.partition): c.new for c in changes})


def delete_groups(cluster: Cluster, groups: Iterable[str]) -> None:
    futures = cluster.admin.delete_consumer_groups(list(groups), request_timeout=cluster.settings.timeout_s)
    cluster.wait(futures, "delete group")
