"""Heartbeat (API key 12), versions 0-4.

v1 adds throttle_time_ms · v2 is v1 again · v3 adds group_instance_id (static membership) · v4 is the first flexible
version. A member of a stale generation gets ILLEGAL_GENERATION; during a rebalance, REBALANCE_IN_PROGRESS tells it
to rejoin.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles


@handles(ApiKey.HEARTBEAT, versions=range(0, 5))
async def heartbeat(ctx: RequestContext, req: Any) -> Any:
    result = ctx.broker.groups.heartbeat(
        req.group_id, req.member_id, req.generation_id, group_instance_id=getattr(req, "group_instance_id", None)
    )
    return ctx.build("HeartbeatResponse", throttle_time=0, error_code=result.error_code)
