"""The coordinator's rules, one scenario each (Kafka's GroupCoordinatorTest in spirit)."""

from __future__ import annotations

from kafkalite.groups import (
    ErrorCode,
    GroupCoordinator,
    JoinPending,
    JoinResult,
    LeavingMember,
    SyncPending,
    SyncResult,
)

from .harness import GROUP, Harness, make_config


def stable_group(h: Harness, n: int) -> list[str]:
    """n members in a Stable group; returns their ids in join order (the first is the leader)."""
    first = h.joined(h.join(client_id="c0"))
    ids = [first.member_id]
    pending: list[JoinPending] = []
    for i in range(1, n):
        result = h.join(client_id=f"c{i}")
        assert isinstance(result, JoinPending)
        pending.append(result)
    if n > 1:
        h.join(ids[0])
        ids += [h.joined(p).member_id for p in pending]
    generation = h.coordinator.describe(GROUP).generation_id
    for member_id in ids[1:]:
        h.sync(member_id, generation)
    h.sync(ids[0], generation, assignments={m: m.encode() for m in ids})
    h.mailbox.clear()
    assert h.state() == "Stable"
    return ids


def test_single_member_join_sync_stable() -> None:
    h = Harness()
    join = h.join(client_id="solo")
    assert isinstance(join, JoinResult)
    assert join.error_code == ErrorCode.NONE
    assert join.member_id == "solo-1"
    assert join.generation_id == 1
    assert join.leader_id == join.member_id
    assert join.protocol_type == "consumer"
    assert join.protocol_name == "range"
    assert [(m.member_id, m.metadata) for m in join.members] == [("solo-1", b"meta")]
    assert h.state() == "CompletingRebalance"
    sync = h.sync(join.member_id, 1, assignments={join.member_id: b"mine"})
    assert sync == SyncResult(ErrorCode.NONE, "consumer", "range", b"mine")
    description = h.coordinator.describe(GROUP)
    assert description.state == "Stable"
    assert description.protocol_name == "range"
    assert [(m.client_id, m.metadata, m.assignment) for m in description.members] == [("solo", b"meta", b"mine")]
    assert h.heartbeat(join.member_id, 1) == ErrorCode.NONE


def test_two_members_follower_sync_waits_for_leader() -> None:
    h = Harness()
    a = h.joined(h.join(client_id="a"))
    assert h.synced(h.sync(a.member_id, 1, assignments={a.member_id: b"all"})).assignment == b"all"
    b_pending = h.join(client_id="b")
    assert isinstance(b_pending, JoinPending)
    assert h.state() == "PreparingRebalance"
    assert h.heartbeat(a.member_id, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    a2 = h.join(a.member_id)
    assert isinstance(a2, JoinResult)
    b = h.joined(b_pending)
    assert a2.generation_id == b.generation_id == 2
    assert a2.leader_id == b.leader_id == a.member_id
    assert {m.member_id for m in a2.members} == {a.member_id, b.member_id}
    assert b.members == ()
    follower = h.sync(b.member_id, 2)
    assert isinstance(follower, SyncPending)
    leader = h.sync(a.member_id, 2, assignments={a.member_id: b"A", b.member_id: b"B"})
    assert h.synced(leader).assignment == b"A"
    assert h.synced(follower) == SyncResult(ErrorCode.NONE, "consumer", "range", b"B")
    assert h.state() == "Stable"


def test_three_members_and_missing_assignment_is_empty() -> None:
    h = Harness()
    ids = stable_group(h, 3)
    description = h.coordinator.describe(GROUP)
    assert description.generation_id == 2
    assert {m.member_id: m.assignment for m in description.members} == {m: m.encode() for m in ids}
    h.join(ids[0])  # the leader rejoining a Stable group forces a rebalance
    assert h.state() == "PreparingRebalance"
    pending = [h.join(m) for m in ids[1:]]
    assert all(isinstance(p, JoinResult) for p in pending) or h.mailbox
    results = {r.member_id: r for r in (h.joined(p) for p in pending)}
    assert all(r.generation_id == 3 for r in results.values())
    h.sync(ids[0], 3, assignments={ids[0]: b"x"})
    assert h.synced(h.sync(ids[1], 3)).assignment == b""


def test_initial_rebalance_delay_gathers_members_into_one_generation() -> None:
    h = Harness(make_config(initial_rebalance_delay_ms=3000))
    a = h.join(client_id="a")
    h.now = 100
    b = h.join(client_id="b")
    h.now = 200
    c = h.join(client_id="c")
    assert all(isinstance(p, JoinPending) for p in (a, b, c))
    assert h.coordinator.next_deadline_ms() == 3000
    h.tick(3000)  # members arrived during the delay: wait one more delay
    assert not h.mailbox
    assert h.coordinator.next_deadline_ms() == 6000
    h.tick(6000)
    results = [h.joined(p) for p in (a, b, c)]
    assert {r.generation_id for r in results} == {1}
    assert len(results[0].members) == 3


def test_new_member_in_stable_group_rebalances_everyone() -> None:
    h = Harness()
    ids = stable_group(h, 2)
    newcomer = h.join(client_id="late")
    assert isinstance(newcomer, JoinPending)
    assert h.heartbeat(ids[1], 2) == ErrorCode.REBALANCE_IN_PROGRESS
    assert h.sync(ids[1], 2) == SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
    first = h.join(ids[1])
    assert isinstance(first, JoinPending)
    last = h.join(ids[0])
    assert isinstance(last, JoinResult)
    generations = {h.joined(first).generation_id, last.generation_id, h.joined(newcomer).generation_id}
    assert generations == {3}


def test_join_during_completing_rebalance_sends_pending_syncs_back() -> None:
    h = Harness()
    a = h.joined(h.join(client_id="a"))
    b_pending = h.join(client_id="b")
    h.join(a.member_id)
    b = h.joined(b_pending)
    waiting = h.sync(b.member_id, b.generation_id)
    assert isinstance(waiting, SyncPending)
    h.join(client_id="c")
    assert h.synced(waiting) == SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
    assert h.state() == "PreparingRebalance"


def test_leave_rebalances_and_last_leave_empties_the_group() -> None:
    h = Harness()
    ids = stable_group(h, 2)
    left = h.coordinator.leave(GROUP, [LeavingMember(ids[1])], now_ms=h.now)
    assert left.error_code == ErrorCode.NONE
    assert [m.error_code for m in left.members] == [ErrorCode.NONE]
    assert h.state() == "PreparingRebalance"
    rejoined = h.join(ids[0])
    assert isinstance(rejoined, JoinResult)
    assert rejoined.generation_id == 3
    again = h.coordinator.leave(GROUP, [LeavingMember(ids[0]), LeavingMember("nobody")], now_ms=h.now)
    assert [m.error_code for m in again.members] == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]
    description = h.coordinator.describe(GROUP)
    assert (description.state, description.generation_id, description.members) == ("Empty", 4, ())
    assert description.protocol_type == "consumer"


