"""What a classic group keeps across a restart: when the coordinator hands out its stored form (`take_to_store`), and
how a coordinator given that form back (`restore`) answers the members that were in the group."""

from __future__ import annotations

from kafkalite.groups import ErrorCode, GroupCoordinator, JoinResult, LeavingMember, StoredGroup, StoredMember

from .harness import GROUP, PROTOCOLS, Harness, make_config


def stored_forms(h: Harness) -> list[tuple[str, StoredGroup | None]]:
    """What the coordinator hands out to store, as (group id, stored form); the takeovers they carry left out."""
    return [(entry.group_id, entry.group) for entry in h.coordinator.take_to_store()]


def stable_pair(h: Harness) -> tuple[JoinResult, JoinResult]:
    """Two members in a Stable group at generation 2 (the first member alone had generation 1); the leader first."""
    first = h.joined(h.join())
    second_pending = h.join()  # starts a rebalance; the first member rejoins to complete it
    first = h.joined(h.join(first.member_id))
    second = h.joined(second_pending)
    assert first.generation_id == second.generation_id == 2
    leader, follower = (first, second) if first.leader_id == first.member_id else (second, first)
    h.sync(follower.member_id, 2)
    h.sync(leader.member_id, 2, assignments={leader.member_id: b"for-leader", follower.member_id: b"for-follower"})
    return leader, follower


def test_the_leaders_sync_stores_the_generation_with_members_and_assignments() -> None:
    h = Harness(make_config(initial_rebalance_delay_ms=100))
    a, b = h.join(client_id="c-a"), h.join(client_id="c-b")
    h.tick(200)  # the initial delay, extended once because a second member arrived in it
    first, second = h.joined(a), h.joined(b)
    assert stored_forms(h) == []  # a join alone stores nothing
    h.sync(second.member_id, 1)
    assert stored_forms(h) == []  # nor does a follower's sync
    h.sync(first.member_id, 1, assignments={first.member_id: b"p0", second.member_id: b"p1"})

    [(group_id, stored)] = stored_forms(h)
    assert group_id == GROUP
    assert stored == StoredGroup(
        protocol_type="consumer",
        generation_id=1,
        protocol_name="range",
        leader_id=first.member_id,
        members=(
            StoredMember(first.member_id, None, "c-a", "", 30_000, 10_000, b"meta", b"p0"),
            StoredMember(second.member_id, None, "c-b", "", 30_000, 10_000, b"meta", b"p1"),
        ),
    )
    assert stored_forms(h) == []  # drained
    h.heartbeat(first.member_id, 1)
    assert h.coordinator.validate_offset_commit(GROUP, first.member_id, 1, now_ms=h.now) == 0
    assert stored_forms(h) == []  # heartbeats and commits store nothing


def test_a_group_left_empty_is_stored_without_members_at_its_new_generation() -> None:
    h = Harness()
    joined = h.joined(h.join())
    h.sync(joined.member_id, 1, assignments={joined.member_id: b"x"})
    stored_forms(h)
    h.coordinator.leave(GROUP, [LeavingMember(joined.member_id)], now_ms=h.now)
    assert stored_forms(h) == [(GROUP, StoredGroup("consumer", 2, None, None, ()))]


def test_a_member_leaving_a_group_that_keeps_members_stores_nothing_until_the_next_generation() -> None:
    h = Harness()
    leader, follower = stable_pair(h)
    stored_forms(h)
    h.coordinator.leave(GROUP, [LeavingMember(follower.member_id)], now_ms=h.now)
    h.drain()
    assert stored_forms(h) == []  # PreparingRebalance: the stored generation 2 stands
    rejoined = h.joined(h.join(leader.member_id))
    assert rejoined.generation_id == 3
    h.sync(leader.member_id, 3, assignments={leader.member_id: b"all"})
    [(_, stored)] = stored_forms(h)
    assert stored is not None
    assert stored.generation_id == 3
    assert [m.member_id for m in stored.members] == [leader.member_id]


