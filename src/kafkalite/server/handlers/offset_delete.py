"""OffsetDelete (API key 47), version 0.

Deletes a group's committed offsets for some partitions, by Kafka's rules (`GroupService.delete_offsets`): an empty
group id is INVALID_GROUP_ID and an unknown group GROUP_ID_NOT_FOUND (at the top); a group with members that is not
a "consumer" group is NON_EMPTY_GROUP; a consumer group keeps the offsets of the topics it subscribes to
(GROUP_SUBSCRIBED_TO_TOPIC per partition) and loses the others. Partitions of unknown topics, or past a topic's
partition count, get UNKNOWN_TOPIC_OR_PARTITION and reach no group, and are answered whatever the group's error,
as Kafka answers them.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import UNKNOWN_TOPIC_OR_PARTITION

INVALID_GROUP_ID = 24


@handles(ApiKey.OFFSET_DELETE, versions=range(0, 1))
async def offset_delete(ctx: RequestContext, req: Any) -> Any:
    if not req.group_id:
        return ctx.build("OffsetDeleteResponse", error_code=INVALID_GROUP_ID, throttle_time=0, topics=[])
    errors: dict[tuple[str, int], int] = {}
    known: list[tuple[str, int]] = []
    for topic in req.topics:
        count = len(ctx.broker.topics[topic.name].partitions) if topic.name in ctx.broker.topics else 0
        for partition in topic.partitions:
            tp = (topic.name, partition.partition_index)
            if 0 <= tp[1] < count:
                known.append(tp)
            else:
                errors[tp] = UNKNOWN_TOPIC_OR_PARTITION
    group_error, group_errors = await ctx.broker.groups.delete_offsets(req.group_id, known)
    errors.update(group_errors)
    by_topic: dict[str, list[Any]] = {}
    for (name, index), code in errors.items():
        by_topic.setdefault(name, []).append(
            ctx.build("OffsetDeleteResponsePartition", partition_index=index, error_code=code)
        )
    topics = [ctx.build("OffsetDeleteResponseTopic", name=name, partitions=parts) for name, parts in by_topic.items()]
    return ctx.build("OffsetDeleteResponse", error_code=group_error, throttle_time=0, topics=topics)
