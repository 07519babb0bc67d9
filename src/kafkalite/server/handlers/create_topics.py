"""CreateTopics (API key 19), versions 2-7.

v2 adds throttle_time_ms (and is the oldest served) · v3 is v2 again · v4 allows num_partitions and
replication_factor of -1 (broker defaults) · v5 is the first flexible version and answers with the topic's
partition count, replication factor and configs · v6 is v5 again · v7 answers with the topic id.

A single broker has one replica of everything: any replication factor other than 1 or -1 is refused with
INVALID_REPLICATION_FACTOR, and explicit replica assignments with INVALID_REPLICA_ASSIGNMENT unless they name only
this broker (then their count gives the partitions). validate_only checks and creates nothing.
"""

from __future__ import annotations

from typing import Any

from kafkalite.broker import Topic
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import ZERO_UUID, error_code, error_message

INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_REPLICA_ASSIGNMENT = 39


def _configs(ctx: RequestContext, topic: Topic) -> list[Any]:
    return [
        ctx.build(
            "CreatableTopicConfigs",
            name=entry.name,
            value=entry.value,
            read_only=entry.read_only,
            config_source=entry.source,
            is_sensitive=entry.is_sensitive,
        )
        for entry in topic.config.describe()
    ]


def _result(ctx: RequestContext, name: str, code: int, message: str | None, topic: Topic | None = None) -> Any:
    return ctx.build(
        "CreatableTopicResult",
        name=name,
        topic_id=topic.topic_id if topic is not None else ZERO_UUID,
        error_code=code,
        error_message=message,
        topic_config_error_code=0,
        num_partitions=len(topic.partitions) if topic is not None else -1,
        replication_factor=1 if topic is not None else -1,
        configs=_configs(ctx, topic) if topic is not None and ctx.version >= 5 else None,
    )


async def _create(ctx: RequestContext, t: Any, validate_only: bool) -> Any:
    partitions = t.num_partitions if t.num_partitions != -1 else ctx.broker.config.default_partitions
    if t.assignments:
        if any(list(a.broker_ids) != [ctx.server.node_id] for a in t.assignments) or t.num_partitions != -1:
            return _result(ctx, t.name, INVALID_REPLICA_ASSIGNMENT, "one broker: assign every partition to it")
        partitions = len(t.assignments)
    if t.replication_factor not in (1, -1):
        message = f"replication factor {t.replication_factor} is larger than the 1 broker available"
        return _result(ctx, t.name, INVALID_REPLICATION_FACTOR, message)
    if partitions < 1:
        return _result(ctx, t.name, INVALID_PARTITIONS, f"partitions must be at least 1, got {partitions}")
    configs = {c.name: c.value for c in t.configs if c.value is not None}
    try:
        topic = await ctx.broker.create_topic(t.name, partitions, configs, validate_only=validate_only)
    except Exception as e:
        return _result(ctx, t.name, error_code(e), error_message(e))
    return _result(ctx, t.name, 0, None, topic)


@handles(ApiKey.CREATE_TOPICS, versions=range(2, 8))
async def create_topics(ctx: RequestContext, req: Any) -> Any:
    results = [await _create(ctx, t, req.validate_only) for t in req.topics]
    return ctx.build("CreateTopicsResponse", throttle_time=0, topics=results)