def test_deleting_a_group_stores_a_tombstone() -> None:
    h = Harness()
    joined = h.joined(h.join())
    h.coordinator.leave(GROUP, [LeavingMember(joined.member_id)], now_ms=h.now)
    stored_forms(h)
    assert h.coordinator.delete_group(GROUP) == 0
    assert stored_forms(h) == [(GROUP, None)]


def test_a_static_member_taking_over_in_a_stable_group_stores_its_new_member_id() -> None:
    h = Harness()
    first = h.joined(h.join(group_instance_id="i-1"))
    h.sync(first.member_id, 1, group_instance_id="i-1", assignments={first.member_id: b"a"})
    stored_forms(h)
    again = h.join(group_instance_id="i-1")
    assert isinstance(again, JoinResult)
    assert (again.error_code, again.generation_id) == (0, 1)
    [(_, stored)] = stored_forms(h)
    assert stored is not None
    assert [(m.member_id, m.group_instance_id, m.assignment) for m in stored.members] == [
        (again.member_id, "i-1", b"a")
    ]


def restarted(stored: StoredGroup, now: int = 50_000) -> Harness:
    """A new coordinator (a restarted broker) given the stored group back at `now`."""
    h = Harness(now=now)
    h.coordinator.restore(GROUP, stored, now_ms=now)
    return h


def stored_pair() -> tuple[StoredGroup, str, str]:
    h = Harness()
    leader, follower = stable_pair(h)
    [(_, stored)] = stored_forms(h)
    assert stored is not None
    return stored, leader.member_id, follower.member_id


def test_a_restored_group_is_stable_and_its_members_carry_on_with_their_generation() -> None:
    stored, leader, follower = stored_pair()
    h = restarted(stored)
    described = h.coordinator.describe(GROUP)
    assert (described.state, described.generation_id, described.protocol_name) == ("Stable", 2, "range")
    assert {m.member_id: m.assignment for m in described.members} == {
        leader: b"for-leader",
        follower: b"for-follower",
    }
    assert h.heartbeat(leader, 2) == 0
    assert h.heartbeat(follower, 2) == 0
    assert h.heartbeat(follower, 1) == ErrorCode.ILLEGAL_GENERATION
    assert h.coordinator.validate_offset_commit(GROUP, follower, 2, now_ms=h.now) == 0
    synced = h.synced(h.sync(follower, 2))  # a member that lost its SyncGroup reply asks again
    assert (synced.error_code, synced.assignment) == (0, b"for-follower")
    assert stored_forms(h) == []  # restoring stores nothing


def test_a_restored_member_that_never_comes_back_expires_after_its_session_and_the_rest_rebalance() -> None:
    stored, leader, follower = stored_pair()
    h = restarted(stored, now=50_000)
    session = stored.members[0].session_timeout_ms
    h.tick(50_000 + session - 1)
    assert h.heartbeat(leader, 2) == 0  # the leader is alive; the follower is silent
    h.tick(50_000 + session)
    assert h.state() == "PreparingRebalance"
    assert h.heartbeat(follower, 2) == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.heartbeat(leader, 2) == ErrorCode.REBALANCE_IN_PROGRESS
    rejoined = h.joined(h.join(leader))
    assert (rejoined.error_code, rejoined.generation_id, rejoined.leader_id) == (0, 3, leader)


def test_a_restored_follower_rejoining_with_its_stored_protocol_gets_the_current_generation() -> None:
    stored, leader, follower = stored_pair()
    h = restarted(stored)
    again = h.join(follower)
    assert isinstance(again, JoinResult)
    assert (again.error_code, again.generation_id, again.leader_id) == (0, 2, leader)
    assert h.state() == "Stable"
    # Offering more protocols than the one stored is changed metadata: a rebalance, as after a reload in Kafka.
    h.join(follower, protocols=(*PROTOCOLS, ("roundrobin", b"meta")))
    assert h.state() == "PreparingRebalance"


