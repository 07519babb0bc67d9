"""DescribeTopicPartitions (API key 75), version 0 (KIP-966; flexible).

Metadata's topic and partition part, paginated. Topics are answered in name order: the named ones, or every topic
when the list is empty. A cursor (topic, partition) starts the answer there: topics named before the cursor's topic
are skipped, and the cursor's topic starts at its partition. At most `response_partition_limit` partitions are
answered (capped by the broker's `max.request.partition.size.limit`, at least 1); when more remain, `next_cursor`
names the first partition left out, else it is null.

Answers, as Kafka's: an unknown named topic gets UNKNOWN_TOPIC_OR_PARTITION with a zero topic id and no partitions;
a cursor whose topic is not among the named topics, or whose partition index is negative, makes every topic of the
answer INVALID_REQUEST. One broker leads every partition and is its only replica and in-sync replica; the leader
epoch is -1 (unknown), as in Metadata.
"""

from __future__ import annotations

from typing import Any

from kafkalite.broker import Topic
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import INT32_MIN, INVALID_REQUEST, UNKNOWN_TOPIC_OR_PARTITION, ZERO_UUID


def _topic(ctx: RequestContext, name: str, code: int, topic: Topic | None, partitions: range) -> Any:
    node = ctx.server.node_id
    return ctx.build(
        "DescribeTopicPartitionsResponseTopic",
        error_code=code,
        name=name,
        topic_id=topic.topic_id if topic is not None else ZERO_UUID,
        is_internal=topic is not None and topic.is_internal,
        partitions=[
            ctx.build(
                "DescribeTopicPartitionsResponsePartition",
                error_code=0,
                partition_index=index,
                leader_id=node,
                leader_epoch=-1,
                replica_nodes=[node],
                isr_nodes=[node],
                eligible_leader_replicas=None,
                last_known_elr=None,
                offline_replicas=[],
            )
            for index in partitions
        ],
        topic_authorized_operations=INT32_MIN,
    )


def _refused(ctx: RequestContext, names: list[str]) -> Any:
    """Kafka's answer to a request it refuses as a whole: every named topic with INVALID_REQUEST (no message field)."""
    topics = [_topic(ctx, name, INVALID_REQUEST, None, range(0)) for name in names]
    return ctx.build("DescribeTopicPartitionsResponse", throttle_time=0, topics=topics, next_cursor=None)


@handles(ApiKey.DESCRIBE_TOPIC_PARTITIONS, versions=range(0, 1))
async def describe_topic_partitions(ctx: RequestContext, req: Any) -> Any:
    requested = [t.name for t in req.topics]
    cursor = req.cursor
    if cursor is not None and (cursor.partition_index < 0 or (requested and cursor.topic_name not in requested)):
        return _refused(ctx, requested)
    names = sorted(set(requested)) if requested else sorted(ctx.broker.topics)
    start_name = cursor.topic_name if cursor is not None else ""
    remaining = max(1, min(req.response_partition_limit, ctx.broker.config.max_request_partition_size_limit))
    topics: list[Any] = []
    next_cursor = None
    for name in (n for n in names if n >= start_name):
        if remaining == 0:
            next_cursor = ctx.build("Cursor", topic_name=name, partition_index=0)
            break
        topic = ctx.broker.topics.get(name)
        if topic is None:
            topics.append(_topic(ctx, name, UNKNOWN_TOPIC_OR_PARTITION, None, range(0)))
            continue
        first = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        count = len(topic.partitions)
        last = min(count, first + remaining)
        topics.append(_topic(ctx, name, 0, topic, range(first, last)))
        remaining -= max(0, last - first)
        if last < count:
            next_cursor = ctx.build("Cursor", topic_name=name, partition_index=last)
            break
    return ctx.build("DescribeTopicPartitionsResponse", throttle_time=0, topics=topics, next_cursor=next_cursor)
