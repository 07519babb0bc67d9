"""DeleteGroups (API key 42), versions 0-2.

v1 is v0 again · v2 is the first flexible version.

Only an Empty group can be deleted (NON_EMPTY_GROUP otherwise); its committed offsets go with it. An unknown group
gets GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

from typing import Any, Final

from kafkalite.server.dispatch import RequestContext, handles

DELETE_GROUPS: Final = 42  # not named in protocol.wire.ApiKey


@handles(DELETE_GROUPS, versions=range(0, 3))
async def delete_groups(ctx: RequestContext, req: Any) -> Any:
    results = [
        ctx.build("DeletableGroupResult", group_id=group_id, error_code=await ctx.broker.groups.delete_group(group_id))
        for group_id in req.groups_names
    ]
    return ctx.build("DeleteGroupsResponse", throttle_time=0, results=results)