def test_a_restored_static_member_keeps_its_instance_id() -> None:
    h = Harness()
    first = h.joined(h.join(group_instance_id="i-1"))
    h.sync(first.member_id, 1, group_instance_id="i-1", assignments={first.member_id: b"a"})
    [(_, stored)] = stored_forms(h)
    assert stored is not None
    h = restarted(stored)
    assert h.coordinator.heartbeat(GROUP, first.member_id, 1, now_ms=h.now, group_instance_id="i-1").error_code == 0
    fenced = h.coordinator.heartbeat(GROUP, "someone-else", 1, now_ms=h.now, group_instance_id="i-1")
    assert fenced.error_code == ErrorCode.FENCED_INSTANCE_ID
    # Restarted with an empty member id, it takes its instance id over without a rebalance.
    again = h.join(group_instance_id="i-1")
    assert isinstance(again, JoinResult)
    assert (again.error_code, again.generation_id) == (0, 1)
    assert h.state() == "Stable"


def test_a_restored_empty_group_keeps_its_generation_and_protocol_type() -> None:
    h = restarted(StoredGroup("consumer", 7, None, None, ()))
    described = h.coordinator.describe(GROUP)
    assert (described.state, described.generation_id, described.protocol_type) == ("Empty", 7, "consumer")
    assert h.heartbeat("gone", 7) == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.coordinator.validate_offset_commit(GROUP, "", -1, now_ms=h.now) == 0  # standalone commits allowed
    assert h.joined(h.join()).generation_id == 8


def test_restore_leaves_a_group_already_known_alone() -> None:
    coordinator = GroupCoordinator(make_config())
    coordinator.join(
        GROUP,
        "",
        now_ms=0,
        protocol_type="consumer",
        protocols=PROTOCOLS,
        session_timeout_ms=10,
        rebalance_timeout_ms=10,
    )
    coordinator.restore(GROUP, StoredGroup("consumer", 9, None, None, ()), now_ms=0)
    assert coordinator.describe(GROUP).generation_id == 1


def test_a_takeover_whose_record_was_not_written_is_undone() -> None:
    h = Harness()
    first = h.joined(h.join(group_instance_id="i-1", client_id="old-client"))
    h.sync(first.member_id, 1, group_instance_id="i-1", assignments={first.member_id: b"a"})
    stored_forms(h)
    again = h.join(group_instance_id="i-1", client_id="new-client")
    assert isinstance(again, JoinResult)
    [entry] = h.coordinator.take_to_store()
    assert [t.new_member_id for t in entry.takeovers] == [again.member_id]
    assert h.coordinator.store_result(GROUP, entry.takeovers, stored=False) == [again.member_id]
    [member] = h.coordinator.describe(GROUP).members
    assert (member.member_id, member.client_id, member.assignment) == (first.member_id, "old-client", b"a")
    assert h.coordinator.heartbeat(GROUP, first.member_id, 1, now_ms=h.now, group_instance_id="i-1").error_code == 0
    # The undone form is queued again, so that the log follows: it names the old member id.
    [(_, corrected)] = stored_forms(h)
    assert corrected is not None
    assert [m.member_id for m in corrected.members] == [first.member_id]
    # A written takeover is never undone; one whose member has gone since has nothing to give back.
    kept = h.join(group_instance_id="i-1")
    assert isinstance(kept, JoinResult)
    [entry] = h.coordinator.take_to_store()
    assert h.coordinator.store_result(GROUP, entry.takeovers, stored=True) == []
    assert [m.member_id for m in h.coordinator.describe(GROUP).members] == [kept.member_id]
    h.coordinator.leave(GROUP, [LeavingMember(kept.member_id, "i-1")], now_ms=h.now)
    assert h.coordinator.store_result(GROUP, entry.takeovers, stored=False) == []
