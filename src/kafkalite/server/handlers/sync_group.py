"""SyncGroup (API key 14), versions 0-5.

v1 adds throttle_time_ms · v2 is v1 again · v3 adds group_instance_id · v4 is the first flexible version · v5 adds
protocol_type and protocol_name, checked against the group's.

The leader sends every member's assignment; the others wait (long poll) until it has, then each gets its own.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles


@handles(ApiKey.SYNC_GROUP, versions=range(0, 6))
async def sync_group(ctx: RequestContext, req: Any) -> Any:
    result = await ctx.broker.groups.sync(
        req.group_id,
        req.member_id,
        req.generation_id,
        assignments={a.member_id: a.assignment for a in req.assignments},
        group_instance_id=getattr(req, "group_instance_id", None),
        protocol_type=getattr(req, "protocol_type", None),
        protocol_name=getattr(req, "protocol_name", None),
    )
    return ctx.build(
        "SyncGroupResponse",
        throttle_time=0,
        error_code=result.error_code,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name,
        assignment=result.assignment,
    )