def test_session_timeout_removes_member_and_rebalances() -> None:
    h = Harness()
    ids = stable_group(h, 2)
    h.now = 6000
    assert h.heartbeat(ids[1], 2) == ErrorCode.NONE
    assert h.coordinator.next_deadline_ms() == 10_000
    h.tick(10_000)  # the leader never heartbeat
    description = h.coordinator.describe(GROUP)
    assert [m.member_id for m in description.members] == [ids[1]]
    assert description.state == "PreparingRebalance"
    assert h.heartbeat(ids[0], 2) == ErrorCode.UNKNOWN_MEMBER_ID
    result = h.join(ids[1])
    assert isinstance(result, JoinResult)
    assert (result.generation_id, result.leader_id) == (3, ids[1])


def test_rebalance_timeout_removes_members_that_did_not_rejoin() -> None:
    h = Harness()
    ids = stable_group(h, 2)
    newcomer = h.join(client_id="late", rebalance_timeout_ms=5000)
    rejoined = h.join(ids[0], rebalance_timeout_ms=5000)
    assert isinstance(rejoined, JoinPending)
    for now in (8000, 16_000, 24_000):  # ids[1] keeps its session alive but never rejoins
        h.tick(now)
        assert h.heartbeat(ids[1], 2) == ErrorCode.REBALANCE_IN_PROGRESS
    h.tick(29_999)
    assert not h.mailbox
    h.tick(30_000)  # the largest rebalance timeout (ids[1]'s 30 s) has passed
    a, c = h.joined(rejoined), h.joined(newcomer)
    assert a.generation_id == c.generation_id == 3
    assert {m.member_id for m in a.members} == {ids[0], c.member_id}
    assert h.heartbeat(ids[1], 2) == ErrorCode.UNKNOWN_MEMBER_ID


def test_member_that_does_not_sync_is_removed() -> None:
    h = Harness()
    a = h.joined(h.join(client_id="a", rebalance_timeout_ms=1000))
    b_pending = h.join(client_id="b", rebalance_timeout_ms=1000)
    h.join(a.member_id, rebalance_timeout_ms=1000)
    b = h.joined(b_pending)
    h.sync(a.member_id, 2, assignments={})
    assert h.state() == "Stable"
    h.tick(1000)
    assert [m.member_id for m in h.coordinator.describe(GROUP).members] == [a.member_id]
    assert h.heartbeat(b.member_id, 2) == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.heartbeat(a.member_id, 2) == ErrorCode.REBALANCE_IN_PROGRESS


