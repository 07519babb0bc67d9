"""OffsetForLeaderEpoch (API key 23), versions 2-4.

v2 is the oldest Kafka 4 serves (adds current_leader_epoch) · v3 adds replica_id · v4 is the first flexible version.

A client asks where a leader epoch ended, to detect log truncation (KIP-320). One broker has led every partition
since it was created, so every partition has one epoch, 0, that covers the whole log (Metadata reports the epoch as
-1, unknown, so librdkafka does not ask). As Kafka answers, per partition: an unknown topic or partition gets
UNKNOWN_TOPIC_OR_PARTITION; a current_leader_epoch other than -1 (no check) below ours gets FENCED_LEADER_EPOCH and
above ours UNKNOWN_LEADER_EPOCH; epoch 0 ends at the log end offset; any other epoch is unknown: leader epoch -1 and
end offset -1, with no error. The replica id (a follower's, or -1 for a consumer) changes nothing: with no
authorizer Kafka answers a follower's request the same way.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import UNKNOWN_TOPIC_OR_PARTITION

FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75
LEADER_EPOCH = 0
NO_EPOCH = -1


def _end_offset(ctx: RequestContext, topic_name: str, partition: Any) -> tuple[int, int, int]:
    """(error code, leader epoch, end offset) for one requested partition."""
    topic = ctx.broker.topics.get(topic_name)
    if topic is None or not 0 <= partition.partition < len(topic.partitions):
        return UNKNOWN_TOPIC_OR_PARTITION, NO_EPOCH, -1
    current = partition.current_leader_epoch
    if current != NO_EPOCH and current < LEADER_EPOCH:
        return FENCED_LEADER_EPOCH, NO_EPOCH, -1
    if current > LEADER_EPOCH:
        return UNKNOWN_LEADER_EPOCH, NO_EPOCH, -1
    if partition.leader_epoch != LEADER_EPOCH:
        return 0, NO_EPOCH, -1
    return 0, LEADER_EPOCH, topic.partitions[partition.partition].high_watermark


@handles(ApiKey.OFFSET_FOR_LEADER_EPOCH, versions=range(2, 5))
async def offset_for_leader_epoch(ctx: RequestContext, req: Any) -> Any:
    topics = []
    for topic in req.topics:
        partitions = []
        for partition in topic.partitions:
            code, epoch, end_offset = _end_offset(ctx, topic.topic, partition)
            partitions.append(
                ctx.build(
                    "EpochEndOffset",
                    error_code=code,
                    partition=partition.partition,
                    leader_epoch=epoch,
                    end_offset=end_offset,
                )
            )
        topics.append(ctx.build("OffsetForLeaderTopicResult", topic=topic.topic, partitions=partitions))
    return ctx.build("OffsetForLeaderEpochResponse", throttle_time=0, topics=topics)
