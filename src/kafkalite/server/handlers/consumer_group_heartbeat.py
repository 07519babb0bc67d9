"""ConsumerGroupHeartbeat (API key 68), versions 0-1: the KIP-848 consumer-group protocol (`group.protocol=consumer`).

v0 is the first version (flexible): a member joins with epoch 0, heartbeats with its epoch, leaves with -1 (-2: a
static member that will come back); the coordinator computes assignments and answers each heartbeat at once with
the member's epoch, the heartbeat interval and, when it changed, its assignment · v1 adds subscribed_topic_regex
(RE2 syntax), and the member id is always made by the client (v0: an empty id on epoch 0 gets one from us).

A group id that names a classic group with members is GROUP_ID_NOT_FOUND; errors carry Kafka's error_message.
Partitions are named by topic id: owned partitions of an id no topic has (the all-zero id included) are ignored, as
they cannot be assigned. The rules are `groups.consumer_coordinator`'s; this handler only translates.
"""

from __future__ import annotations

from typing import Any

from kafkalite import groups  # its names load their module on first use: see `kafkalite.groups`
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import topic_name_by_id


def _owned(ctx: RequestContext, topic_partitions: Any) -> tuple[tuple[Any, tuple[int, ...]], ...] | None:
    if topic_partitions is None:
        return None
    return tuple(
        (tp.topic_id, tuple(tp.partitions))
        for tp in topic_partitions
        if topic_name_by_id(ctx.broker, tp.topic_id) is not None
    )


@handles(ApiKey.CONSUMER_GROUP_HEARTBEAT, versions=range(0, 2))
async def consumer_group_heartbeat(ctx: RequestContext, req: Any) -> Any:
    rebalance_timeout_ms = int(req.rebalance_timeout.total_seconds() * 1000)
    names = req.subscribed_topic_names
    request = groups.HeartbeatRequest(
        group_id=req.group_id,
        member_id=req.member_id,
        member_epoch=req.member_epoch,
        instance_id=req.instance_id,
        rack_id=req.rack_id,
        rebalance_timeout_ms=rebalance_timeout_ms,
        subscribed_topic_names=None if names is None else tuple(names),
        subscribed_topic_regex=getattr(req, "subscribed_topic_regex", None),
        server_assignor=req.server_assignor,
        owned=_owned(ctx, req.topic_partitions),
        client_id=ctx.header.client_id or "",
        client_host=ctx.client_host,
        coordinator_generates_member_id=ctx.version == 0,
    )
    result = await ctx.broker.groups.consumer_heartbeat(request)
    assignment = None
    if result.assignment is not None:
        assignment = ctx.build(
            "Assignment",
            topic_partitions=[
                ctx.build("TopicPartitions", topic_id=topic_id, partitions=sorted(partitions))
                for topic_id, partitions in sorted(result.assignment.items())
            ],
        )
    return ctx.build(
        "ConsumerGroupHeartbeatResponse",
        throttle_time=0,
        error_code=result.error_code,
        error_message=result.error_message,
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval=result.heartbeat_interval_ms,
        assignment=assignment,
    )
