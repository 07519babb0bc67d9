"""Every served version of the group APIs over raw bytes: one member's whole life, commits, fetches, listings."""

from __future__ import annotations

from typing import Any

import pytest

from kafkalite.broker import Broker
from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import supported_ranges

pytestmark = pytest.mark.timeout(60)

RANGES = {api_key: list(range(lo, hi + 1)) for api_key, lo, hi in supported_ranges()}
MEMBER_ID_REQUIRED = 79


@pytest.mark.parametrize("version", RANGES[ApiKey.FIND_COORDINATOR])
async def test_find_coordinator(raw: Any, broker: Broker, version: int) -> None:
    response = await raw.request(10, version, key="g", key_type=0, coordinator_keys=["g"])
    answer = response.coordinators[0] if version >= 4 else response
    assert (answer.error_code, answer.node_id) == (0, broker.node_id)


@pytest.mark.parametrize("version", RANGES[ApiKey.JOIN_GROUP])
async def test_member_life(raw: Any, version: int) -> None:
    """JoinGroup at every version, with SyncGroup, Heartbeat and LeaveGroup at the nearest version they serve."""
    group = f"life-{version}"
    protocol = raw.nested(11, version, "JoinGroupRequestProtocol", name="range", metadata=b"\x00\x01")
    join = {
        "group_id": group,
        "session_timeout": 10000,
        "rebalance_timeout": 10000,
        "member_id": "",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [protocol],
        "reason": None,
    }
    joined = await raw.request(11, version, **join)
    if joined.error_code == MEMBER_ID_REQUIRED:
        joined = await raw.request(11, version, **{**join, "member_id": joined.member_id})
    assert joined.error_code == 0
    assert joined.leader == joined.member_id
    member, generation = joined.member_id, joined.generation_id

    sync_version = min(version, RANGES[ApiKey.SYNC_GROUP][-1])
    assignment = raw.nested(14, sync_version, "SyncGroupRequestAssignment", member_id=member, assignment=b"\x01\x02")
    synced = await raw.request(
        14,
        sync_version,
        group_id=group,
        generation_id=generation,
        member_id=member,
        group_instance_id=None,
        protocol_type="consumer",
        protocol_name="range",
        assignments=[assignment],
    )
    assert (synced.error_code, synced.assignment) == (0, b"\x01\x02")

    heartbeat_version = min(version, RANGES[ApiKey.HEARTBEAT][-1])
    beat = await raw.request(
        12, heartbeat_version, group_id=group, generation_id=generation, member_id=member, group_instance_id=None
    )
    assert beat.error_code == 0

    leave_version = min(version, RANGES[ApiKey.LEAVE_GROUP][-1])
    identity = raw.nested(13, leave_version, "MemberIdentity", member_id=member, group_instance_id=None, reason=None)
    left = await raw.request(13, leave_version, group_id=group, member_id=member, members=[identity])
    assert left.error_code == 0


@pytest.mark.parametrize("version", RANGES[ApiKey.OFFSET_COMMIT])
async def test_standalone_offset_commit_then_fetch(raw: Any, broker: Broker, version: int) -> None:
    topic = await broker.create_topic("oc", 2)
    group = f"oc-{version}"
    partitions = [
        raw.nested(
            8,
            version,
            "OffsetCommitRequestPartition",
            partition_index=i,
            committed_offset=10 + i,
            committed_leader_epoch=-1,
            committed_metadata="m",
            commit_timestamp=-1,
        )
        for i in (0, 1, 7)
    ]
    topics = [
        raw.nested(8, version, "OffsetCommitRequestTopic", name="oc", topic_id=topic.topic_id, partitions=partitions)
    ]
    committed = await raw.request(
        8,
        version,
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        retention_time=-1,
        topics=topics,
    )
    assert [p.error_code for p in committed.topics[0].partitions] == [0, 0, 3]
    assert broker.offsets.fetch(group, "oc", 1).offset == 11


@pytest.mark.parametrize("version", RANGES[ApiKey.OFFSET_FETCH])
async def test_offset_fetch(raw: Any, broker: Broker, version: int) -> None:
    topic = await broker.create_topic("of", 2)
    await broker.groups.commit_offsets("g", "", -1, [("of", 0, 5, "meta", -1)])
    suffix = "s" if version >= 8 else ""
    topics = [
        raw.nested(
            9, version, f"OffsetFetchRequestTopic{suffix}", name="of", topic_id=topic.topic_id, partition_indexes=[0, 1]
        )
    ]
    groups = [
        raw.nested(9, version, "OffsetFetchRequestGroup", group_id="g", member_id=None, member_epoch=-1, topics=topics)
    ]
    response = await raw.request(9, version, group_id="g", topics=topics, groups=groups, require_stable=False)
    answer = response.groups[0].topics if version >= 8 else response.topics
    assert [(p.committed_offset, p.metadata) for p in answer[0].partitions] == [(5, "meta"), (-1, "")]


@pytest.mark.parametrize("version", RANGES[ApiKey.LIST_GROUPS])
async def test_list_groups(raw: Any, broker: Broker, version: int) -> None:
    await broker.groups.commit_offsets("listed", "", -1, [])
    response = await raw.request(16, version, states_filter=[], types_filter=[])
    assert "listed" in {g.group_id for g in response.groups}


@pytest.mark.parametrize("version", RANGES[ApiKey.DESCRIBE_GROUPS])
async def test_describe_groups(raw: Any, version: int) -> None:
    response = await raw.request(15, version, groups=["nobody"], include_authorized_operations=False)
    assert [(g.group_id, g.group_state, g.members) for g in response.groups] == [("nobody", "Dead", ())]
