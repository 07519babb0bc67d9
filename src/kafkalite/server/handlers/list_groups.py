"""ListGroups (API key 16), versions 0-5.

v1 adds throttle_time_ms · v2 is v1 again · v3 is the first flexible version · v4 adds states_filter and
group_state · v5 adds types_filter and group_type.

Both group types are listed: classic groups (group_type "classic", the classic states) and KIP-848 consumer groups
(group_type "consumer", protocol type "consumer", states Empty, Assigning, Reconciling, Stable); the types filter
keeps the types it names (case-insensitive). Groups known only by their committed offsets (after a restart) are
listed as Empty classic "consumer" groups by the GroupService.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles


@handles(ApiKey.LIST_GROUPS, versions=range(0, 6))
async def list_groups(ctx: RequestContext, req: Any) -> Any:
    types = {t.lower() for t in getattr(req, "types_filter", ())}
    listings = [
        g
        for g in ctx.broker.groups.list_groups(getattr(req, "states_filter", ()) or None)
        if not types or g.group_type in types
    ]
    groups = [
        ctx.build(
            "ListedGroup",
            group_id=g.group_id,
            protocol_type=g.protocol_type,
            group_state=g.state,
            group_type=g.group_type,
        )
        for g in listings
    ]
    return ctx.build("ListGroupsResponse", throttle_time=0, error_code=0, groups=groups)
