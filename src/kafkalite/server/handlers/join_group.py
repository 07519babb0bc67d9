"""JoinGroup (API key 11), versions 0-9.

v1 adds rebalance_timeout_ms · v2 adds throttle_time_ms · v3 is v2 again · v4 requires a known member id: a new
member first gets MEMBER_ID_REQUIRED with its id and joins again (KIP-394) · v5 adds group_instance_id (static
membership, KIP-345) · v6 is the first flexible version · v7 adds protocol_type to the response · v8 adds reason ·
v9 adds skip_assignment (always false: the leader assigns).

The reply is long-polled: it arrives when the group's rebalance completes (every member joined or the rebalance
timeout passed). The coordinator (`broker.groups`) holds all state; this handler only translates.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles


@handles(ApiKey.JOIN_GROUP, versions=range(0, 10))
async def join_group(ctx: RequestContext, req: Any) -> Any:
    session_timeout_ms = int(req.session_timeout.total_seconds() * 1000)
    rebalance_timeout = getattr(req, "rebalance_timeout", None)
    result = await ctx.broker.groups.join(
        req.group_id,
        req.member_id,
        protocol_type=req.protocol_type,
        protocols=[(p.name, p.metadata) for p in req.protocols],
        session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=session_timeout_ms
        if rebalance_timeout is None
        else int(rebalance_timeout.total_seconds() * 1000),
        client_id=ctx.header.client_id or "",
        client_host=ctx.client_host,
        group_instance_id=getattr(req, "group_instance_id", None),
        require_known_member_id=ctx.version >= 4,
    )
    members = [
        ctx.build(
            "JoinGroupResponseMember", member_id=m.member_id, group_instance_id=m.group_instance_id, metadata=m.metadata
        )
        for m in result.members
    ]
    return ctx.build(
        "JoinGroupResponse",
        throttle_time=0,
        error_code=result.error_code,
        generation_id=result.generation_id,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name if ctx.version >= 7 else result.protocol_name or "",
        leader=result.leader_id,
        skip_assignment=result.skip_assignment,
        member_id=result.member_id,
        members=members,
    )
