"""OffsetCommit (API key 8), versions 2-10.

v0 and v1 are not served (kio has neither; librdkafka needs some version in 1-2, and every client we target sends
v2+) · v2 adds retention_time_ms, which is ignored (Kafka ignores it since 2.1: offsets.retention.minutes rules) ·
v3 adds throttle_time_ms · v4 is v3 again · v5 drops retention_time_ms · v6 adds committed_leader_epoch · v7 adds
group_instance_id (static membership) · v8 is the first flexible version · v9 is v8 again (the new consumer protocol
sends it; for a classic group the epoch field is the generation) · v10 names topics by id.

For a KIP-848 consumer group the generation field is the member epoch: the member id must be a current member
(UNKNOWN_MEMBER_ID) at its current epoch (STALE_MEMBER_EPOCH), and its commits need v9+ (UNSUPPORTED_VERSION).

Each partition is checked here (UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID on v10, OFFSET_METADATA_TOO_LARGE past
Kafka's 4096-byte `offset.metadata.max.bytes`); the rest are committed together, and the group's verdict on the member
and generation (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS, ...) is every one of their error codes.
Generation -1 with an empty member id is a standalone commit (no group management).
"""

from __future__ import annotations

from typing import Any, Final

from kafkalite.errors import KafkaLiteError, UnknownTopicError
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import UNKNOWN_TOPIC_ID, error_code

OFFSET_METADATA_TOO_LARGE: Final = 12
MAX_METADATA_BYTES: Final = 4096


def _topic_name(ctx: RequestContext, topic: Any) -> str | None:
    if ctx.version < 10:
        name: str = topic.name
        return name
    try:
        return ctx.broker.topic_by_id(topic.topic_id).name
    except UnknownTopicError:
        return None


def _partition_error(ctx: RequestContext, name: str | None, partition: Any) -> int:
    """The error of one partition found before asking the group (0: none)."""
    if name is None:
        return UNKNOWN_TOPIC_ID
    try:
        ctx.broker.partition(name, partition.partition_index)
    except KafkaLiteError as e:
        return error_code(e)
    if partition.committed_metadata is not None and len(partition.committed_metadata.encode()) > MAX_METADATA_BYTES:
        return OFFSET_METADATA_TOO_LARGE
    return 0


@handles(ApiKey.OFFSET_COMMIT, versions=range(2, 11))
async def offset_commit(ctx: RequestContext, req: Any) -> Any:
    checked = []
    to_commit: list[tuple[str, int, int, str, int]] = []
    for topic in req.topics:
        name = _topic_name(ctx, topic)
        errors = [_partition_error(ctx, name, p) for p in topic.partitions]
        checked.append((topic, errors))
        to_commit.extend(
            (name, p.partition_index, p.committed_offset, p.committed_metadata or "", _leader_epoch(p))
            for p, code in zip(topic.partitions, errors, strict=True)
            if code == 0 and name is not None
        )
    group_code = 0
    if to_commit:
        group_code = await ctx.broker.groups.commit_offsets(
            req.group_id,
            req.member_id,
            req.generation_id_or_member_epoch,
            to_commit,
            group_instance_id=getattr(req, "group_instance_id", None),
            api_version=ctx.version,
        )
    topics = [
        ctx.build(
            "OffsetCommitResponseTopic",
            name=getattr(topic, "name", None),
            topic_id=getattr(topic, "topic_id", None),
            partitions=[
                ctx.build(
                    "OffsetCommitResponsePartition", partition_index=p.partition_index, error_code=code or group_code
                )
                for p, code in zip(topic.partitions, errors, strict=True)
            ],
        )
        for topic, errors in checked
    ]
    return ctx.build("OffsetCommitResponse", throttle_time=0, topics=topics)


def _leader_epoch(partition: Any) -> int:
    epoch: int = getattr(partition, "committed_leader_epoch", -1)
    return epoch