def test_stale_generation_is_fenced() -> None:
    h = Harness()
    ids = stable_group(h, 2)
    h.join(ids[0])
    h.join(ids[1])
    h.sync(ids[0], 3, assignments={})
    assert h.heartbeat(ids[1], 2) == ErrorCode.ILLEGAL_GENERATION
    assert h.synced(h.sync(ids[1], 2)) == SyncResult(ErrorCode.ILLEGAL_GENERATION)
    commit = h.coordinator.validate_offset_commit(GROUP, ids[1], 2, now_ms=h.now)
    assert commit == ErrorCode.ILLEGAL_GENERATION
    assert h.coordinator.validate_offset_commit(GROUP, ids[1], 3, now_ms=h.now) == ErrorCode.NONE
    assert h.coordinator.validate_offset_commit(GROUP, "ghost", 3, now_ms=h.now) == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.heartbeat("ghost", 3) == ErrorCode.UNKNOWN_MEMBER_ID


def test_offset_commit_rules() -> None:
    h = Harness()
    c = h.coordinator
    assert c.validate_offset_commit("solo", "", -1, now_ms=0) == ErrorCode.NONE
    assert [(g.group_id, g.state) for g in c.list_groups()] == [("solo", "Empty")]
    assert c.validate_offset_commit("other", "m", 3, now_ms=0) == ErrorCode.ILLEGAL_GENERATION
    a = h.joined(h.join(client_id="a"))
    assert c.validate_offset_commit(GROUP, a.member_id, 1, now_ms=0) == ErrorCode.REBALANCE_IN_PROGRESS
    assert c.validate_offset_commit(GROUP, "", -1, now_ms=0) == ErrorCode.UNKNOWN_MEMBER_ID


def test_member_id_required_flow() -> None:
    h = Harness()
    first = h.join(client_id="new", require_known_member_id=True)
    assert first == JoinResult(ErrorCode.MEMBER_ID_REQUIRED, "new-1")
    second = h.join("new-1", client_id="new", require_known_member_id=True)
    assert isinstance(second, JoinResult)
    assert (second.error_code, second.member_id, second.generation_id) == (ErrorCode.NONE, "new-1", 1)


def test_pending_member_holds_the_rebalance_until_it_joins_or_expires() -> None:
    h = Harness()
    ids = stable_group(h, 1)
    required = h.join(client_id="b", require_known_member_id=True, session_timeout_ms=500)
    assert isinstance(required, JoinResult)
    assert required.error_code == ErrorCode.MEMBER_ID_REQUIRED
    assert h.state() == "Stable"  # a MEMBER_ID_REQUIRED id is not a member yet
    h.join(client_id="c")
    leader = h.join(ids[0])
    assert isinstance(leader, JoinPending)
    h.tick(499)
    assert not h.mailbox
    h.tick(500)  # "b" never came back with its id
    assert h.joined(leader).generation_id == 2


def test_protocol_vote_and_inconsistent_protocols() -> None:
    h = Harness(make_config(initial_rebalance_delay_ms=10))
    a = h.join(client_id="a", protocols=[("roundrobin", b"1"), ("range", b"1"), ("sticky", b"1")])
    b = h.join(client_id="b", protocols=[("roundrobin", b"2"), ("range", b"2")])
    c = h.join(client_id="c", protocols=[("range", b"3"), ("roundrobin", b"3")])
    bad = h.join(client_id="d", protocols=[("sticky", b"4")])
    assert bad == JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")
    wrong_type = h.join(client_id="e", protocol_type="connect")
    assert wrong_type == JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")
    h.tick(10)  # members kept arriving during the first delay: one more
    assert not h.mailbox
    h.tick(20)
    results = [h.joined(p) for p in (a, b, c)]
    assert {r.protocol_name for r in results} == {"roundrobin"}  # two votes to one
    assert [m.metadata for m in results[0].members] == [b"1", b"2", b"3"]


def test_protocol_vote_only_among_common_protocols() -> None:
    h = Harness(make_config(initial_rebalance_delay_ms=10))
    a = h.join(client_id="a", protocols=[("sticky", b""), ("range", b"")])
    b = h.join(client_id="b", protocols=[("range", b""), ("sticky", b"")])
    c = h.join(client_id="c", protocols=[("range", b"")])
    h.tick(20)
    assert {h.joined(p).protocol_name for p in (a, b, c)} == {"range"}


