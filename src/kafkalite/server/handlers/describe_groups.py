"""DescribeGroups (API key 15), versions 0-6.

v1 adds throttle_time_ms · v2 is v1 again · v3 adds authorized operations (not computed: answered as "not
provided", INT32_MIN) · v4 adds each member's group_instance_id · v5 is the first flexible version · v6 adds
error_message and answers GROUP_ID_NOT_FOUND for a group that does not exist (KIP-1043); earlier versions describe
it as state "Dead" with no error.

A KIP-848 consumer group is not described here: v6 answers GROUP_ID_NOT_FOUND "Group X is not a classic group.",
earlier versions state "Dead" with no error, as Kafka 4 does (ConsumerGroupDescribe describes it).

Member metadata and assignments are filled in only while the group is Stable, as Kafka does. A group known only by
its committed offsets (after a restart) is described as an Empty "consumer" group by the GroupService.
"""

from __future__ import annotations

from typing import Any, Final

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import INT32_MIN

GROUP_ID_NOT_FOUND: Final = 69
DEAD: Final = "Dead"


def _group(ctx: RequestContext, group_id: str) -> Any:
    if ctx.broker.groups.is_consumer_group(group_id):
        return _not_classic(ctx, group_id)
    described = ctx.broker.groups.describe(group_id)
    code, message = described.error_code, None
    if code == 0 and described.state == DEAD and ctx.version >= 6:
        code, message = GROUP_ID_NOT_FOUND, f"Group {group_id} not found."
    members = [
        ctx.build(
            "DescribedGroupMember",
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            member_metadata=m.metadata,
            member_assignment=m.assignment,
        )
        for m in described.members
    ]
    return ctx.build(
        "DescribedGroup",
        error_code=code,
        error_message=message,
        group_id=group_id,
        group_state=described.state,
        protocol_type=described.protocol_type,
        protocol_data=described.protocol_name,
        members=members,
        authorized_operations=INT32_MIN,
    )


def _not_classic(ctx: RequestContext, group_id: str) -> Any:
    code, message = (GROUP_ID_NOT_FOUND, f"Group {group_id} is not a classic group.") if ctx.version >= 6 else (0, None)
    return ctx.build(
        "DescribedGroup",
        error_code=code,
        error_message=message,
        group_id=group_id,
        group_state=DEAD,
        protocol_type="",
        protocol_data="",
        members=[],
        authorized_operations=INT32_MIN,
    )


@handles(ApiKey.DESCRIBE_GROUPS, versions=range(0, 7))
async def describe_groups(ctx: RequestContext, req: Any) -> Any:
    return ctx.build("DescribeGroupsResponse", throttle_time=0, groups=[_group(ctx, g) for g in req.groups])
