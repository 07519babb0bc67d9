"""ListGroups (API key 16), versions 0-5.

v1 adds throttle_time_ms · v2 is v1 again · v3 is the first flexible version · v4 adds states_filter and
group_state · v5 adds types_filter and group_type.

Every group here is a classic group (group_type "classic"); a types filter without "classic" lists nothing. Groups
known only by their committed offsets (after a restart) are listed as Empty "consumer" groups by the GroupService.
"""

from __future__ import annotations

from typing import Any, Final

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles

CLASSIC: Final = "classic"


@handles(ApiKey.LIST_GROUPS, versions=range(0, 6))
async def list_groups(ctx: RequestContext, req: Any) -> Any:
    types = getattr(req, "types_filter", ())
    if types and CLASSIC not in {t.lower() for t in types}:
        listings = []
    else:
        listings = ctx.broker.groups.list_groups(getattr(req, "states_filter", ()) or None)
    groups = [
        ctx.build(
            "ListedGroup",
            group_id=g.group_id,
            protocol_type=g.protocol_type,
            group_state=g.state,
            group_type=CLASSIC,
        )
        for g in listings
    ]
    return ctx.build("ListGroupsResponse", throttle_time=0, error_code=0, groups=groups)
