"""LeaveGroup (API key 13), versions 0-5.

v1 adds throttle_time_ms · v2 is v1 again · v3 leaves many members at once, each by member id or group_instance_id,
with a result per member (KIP-345) · v4 is the first flexible version · v5 adds a reason per member (logged by
nobody here). v0-v2 name one member and get its error at the top level.
"""

from __future__ import annotations

from typing import Any

from kafkalite import groups  # its names load their module on first use: see `kafkalite.groups`
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles


@handles(ApiKey.LEAVE_GROUP, versions=range(0, 6))
async def leave_group(ctx: RequestContext, req: Any) -> Any:
    if ctx.version >= 3:
        leaving = [groups.LeavingMember(m.member_id, m.group_instance_id) for m in req.members]
    else:
        leaving = [groups.LeavingMember(req.member_id)]
    result = ctx.broker.groups.leave(req.group_id, leaving)
    if ctx.version < 3:
        code = result.error_code or (result.members[0].error_code if result.members else 0)
        return ctx.build("LeaveGroupResponse", throttle_time=0, error_code=code)
    members = [
        ctx.build(
            "MemberResponse", member_id=m.member_id, group_instance_id=m.group_instance_id, error_code=m.error_code
        )
        for m in result.members
    ]
    return ctx.build("LeaveGroupResponse", throttle_time=0, error_code=result.error_code, members=members)
