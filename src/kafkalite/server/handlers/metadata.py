"""Metadata (API key 3), versions 0-13.

v1 adds is_internal, controller_id, rack; a null topic list means "all topics" (v0: an empty list did) · v2 adds
cluster_id · v3 adds throttle_time_ms · v4 adds allow_auto_topic_creation (earlier versions always auto-create) ·
v5 adds offline_replicas · v7 adds leader_epoch · v8 adds authorized operations · v9 is the first flexible version ·
v10 adds topic ids · v11 drops cluster authorized operations · v12 allows lookups by topic id alone (name null) ·
v13 adds a top-level error_code. A null name before v12 is INVALID_REQUEST, as Kafka answers it.

One broker leads every partition. leader_epoch is -1 (unknown), so librdkafka skips OffsetForLeaderEpoch. Unknown
topics are created when both the broker (`auto_create_topics`) and the request allow it.
"""

from __future__ import annotations

from typing import Any

from kafkalite.broker import Topic
from kafkalite.errors import KafkaLiteError
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import (
    INT32_MIN,
    INVALID_REQUEST,
    UNKNOWN_TOPIC_ID,
    ZERO_UUID,
    error_code,
    topic_name_by_id,
)

# (version, node) -> the entries of partitions 0..n-1 for the largest n served so far
_partition_entries: dict[tuple[int, int], tuple[Any, ...]] = {}


def _partitions(ctx: RequestContext, count: int) -> tuple[Any, ...]:
    """The answer's partitions 0..count-1, all led by this broker. An entry depends on nothing but the version, the
    node and its index, and kio's entities are immutable, so one growing tuple per (version, node) serves every
    topic: a topic of `count` partitions gets its first `count`, and an all-topics Metadata answer builds no kio
    object per partition per request. What stays in memory is one entry per partition index (up to the largest topic
    served) and version, with the replica tuples shared."""
    node = ctx.server.node_id
    key = (ctx.version, node)
    entries = _partition_entries.get(key, ())
    if len(entries) < count:
        replicas = (node,)
        entries += tuple(
            ctx.build(
                "MetadataResponsePartition",
                error_code=0,
                partition_index=index,
                leader_id=node,
                leader_epoch=-1,
                replica_nodes=replicas,
                isr_nodes=replicas,
                offline_replicas=(),
            )
            for index in range(len(entries), count)
        )
        _partition_entries[key] = entries
    return entries if len(entries) == count else entries[:count]


def _topic(ctx: RequestContext, topic: Topic) -> Any:
    partitions = _partitions(ctx, len(topic.partitions))
    return _topic_entry(ctx, 0, topic.name, topic.topic_id, topic.is_internal, partitions)


def _topic_entry(
    ctx: RequestContext, code: int, name: str | None, topic_id: Any, internal: bool = False, partitions: Any = ()
) -> Any:
    return ctx.build(
        "MetadataResponseTopic",
        error_code=code,
        name=name,
        topic_id=topic_id,
        is_internal=internal,
        partitions=partitions,
        topic_authorized_operations=INT32_MIN,
    )


async def _requested_topic(ctx: RequestContext, name: str | None, topic_id: Any, auto_create: bool) -> Any:
    if name is None:
        if ctx.version < 12:  # v10-11 carry topic ids but may not look a topic up by one (the answer needs a name)
            return _topic_entry(ctx, INVALID_REQUEST, "", ZERO_UUID)
        found = topic_name_by_id(ctx.broker, topic_id)
        if found is None:
            return _topic_entry(ctx, UNKNOWN_TOPIC_ID, None, topic_id or ZERO_UUID)
        return _topic(ctx, ctx.broker.topic(found))
    try:
        topic = await ctx.broker.ensure_topic(name) if auto_create else ctx.broker.topic(name)
    except KafkaLiteError as e:
        return _topic_entry(ctx, error_code(e), name, ZERO_UUID)
    return _topic(ctx, topic)


@handles(ApiKey.METADATA, versions=range(0, 14))
async def metadata(ctx: RequestContext, req: Any) -> Any:
    everything = req.topics is None or (ctx.version == 0 and not req.topics)
    if everything:
        topics = [_topic(ctx, t) for t in list(ctx.broker.topics.values())]
    else:
        auto_create = getattr(req, "allow_auto_topic_creation", True)
        # A topic named twice is answered once, as Kafka answers (it reads the list as a set): otherwise one small
        # request naming a wide topic many times would cost the broker its partitions times the repeats.
        requested = dict.fromkeys((t.name, getattr(t, "topic_id", None)) for t in req.topics)
        topics = [await _requested_topic(ctx, name, topic_id, auto_create) for name, topic_id in requested]
    broker = ctx.build(
        "MetadataResponseBroker", node_id=ctx.server.node_id, host=ctx.server.host, port=ctx.server.port, rack=None
    )
    return ctx.build(
        "MetadataResponse",
        throttle_time=0,
        brokers=[broker],
        cluster_id=ctx.broker.cluster_id,
        controller_id=ctx.server.node_id,
        topics=topics,
        cluster_authorized_operations=INT32_MIN,
        error_code=0,
    )