def test_request_validation() -> None:
    h = Harness()
    h.coordinator = GroupCoordinator(make_config(min_session_timeout_ms=6000))
    assert h.join(session_timeout_ms=10) == JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, "")
    assert h.join("someone", session_timeout_ms=6000) == JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, "someone")
    assert h.coordinator.list_groups() == []
    empty_id = h.coordinator.join(
        "", "", now_ms=0, protocol_type="consumer", protocols=[], session_timeout_ms=6000, rebalance_timeout_ms=1
    )
    assert empty_id == JoinResult(ErrorCode.INVALID_GROUP_ID, "")
    assert h.join(session_timeout_ms=6000, protocols=[]) == JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")
    assert h.coordinator.heartbeat(GROUP, "x", 1, now_ms=0).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.coordinator.sync(GROUP, "x", 1, now_ms=0) == SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)


def test_sync_checks_protocol_type_and_name() -> None:
    h = Harness()
    a = h.joined(h.join())
    assert h.sync(a.member_id, 1, protocol_type="connect") == SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    assert h.sync(a.member_id, 1, protocol_name="sticky") == SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    ok = h.sync(a.member_id, 1, protocol_type="consumer", protocol_name="range", assignments={})
    assert ok == SyncResult(ErrorCode.NONE, "consumer", "range", b"")


def test_removed_member_pending_join_is_answered() -> None:
    h = Harness()
    ids = stable_group(h, 1)
    pending = h.join(client_id="b")
    assert isinstance(pending, JoinPending)
    member_id = "b-2"
    left = h.coordinator.leave(GROUP, [LeavingMember(member_id)], now_ms=h.now)
    h.drain()
    assert left.members[0].error_code == ErrorCode.NONE
    assert h.joined(pending) == JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, "")
    assert isinstance(h.join(ids[0]), JoinResult)


def test_delete_and_list_groups() -> None:
    h = Harness()
    ids = stable_group(h, 1)
    c = h.coordinator
    c.validate_offset_commit("offsets-only", "", -1, now_ms=0)
    assert [(g.group_id, g.state) for g in c.list_groups(["stable"])] == [(GROUP, "Stable")]
    assert len(c.list_groups()) == 2
    assert c.delete_group(GROUP) == ErrorCode.NON_EMPTY_GROUP
    assert c.delete_group("missing") == ErrorCode.GROUP_ID_NOT_FOUND
    c.leave(GROUP, [LeavingMember(ids[0])], now_ms=0)
    assert c.delete_group(GROUP) == ErrorCode.NONE
    dead = c.describe(GROUP)
    assert (dead.state, dead.protocol_type, dead.members) == ("Dead", "", ())


def test_static_member_rejoining_fences_its_old_id() -> None:
    h = Harness()
    a = h.joined(h.join(client_id="a", group_instance_id="i-a"))
    assert a.member_id == "i-a-1"
    h.sync(a.member_id, 1, assignments={a.member_id: b"p"}, group_instance_id="i-a")
    again = h.join(client_id="a", group_instance_id="i-a")
    assert isinstance(again, JoinResult)
    assert (again.error_code, again.member_id, again.generation_id) == (ErrorCode.NONE, "i-a-2", 1)
    assert h.state() == "Stable"
    old = h.coordinator.heartbeat(GROUP, a.member_id, 1, now_ms=0, group_instance_id="i-a")
    assert old.error_code == ErrorCode.FENCED_INSTANCE_ID
    assert h.synced(h.sync("i-a-2", 1, group_instance_id="i-a")).assignment == b"p"
    gone = h.coordinator.leave(GROUP, [LeavingMember("", "i-a")], now_ms=0)
    assert gone.members[0].error_code == ErrorCode.NONE
    assert h.state() == "Empty"


def test_superseded_join_is_answered() -> None:
    h = Harness()
    ids = stable_group(h, 2)
    first = h.join(ids[0])
    assert isinstance(first, JoinPending)
    second = h.join(ids[0])
    assert h.joined(first) == JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, ids[0])
    assert isinstance(second, JoinPending)


def test_group_max_size() -> None:
    h = Harness(make_config(max_group_size=1))
    h.joined(h.join(client_id="a"))
    assert h.join(client_id="b") == JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, "")


def test_next_deadline_and_tick_are_idempotent() -> None:
    h = Harness()
    assert h.coordinator.next_deadline_ms() is None
    a = h.joined(h.join())
    assert h.coordinator.next_deadline_ms() == 10_000  # session (the sync deadline is later: 30 s)
    h.sync(a.member_id, 1, assignments={})
    h.tick(5000)
    h.tick(5000)
    assert h.heartbeat(a.member_id, 1) == ErrorCode.NONE
    assert h.coordinator.next_deadline_ms() == 15_000
