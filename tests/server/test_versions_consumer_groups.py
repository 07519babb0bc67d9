"""Every served version of the KIP-848 APIs over raw bytes: ConsumerGroupHeartbeat (68), ConsumerGroupDescribe (69),
and how the classic group APIs answer for a consumer group (ListGroups, DescribeGroups, JoinGroup, OffsetCommit,
OffsetFetch). Each request is encoded by kio at its version and each answer must decode with every byte consumed."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kafkalite.broker import Broker
from kafkalite.groups import decode_assignment
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import supported_ranges

pytestmark = pytest.mark.timeout(60)

RANGES = {api_key: list(range(lo, hi + 1)) for api_key, lo, hi in supported_ranges()}
HEARTBEAT, DESCRIBE = ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE
INVALID_REQUEST, GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID = 42, 69, 25
FENCED_MEMBER_EPOCH, STALE_MEMBER_EPOCH, INCONSISTENT_GROUP_PROTOCOL = 110, 113, 23
INVALID_REGULAR_EXPRESSION = 128


def test_both_apis_are_advertised_with_the_group_version_feature() -> None:
    assert RANGES[HEARTBEAT] == [0, 1]
    assert RANGES[DESCRIBE] == [0, 1]
    from kafkalite.server.handlers.api_versions import features

    assert features()["group.version"] == (1, 1)  # (lowest supported, finalized)


async def join(raw: Any, version: int, group: str, member_id: str, **fields: Any) -> Any:
    request = {
        "group_id": group,
        "member_id": member_id,
        "member_epoch": 0,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout": 30000,
        "subscribed_topic_names": ["cg"],
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": [],
        **fields,
    }
    return await raw.request(HEARTBEAT, version, **request)


def owned(raw: Any, version: int, topic_id: uuid.UUID, partitions: list[int]) -> list[Any]:
    return [raw.nested(HEARTBEAT, version, "TopicPartitions", topic_id=topic_id, partitions=partitions)]


@pytest.mark.parametrize("version", RANGES[HEARTBEAT])
async def test_heartbeat_member_life(raw: Any, broker: Broker, version: int) -> None:
    topic = await broker.create_topic("cg", 3)
    group = f"cg-{version}"
    member_id = "" if version == 0 else f"member-{version}"
    joined = await join(raw, version, group, member_id)
    assert (joined.error_code, joined.member_epoch) == (0, 1)
    assert joined.member_id
    assert joined.heartbeat_interval.total_seconds() == 5
    assert [(tp.topic_id, list(tp.partitions)) for tp in joined.assignment.topic_partitions] == [
        (topic.topic_id, [0, 1, 2])
    ]
    member_id = joined.member_id

    beat = await raw.request(
        HEARTBEAT,
        version,
        group_id=group,
        member_id=member_id,
        member_epoch=1,
        rebalance_timeout=-1,
        topic_partitions=owned(raw, version, topic.topic_id, [0, 1, 2]),
    )
    assert (beat.error_code, beat.member_epoch, beat.assignment) == (0, 1, None)
    ahead = await raw.request(
        HEARTBEAT, version, group_id=group, member_id=member_id, member_epoch=5, topic_partitions=None
    )
    assert ahead.error_code == FENCED_MEMBER_EPOCH
    assert ahead.error_message

    for describe_version in RANGES[DESCRIBE]:
        described = await raw.request(
            DESCRIBE, describe_version, group_ids=[group, "nope"], include_authorized_operations=False
        )
        mine, missing = described.groups
        assert (mine.error_code, mine.group_state, mine.group_epoch, mine.assignment_epoch) == (0, "Stable", 1, 1)
        assert mine.assignor_name == "uniform"
        (member,) = mine.members
        assert (member.member_id, member.member_epoch, list(member.subscribed_topic_names)) == (member_id, 1, ["cg"])
        assert [(tp.topic_name, list(tp.partitions)) for tp in member.assignment.topic_partitions] == [
            ("cg", [0, 1, 2])
        ]
        assert member.target_assignment == member.assignment
        if describe_version >= 1:
            assert member.member_type == 1
        assert (missing.error_code, missing.error_message) == (GROUP_ID_NOT_FOUND, "Group nope not found.")

    left = await raw.request(
        HEARTBEAT, version, group_id=group, member_id=member_id, member_epoch=-1, topic_partitions=None
    )
    assert (left.error_code, left.member_epoch) == (0, -1)


@pytest.mark.parametrize("version", RANGES[HEARTBEAT])
async def test_heartbeat_refusals(raw: Any, broker: Broker, version: int) -> None:
    await broker.create_topic("cg", 1)
    unknown = await raw.request(HEARTBEAT, version, group_id="x", member_id="m", member_epoch=3, topic_partitions=None)
    assert unknown.error_code == UNKNOWN_MEMBER_ID
    no_subscription = await join(raw, version, "x", "m", subscribed_topic_names=None)
    assert no_subscription.error_code == INVALID_REQUEST
    null_group = await join(raw, version, "", "m")
    assert null_group.error_code == INVALID_REQUEST
    if version >= 1:
        bad = await join(raw, version, "x", "m", subscribed_topic_names=None, subscribed_topic_regex="cg(")
        assert bad.error_code == INVALID_REGULAR_EXPRESSION
        assert "cg(" in bad.error_message
        assert (await join(raw, version, "x", "")).error_code == INVALID_REQUEST, "v1: the client makes the id"
    # owned partitions of the all-zero topic id and of unknown ids are ignored, never a traceback
    zero = owned(raw, version, uuid.UUID(int=0), [0]) + owned(raw, version, uuid.uuid4(), [7])
    joined = await join(raw, version, "x", "m" if version else "")
    beat = await raw.request(
        HEARTBEAT,
        version,
        group_id="x",
        member_id=joined.member_id,
        member_epoch=joined.member_epoch,
        topic_partitions=zero,
    )
    assert beat.error_code == 0


async def test_a_consumer_group_among_the_classic_apis(raw: Any, broker: Broker) -> None:
    topic = await broker.create_topic("cg", 2)
    joined = await join(raw, 1, "mixed", "m1")
    assert joined.error_code == 0

    listed = await raw.request(16, 5, states_filter=[], types_filter=["consumer"])
    assert [(g.group_id, g.group_type, g.protocol_type, g.group_state) for g in listed.groups] == [
        ("mixed", "consumer", "consumer", "Stable")
    ]
    assert (await raw.request(16, 5, states_filter=[], types_filter=["classic"])).groups == ()

    described = await raw.request(15, 6, groups=["mixed"], include_authorized_operations=False)
    assert (described.groups[0].error_code, described.groups[0].error_message) == (
        GROUP_ID_NOT_FOUND,
        "Group mixed is not a classic group.",
    )
    assert (await raw.request(15, 5, groups=["mixed"], include_authorized_operations=False)).groups[
        0
    ].group_state == "Dead"

    # the console and /metrics read a consumer group through the classic shape, assignments as ConsumerProtocol bytes
    inside = broker.groups.describe("mixed")
    assert (inside.state, inside.protocol_type, inside.protocol_name) == ("Stable", "consumer", "uniform")
    (member,) = inside.members
    assert decode_assignment(member.assignment).partitions == (("cg", 0), ("cg", 1))
    assert broker.groups.rebalances["mixed"] == 1

    protocol = raw.nested(11, 9, "JoinGroupRequestProtocol", name="range", metadata=b"")
    classic = await raw.request(
        11,
        9,
        group_id="mixed",
        session_timeout=10000,
        rebalance_timeout=10000,
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[protocol],
        reason=None,
    )
    assert classic.error_code == INCONSISTENT_GROUP_PROTOCOL

    def commit_request(epoch: int) -> dict[str, Any]:
        partition = raw.nested(
            8,
            9,
            "OffsetCommitRequestPartition",
            partition_index=0,
            committed_offset=5,
            committed_leader_epoch=-1,
            committed_metadata="",
        )
        return {
            "group_id": "mixed",
            "generation_id_or_member_epoch": epoch,
            "member_id": "m1",
            "group_instance_id": None,
            "topics": [raw.nested(8, 9, "OffsetCommitRequestTopic", name="cg", partitions=[partition])],
        }

    stale = await raw.request(8, 9, **commit_request(7))
    assert stale.topics[0].partitions[0].error_code == STALE_MEMBER_EPOCH
    stored = await raw.request(8, 9, **commit_request(joined.member_epoch))
    assert stored.topics[0].partitions[0].error_code == 0

    def fetch_group(epoch: int) -> Any:
        return raw.nested(
            9,
            9,
            "OffsetFetchRequestGroup",
            group_id="mixed",
            member_id="m1",
            member_epoch=epoch,
            topics=[raw.nested(9, 9, "OffsetFetchRequestTopics", name="cg", partition_indexes=[0])],
        )

    fetched = await raw.request(9, 9, groups=[fetch_group(joined.member_epoch)], require_stable=False)
    assert fetched.groups[0].topics[0].partitions[0].committed_offset == 5
    stale_fetch = await raw.request(9, 9, groups=[fetch_group(9)], require_stable=False)
    assert stale_fetch.groups[0].error_code == STALE_MEMBER_EPOCH
    assert topic.topic_id is not None


async def test_a_classic_group_with_members_is_not_a_consumer_group(raw: Any, broker: Broker) -> None:
    await broker.create_topic("cg", 1)
    protocol = raw.nested(11, 3, "JoinGroupRequestProtocol", name="range", metadata=b"")
    classic = await raw.request(
        11,
        3,
        group_id="old",
        session_timeout=10000,
        rebalance_timeout=10000,
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[protocol],
    )
    assert classic.error_code == 0
    refused = await join(raw, 1, "old", "m1")
    assert (refused.error_code, refused.error_message) == (GROUP_ID_NOT_FOUND, "Group old is not a consumer group.")
    described = await raw.request(DESCRIBE, 1, group_ids=["old"], include_authorized_operations=False)
    assert described.groups[0].error_message == "Group old is not a consumer group."


async def test_offset_delete_and_delete_groups_of_a_consumer_group(raw: Any, broker: Broker) -> None:
    await broker.create_topic("cg", 1)
    await broker.create_topic("elsewhere", 1)
    joined = await join(raw, 1, "del", "m1")
    await broker.groups.commit_offsets(
        "del", "m1", joined.member_epoch, [("cg", 0, 3, "", -1), ("elsewhere", 0, 4, "", -1)]
    )

    def topic(name: str) -> Any:
        partition = raw.nested(47, 0, "OffsetDeleteRequestPartition", partition_index=0)
        return raw.nested(47, 0, "OffsetDeleteRequestTopic", name=name, partitions=[partition])

    deleted = await raw.request(47, 0, group_id="del", topics=[topic("cg"), topic("elsewhere")])
    errors = {t.name: t.partitions[0].error_code for t in deleted.topics}
    assert errors == {"cg": 86, "elsewhere": 0}, "GROUP_SUBSCRIBED_TO_TOPIC for what a live member subscribes to"
    assert broker.offsets.fetch("del", "elsewhere", 0) is None

    busy = await raw.request(42, 2, groups_names=["del"])
    assert busy.results[0].error_code == 68  # NON_EMPTY_GROUP
    await raw.request(HEARTBEAT, 1, group_id="del", member_id="m1", member_epoch=-1, topic_partitions=None)
    gone = await raw.request(42, 2, groups_names=["del"])
    assert gone.results[0].error_code == 0
    assert broker.offsets.fetch("del", "cg", 0) is None
    assert not broker.groups.is_consumer_group("del")


async def test_a_consumer_group_left_without_commits_is_forgotten(raw: Any, broker: Broker) -> None:
    await broker.create_topic("cg", 1)
    await join(raw, 1, "passing", "m1")
    assert broker.groups.is_consumer_group("passing")
    await raw.request(HEARTBEAT, 1, group_id="passing", member_id="m1", member_epoch=-1, topic_partitions=None)
    assert not broker.groups.is_consumer_group("passing")
    assert "passing" not in {g.group_id for g in broker.groups.list_groups()}
