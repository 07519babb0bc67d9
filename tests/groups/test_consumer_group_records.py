"""KIP-848 consumer groups as `__consumer_offsets` records (Kafka's record types 3 to 8): a group turned into records
and rebuilt from them is the same group, a record is laid out as Kafka's schema says, and a coordinator given the
rebuilt group back goes on where the first one was, mid-rebalance included."""

from __future__ import annotations

import struct
import uuid

from kafkalite.broker.consumer_group_records import (
    CURRENT_MEMBER,
    MEMBER_METADATA,
    METADATA,
    group_records,
    rebuild,
    record_group_id,
    record_type,
)
from kafkalite.broker.offsets import encode_key
from kafkalite.groups import ConsumerGroup, ConsumerGroupConfig, ConsumerGroupCoordinator, HeartbeatRequest, MemberState

from .consumer_harness import GROUP, SESSION_MS, TOPIC_A, Harness, assert_disjoint


def mid_rebalance() -> tuple[Harness, list]:  # type: ignore[type-arg]
    """Two members holding topic a, then a third joining: the first two must revoke some partitions."""
    h = Harness()
    first, second = h.join("m1", instance_id="static-1", rack_id="rack-a"), h.join("m2", server_assignor="range")
    h.settle([first, second])
    third = h.join("m3")
    assert h.beat(first).error_code == 0
    return h, [first, second, third]


def group_of(h: Harness) -> ConsumerGroup:
    group = h.coordinator.group(GROUP)
    assert group is not None
    return group


def test_a_group_rebuilt_from_its_records_is_the_same_group() -> None:
    h, _ = mid_rebalance()
    group = group_of(h)
    assert any(m.state is MemberState.UNREVOKED_PARTITIONS for m in group.members.values())
    [rebuilt] = rebuild(group_records(group))[0].values()
    assert (rebuilt.group_id, rebuilt.group_epoch, rebuilt.assignment_epoch) == (
        GROUP,
        group.group_epoch,
        group.assignment_epoch,
    )
    assert rebuilt.subscription_metadata == group.subscription_metadata
    assert rebuilt.target == group.target
    for member_id, member in group.members.items():
        again = rebuilt.members[member_id]
        assert (again.instance_id, again.rack_id, again.client_id, again.client_host) == (
            member.instance_id,
            member.rack_id,
            member.client_id,
            member.client_host,
        )
        assert (again.subscribed_topic_names, again.subscribed_topic_regex, again.server_assignor) == (
            member.subscribed_topic_names,
            member.subscribed_topic_regex,
            member.server_assignor,
        )
        assert (again.member_epoch, again.previous_member_epoch, again.state) == (
            member.member_epoch,
            member.previous_member_epoch,
            member.state,
        )
        assert (again.assigned, again.pending_revocation, again.rebalance_timeout_ms) == (
            member.assigned,
            member.pending_revocation,
            member.rebalance_timeout_ms,
        )


def test_records_are_laid_out_as_kafkas_schemas() -> None:
    h = Harness()
    h.join("m1")
    records = group_records(group_of(h))
    assert {record_type(key) for key in records} == {3, 4, 5, 6, 7, 8}
    assert record_type(encode_key((GROUP, "t", 0))) is None  # an offset commit's key (version 1)
    assert all(record_group_id(key) == GROUP for key in records)
    key = struct.pack(">h", METADATA) + b"\x00\x01g"
    assert records[key] == b"\x00\x00" + struct.pack(">i", 1) + b"\x00"  # version 0, epoch 1, empty tag buffer
    member_key = struct.pack(">h", CURRENT_MEMBER) + b"\x00\x01g" + b"\x00\x02m1"
    assigned = b"".join(struct.pack(">i", p) for p in range(6))
    assert records[member_key] == (
        b"\x00\x00"  # version 0
        + struct.pack(">iib", 1, 0, 0)  # member epoch 1, previous epoch 0, state stable (0)
        + b"\x02" + TOPIC_A.bytes + b"\x07" + assigned + b"\x00"  # one topic: 6 partitions, its tag buffer
        + b"\x01"  # nothing pending revocation
        + b"\x00"  # the value's tag buffer
    )  # fmt: skip
    metadata_key = struct.pack(">h", MEMBER_METADATA) + b"\x00\x01g" + b"\x00\x02m1"
    assert records[metadata_key].startswith(b"\x00\x00" + b"\x00" + b"\x00")  # no instance id, no rack


