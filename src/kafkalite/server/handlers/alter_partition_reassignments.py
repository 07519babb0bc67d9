"""AlterPartitionReassignments (API key 45), versions 0-1 (flexible).

v1 adds allow_replication_factor_change (and echoes it in the response).

With one broker a partition's only possible replica set is [this broker], which it already has. As Kafka's
controller answers, per partition: an unknown topic or partition gets UNKNOWN_TOPIC_OR_PARTITION; a null replica
list (cancel) gets NO_REASSIGNMENT_IN_PROGRESS, since none ever is; an empty list, a repeated broker or a broker that
is not registered gets INVALID_REPLICA_ASSIGNMENT; what passes is [this broker], the current assignment: NONE, and
the reassignment is complete at once (the replication factor never changes, whatever
allow_replication_factor_change says). Nothing is ever moved.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import UNKNOWN_TOPIC_OR_PARTITION

INVALID_REPLICA_ASSIGNMENT = 39
NO_REASSIGNMENT_IN_PROGRESS = 85


def _outcome(
    ctx: RequestContext, topic_name: str, index: int, replicas: Sequence[int] | None
) -> tuple[int, str | None]:
    topic = ctx.broker.topics.get(topic_name)
    if topic is None or not 0 <= index < len(topic.partitions):
        return UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic_name}:{index}"
    node = ctx.server.node_id
    if replicas is None:
        return (
            NO_REASSIGNMENT_IN_PROGRESS,
            f"No reassignment of {topic_name}-{index} is in progress",
        )
    if not replicas:
        return INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."
    if len(set(replicas)) != len(replicas):
        return INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes duplicate replicas: {replicas}"
    unknown = [r for r in replicas if r != node]
    if unknown:
        return INVALID_REPLICA_ASSIGNMENT, (
            f"The manual partition assignment includes broker {unknown[0]}, but no such broker is registered."
        )
    return 0, None


@handles(ApiKey.ALTER_PARTITION_REASSIGNMENTS, versions=range(0, 2))
async def alter_partition_reassignments(ctx: RequestContext, req: Any) -> Any:
    allow_rf_change = getattr(req, "allow_replication_factor_change", True)
    responses = []
    for topic in req.topics:
        partitions = []
        for partition in topic.partitions:
            code, message = _outcome(ctx, topic.name, partition.partition_index, partition.replicas)
            partitions.append(
                ctx.build(
                    "ReassignablePartitionResponse",
                    partition_index=partition.partition_index,
                    error_code=code,
                    error_message=message,
                )
            )
        responses.append(ctx.build("ReassignableTopicResponse", name=topic.name, partitions=partitions))
    return ctx.build(
        "AlterPartitionReassignmentsResponse",
        throttle_time=0,
        allow_replication_factor_change=allow_rf_change,
        error_code=0,
        error_message=None,
        responses=responses,
    )
