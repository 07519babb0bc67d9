"""ConsumerGroupDescribe (API key 69), versions 0-1: KIP-848 consumer groups, their epochs, members and assignments.

v0 is the first version (flexible): per group its state (Empty, Assigning, Reconciling, Stable), group epoch,
assignment epoch and assignor; per member its epoch, subscription, current and target assignment · v1 adds each
member's member_type (1: a consumer-protocol member; KafkaLite has no classic members in consumer groups).

A group id that names no consumer group is GROUP_ID_NOT_FOUND ("Group X not found.", or "Group X is not a consumer
group." for a classic one), as Kafka answers. Authorized operations are not computed (INT32_MIN, "not provided").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles
from kafkalite.server.handlers._common import INT32_MIN

if TYPE_CHECKING:
    from kafkalite.groups import DescribedConsumerGroup

GROUP_ID_NOT_FOUND: Final = 69
CONSUMER_MEMBER: Final = 1


def _assignment(ctx: RequestContext, assignment: Mapping[Any, frozenset[int]], names: Mapping[Any, str]) -> Any:
    return ctx.build(
        "Assignment",
        topic_partitions=[
            ctx.build("TopicPartitions", topic_id=topic_id, topic_name=names[topic_id], partitions=sorted(parts))
            for topic_id, parts in sorted(assignment.items(), key=lambda item: names[item[0]])
        ],
    )


def _described(ctx: RequestContext, group: DescribedConsumerGroup, names: Mapping[Any, str]) -> Any:
    members = [
        ctx.build(
            "Member",
            member_id=m.member_id,
            instance_id=m.instance_id,
            rack_id=m.rack_id,
            member_epoch=m.member_epoch,
            client_id=m.client_id,
            client_host=m.client_host,
            subscribed_topic_names=list(m.subscribed_topic_names),
            subscribed_topic_regex=m.subscribed_topic_regex,
            assignment=_assignment(ctx, m.assignment, names),
            target_assignment=_assignment(ctx, m.target_assignment, names),
            member_type=CONSUMER_MEMBER,
        )
        for m in group.members
    ]
    return ctx.build(
        "DescribedGroup",
        error_code=0,
        group_id=group.group_id,
        group_state=group.state,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=group.assignor_name,
        members=members,
        authorized_operations=INT32_MIN,
    )


def _not_found(ctx: RequestContext, group_id: str) -> Any:
    classic = ctx.broker.groups.describe(group_id).state != "Dead"
    message = f"Group {group_id} is not a consumer group." if classic else f"Group {group_id} not found."
    return ctx.build(
        "DescribedGroup",
        error_code=GROUP_ID_NOT_FOUND,
        error_message=message,
        group_id=group_id,
        group_state="Dead",
        group_epoch=-1,
        assignment_epoch=-1,
        assignor_name="",
        members=[],
        authorized_operations=INT32_MIN,
    )


@handles(ApiKey.CONSUMER_GROUP_DESCRIBE, versions=range(0, 2))
async def consumer_group_describe(ctx: RequestContext, req: Any) -> Any:
    names = {topic.topic_id: name for name, topic in ctx.broker.topics.items()}
    groups = []
    for group_id in req.group_ids:
        described = ctx.broker.groups.consumer_describe(group_id, names)
        groups.append(_not_found(ctx, group_id) if described is None else _described(ctx, described, names))
    return ctx.build("ConsumerGroupDescribeResponse", throttle_time=0, groups=groups)