def test_a_coordinator_given_the_group_back_goes_on_where_it_was() -> None:
    h, clients = mid_rebalance()
    before = group_of(h)
    [rebuilt] = rebuild(group_records(before))[0].values()
    restarted = Harness()
    restarted.now = 50_000
    restarted.coordinator.restore(rebuilt, now_ms=restarted.now)
    group = group_of(restarted)
    assert group.owners == before.owners
    assert group.static_members == {"static-1": "m1"}
    assert group.assignor_name == before.assignor_name
    # The members' heartbeats at their epochs are accepted, and the rebalance completes without a new group epoch.
    restarted.settle(clients)
    assert_disjoint(clients)
    assert group.group_epoch == before.group_epoch
    assert {c.member_id: len(c.held) for c in clients} == {"m1": 2, "m2": 2, "m3": 2}
    # A member that stops heartbeating is fenced one session after its last heartbeat, as before the restart.
    gone = clients.pop()
    restarted.now += SESSION_MS // 2
    for client in clients:
        assert restarted.beat(client).error_code == 0
    assert restarted.coordinator.tick(restarted.now + SESSION_MS // 2) == [(GROUP, gone.member_id)]


def test_a_revocation_under_way_gets_its_timeout_again() -> None:
    h, _ = mid_rebalance()
    [rebuilt] = rebuild(group_records(group_of(h)))[0].values()
    coordinator = ConsumerGroupCoordinator(ConsumerGroupConfig(session_timeout_ms=SESSION_MS))
    coordinator.restore(rebuilt, now_ms=7_000)
    revoking = [m for m in rebuilt.members.values() if m.state is MemberState.UNREVOKED_PARTITIONS]
    assert revoking
    assert all(m.revocation_deadline_ms == 7_000 + m.rebalance_timeout_ms for m in revoking)
    assert all(m.session_deadline_ms == 7_000 + SESSION_MS for m in rebuilt.members.values())


def test_records_of_a_member_or_group_alone_are_left_out() -> None:
    h = Harness()
    h.join("m1")
    records = group_records(group_of(h))
    without_group = {k: v for k, v in records.items() if record_type(k) != METADATA}
    assert rebuild(without_group) == ({}, {})
    without_member = {k: v for k, v in records.items() if record_type(k) != MEMBER_METADATA}
    [group] = rebuild(without_member)[0].values()
    assert group.members == {}
    other = uuid.uuid4()
    assert other not in group.subscription_metadata


def test_the_coordinator_names_what_a_call_may_have_changed() -> None:
    h = Harness()
    first = h.join("m1")
    assert h.coordinator.take_changed() == [(GROUP, None)]  # a join: the whole group
    h.beat(first)
    assert h.coordinator.take_changed() == [(GROUP, frozenset({"m1"}))]  # a heartbeat: that member's records
    second = h.join("m2")
    h.beat(first)
    assert h.coordinator.take_changed() == [(GROUP, None)]  # a new epoch on the way: everything
    h.beat(second)
    h.beat(first)
    assert h.coordinator.take_changed() == [(GROUP, frozenset({"m1", "m2"}))]
    h.heartbeat("nobody", 3)  # refused: a member the group does not have
    assert h.coordinator.take_changed() == []
    h.coordinator.heartbeat(HeartbeatRequest("other", "x", 5), topics=h.topics, now_ms=h.now)
    assert h.coordinator.take_changed() == []  # no such group: nothing to store


def test_a_record_that_cannot_be_read_drops_its_group_alone() -> None:
    h = Harness()
    h.join("m1")
    good = group_records(group_of(h))
    other = Harness()
    other.coordinator.heartbeat(
        HeartbeatRequest("other", "x", 0, rebalance_timeout_ms=5000, subscribed_topic_names=("a",), owned=()),
        topics=other.topics,
        now_ms=0,
    )
    bad = group_records(other.coordinator.group("other"))  # type: ignore[arg-type]
    metadata_key = next(k for k in bad if record_type(k) == METADATA)
    bad[metadata_key] = b"\x00\x01" + bad[metadata_key][2:]  # value version 1: not one this broker reads
    bad[b"\x00\x05\x00"] = b""  # a member key cut short
    groups, unreadable = rebuild({**good, **bad})
    assert list(groups) == [GROUP]
    assert unreadable["other"] == "consumer group record type 3 version 1 is not supported"
    assert "ends at byte 3" in unreadable["000500"]


def test_ids_longer_than_a_stored_key_can_hold_are_refused() -> None:
    h = Harness()
    result = h.heartbeat("m" * 40_000, 0, rebalance_timeout_ms=5000, subscribed_topic_names=("a",), owned=())
    assert result.error_code == 42  # INVALID_REQUEST
    assert result.error_message == "GroupId and MemberId can't be longer than 32767 bytes."
    assert h.coordinator.group(GROUP) is None


def test_every_member_state_has_its_code_in_the_records() -> None:
    """The codes are keyed by `MemberState` value, so that reading the records at start needs no group module."""
    from kafkalite.broker.consumer_group_records import _STATE_CODES

    assert set(_STATE_CODES) == {state.value for state in MemberState}
    assert sorted(_STATE_CODES.values()) == [0, 1, 2]  # Kafka's MemberState codes in the current-assignment record
