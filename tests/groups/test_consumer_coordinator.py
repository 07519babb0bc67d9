"""The KIP-848 coordinator's rules, one scenario each, with an injected clock (no sleeping)."""

from __future__ import annotations

from kafkalite.groups import ConsumerGroupState, ErrorCode
from kafkalite.groups.consumer_group import MemberState

from .consumer_harness import GROUP, INTERVAL_MS, SESSION_MS, TOPIC_A, TOPIC_B, Harness, assert_disjoint


def state(h: Harness) -> ConsumerGroupState:
    return h.coordinator.state(GROUP)


def test_a_lone_member_gets_every_partition_at_epoch_one() -> None:
    h = Harness()
    result = h.heartbeat("m1", 0, subscribed_topic_names=("a",), rebalance_timeout_ms=5000, owned=())
    assert result.error_code == 0
    assert result.member_id == "m1"
    assert result.member_epoch == 1
    assert result.heartbeat_interval_ms == INTERVAL_MS
    assert result.assignment == {TOPIC_A: frozenset(range(6))}
    assert state(h) is ConsumerGroupState.STABLE


def test_a_second_member_gets_partitions_only_after_the_first_revokes_them() -> None:
    h = Harness()
    c1 = h.join("m1")
    c2 = h.join("m2")
    assert c2.held == set(), "everything is still c1's"
    assert c2.epoch == 2
    assert state(h) is ConsumerGroupState.RECONCILING
    # c1 learns it must revoke: it keeps half, same epoch
    result = h.beat(c1)
    assert result.member_epoch == 1
    assert len(c1.held) == 3
    # c2 heartbeats before c1 acknowledged the revocation: nothing yet
    h.beat(c2)
    assert c2.held == set()
    # c1's next heartbeat reports the three it kept: the others are released, and c1 moves to epoch 2
    assert h.beat(c1).member_epoch == 2
    h.beat(c2)
    assert_disjoint([c1, c2])
    assert len(c2.held) == 3
    h.settle([c1, c2])
    assert c1.epoch == c2.epoch == 2
    assert state(h) is ConsumerGroupState.STABLE


def test_unacknowledged_revocation_keeps_the_partition_from_the_new_owner() -> None:
    h = Harness()
    h.join("m1")
    c2 = h.join("m2")
    target_of_c2 = h.coordinator.describe(GROUP, {TOPIC_A: "a"})
    assert target_of_c2 is not None
    # c1 heartbeats without owned partitions (nothing changed on its side): it is told, but has not revoked yet
    result = h.heartbeat("m1", 1)
    assert result.assignment is not None
    assert len(result.assignment[TOPIC_A]) == 3
    assert h.beat(c2).assignment is None or not c2.held
    assert c2.held == set()
    member = h.coordinator._groups[GROUP].members["m1"]
    assert member.state is MemberState.UNREVOKED_PARTITIONS


def test_revocation_timeout_fences_the_member_and_frees_its_partitions() -> None:
    h = Harness()
    h.join("m1", rebalance_timeout_ms=300)
    c2 = h.join("m2")
    h.heartbeat("m1", 1)  # told to revoke, never acknowledges
    h.now += 300
    assert h.coordinator.next_deadline_ms() == 300
    assert h.coordinator.tick(h.now) == [(GROUP, "m1")]
    h.beat(c2)
    assert h.owned_by(c2) == set(range(6))


def test_session_timeout_fences_a_silent_member() -> None:
    h = Harness()
    c1 = h.join("m1")
    c2 = h.join("m2")
    h.settle([c1, c2])
    h.now += SESSION_MS - 1
    h.beat(c2)
    h.now += 1
    assert h.coordinator.tick(h.now) == [(GROUP, "m1")]
    assert h.beat(c1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    h.beat(c2)
    assert h.owned_by(c2) == set(range(6))


def test_leaving_releases_partitions_at_once() -> None:
    h = Harness()
    c1, c2 = h.join("m1"), h.join("m2")
    h.settle([c1, c2])
    epoch = c2.epoch
    left = h.heartbeat("m1", -1)
    assert (left.error_code, left.member_epoch) == (0, -1)
    h.beat(c2)
    assert h.owned_by(c2) == set(range(6))
    assert c2.epoch == epoch + 1


def test_epochs_fence_a_member_that_is_ahead_or_behind() -> None:
    h = Harness()
    c1, c2 = h.join("m1"), h.join("m2")
    h.settle([c1, c2])
    assert c1.epoch == 2
    assert h.heartbeat("m1", 3).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert h.heartbeat("m1", 0 + 1, owned=((TOPIC_A, (5,)),)).error_code in (0, ErrorCode.FENCED_MEMBER_EPOCH)
    # the previous epoch is accepted when what it owns is a subset of what it has (a lost answer)
    held = tuple(sorted(p for _, p in c1.held))
    assert h.heartbeat("m1", 1, owned=((TOPIC_A, held),)).error_code == 0
    assert h.heartbeat("m1", 1, owned=((TOPIC_B, (0,)),)).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert h.heartbeat("nobody", 2).error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_fenced_member_rejoins_with_epoch_zero_under_its_id() -> None:
    h = Harness()
    c1 = h.join("m1")
    assert h.heartbeat("m1", 7).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    again = h.join("m1")
    assert again.epoch == 2
    assert h.owned_by(again) == set(range(6))
    assert c1.member_id == again.member_id


def test_requests_are_checked() -> None:
    h = Harness()
    assert (
        h.heartbeat("", 0, subscribed_topic_names=("a",), rebalance_timeout_ms=1).error_code
        == ErrorCode.INVALID_REQUEST
    )
    assert h.heartbeat("m", 0, subscribed_topic_names=("a",)).error_code == ErrorCode.INVALID_REQUEST
    assert h.heartbeat("m", 0, rebalance_timeout_ms=1).error_code == ErrorCode.INVALID_REQUEST
    owned = ((TOPIC_A, (0,)),)
    assert h.heartbeat("m", 0, subscribed_topic_names=(), rebalance_timeout_ms=1, owned=owned).error_code == 42
    assert h.heartbeat("m", -3).error_code == ErrorCode.INVALID_REQUEST
    assert h.heartbeat("m", -2).error_code == ErrorCode.INVALID_REQUEST
    assert h.heartbeat("m", 0, subscribed_topic_names=("a",), rebalance_timeout_ms=1, instance_id="").error_code == 42
    refused = h.heartbeat("m", 0, subscribed_topic_names=("a",), rebalance_timeout_ms=1, server_assignor="sticky")
    assert refused.error_code == ErrorCode.UNSUPPORTED_ASSIGNOR
    refused = h.heartbeat("m", 0, subscribed_topic_regex="a(", rebalance_timeout_ms=1)
    assert refused.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert refused.error_message is not None
    assert "a(" in refused.error_message
    assert h.heartbeat("m", 1).error_code == ErrorCode.UNKNOWN_MEMBER_ID, "unknown group"
    assert GROUP not in h.coordinator


def test_v0_members_get_their_id_from_the_coordinator() -> None:
    h = Harness(new_member_id=lambda: "made-here")
    result = h.heartbeat(
        "", 0, subscribed_topic_names=("a",), rebalance_timeout_ms=1, coordinator_generates_member_id=True
    )
    assert (result.error_code, result.member_id) == (0, "made-here")


def test_group_max_size() -> None:
    h = Harness(max_size=1)
    h.join("m1")
    refused = h.heartbeat("m2", 0, subscribed_topic_names=("a",), rebalance_timeout_ms=1)
    assert refused.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED


def test_static_member_leaves_with_minus_two_and_comes_back_with_its_partitions() -> None:
    h = Harness()
    c1 = h.join("m1", instance_id="i1")
    c2 = h.join("m2", instance_id="i2")
    h.settle([c1, c2])
    before = set(c1.held)
    epoch = h.coordinator.describe(GROUP, {})
    assert epoch is not None
    assert h.heartbeat("m1", -2, instance_id="i1").member_epoch == -2
    # the instance id is still held: another member may not take it while m1 is only away
    assert h.heartbeat("m3", 0, subscribed_topic_names=("a",), rebalance_timeout_ms=1, instance_id="i2").error_code == (
        ErrorCode.UNRELEASED_INSTANCE_ID
    )
    back = h.join("m1-again", instance_id="i1")
    assert back.held == before
    assert back.epoch == c2.epoch, "no rebalance: same epoch"
    h2 = h.coordinator.describe(GROUP, {})
    assert h2 is not None
    assert h2.group_epoch == epoch.group_epoch
    assert h.heartbeat("m1", 2, instance_id="i1").error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_static_member_that_does_not_come_back_is_removed_after_its_session() -> None:
    h = Harness()
    c1, c2 = h.join("m1", instance_id="i1"), h.join("m2")
    h.settle([c1, c2])
    h.heartbeat("m1", -2, instance_id="i1")
    h.now += SESSION_MS // 2
    h.beat(c2)
    assert h.owned_by(c2) == {3, 4, 5}, "m1's partitions wait for it"
    h.now += SESSION_MS // 2
    h.beat(c2)
    assert h.owned_by(c2) == set(range(6))


def test_wrong_instance_id_is_fenced() -> None:
    h = Harness()
    h.join("m1", instance_id="i1")
    assert h.heartbeat("m1", 1, instance_id="i9").error_code == ErrorCode.FENCED_INSTANCE_ID
    assert h.heartbeat("m2", -1, instance_id="i1").error_code == ErrorCode.FENCED_INSTANCE_ID


def test_subscription_change_and_new_partitions_bump_the_group_epoch() -> None:
    h = Harness()
    c1 = h.join("m1")
    assert c1.epoch == 1
    h.beat(c1, subscribed_topic_names=("a", "b"))
    assert c1.epoch == 2
    assert len(c1.held) == 10
    h.topics["b"] = (TOPIC_B, 5)
    h.beat(c1)
    assert c1.epoch == 3
    assert (TOPIC_B, 4) in c1.held


def test_regex_subscription_matches_whole_names_and_skips_internal_topics() -> None:
    h = Harness()
    h.topics["__consumer_offsets"] = (TOPIC_B, 1)
    del h.topics["b"]
    result = h.heartbeat("m1", 0, subscribed_topic_regex=".*", rebalance_timeout_ms=1, owned=())
    assert result.assignment == {TOPIC_A: frozenset(range(6))}
    other = h.heartbeat("m2", 0, subscribed_topic_regex="b|c", rebalance_timeout_ms=1, owned=())
    assert other.assignment == {}


def test_assignor_chosen_by_members_or_the_default() -> None:
    h = Harness(assignors=("range", "uniform"))
    h.join("m1", server_assignor="uniform")
    described = h.coordinator.describe(GROUP, {})
    assert described is not None
    assert described.assignor_name == "uniform"
    h2 = Harness(assignors=("range", "uniform"))
    h2.join("m1")
    described = h2.coordinator.describe(GROUP, {})
    assert described is not None
    assert described.assignor_name == "range"


def test_offset_commit_and_fetch_use_the_member_epoch() -> None:
    h = Harness()
    c1 = h.join("m1")
    coordinator = h.coordinator
    assert coordinator.validate_offset_commit(GROUP, "m1", c1.epoch, api_version=9) == 0
    assert coordinator.validate_offset_commit(GROUP, "m1", c1.epoch + 1, api_version=9) == ErrorCode.STALE_MEMBER_EPOCH
    assert coordinator.validate_offset_commit(GROUP, "m1", c1.epoch, api_version=8) == ErrorCode.UNSUPPORTED_VERSION
    assert coordinator.validate_offset_commit(GROUP, "zz", 1, api_version=9) == ErrorCode.UNKNOWN_MEMBER_ID
    assert coordinator.validate_offset_commit(GROUP, "", -1, api_version=9) == ErrorCode.UNKNOWN_MEMBER_ID
    assert coordinator.validate_offset_fetch(GROUP, "m1", c1.epoch) == 0
    assert coordinator.validate_offset_fetch(GROUP, None, -1) == 0
    assert coordinator.validate_offset_fetch(GROUP, "m1", 0) == ErrorCode.STALE_MEMBER_EPOCH
    h.heartbeat("m1", -1)
    assert coordinator.validate_offset_commit(GROUP, "", -1, api_version=2) == 0, "an Empty group takes admin commits"


def test_describe_list_and_delete() -> None:
    h = Harness()
    c1 = h.join("m1", topics=("a", "b"), instance_id="i1", rack_id="r1", client_id="cid", client_host="/1.2.3.4")
    described = h.coordinator.describe(GROUP, {TOPIC_A: "a"})
    assert described is not None
    assert (described.state, described.group_epoch, described.assignment_epoch) == ("Stable", 1, 1)
    member = described.members[0]
    assert (member.member_id, member.instance_id, member.rack_id, member.client_id) == ("m1", "i1", "r1", "cid")
    assert member.subscribed_topic_names == ("a", "b")
    assert member.assignment == {TOPIC_A: frozenset(range(6))}, "topics without a name are left out"
    assert h.coordinator.list_groups() == [(GROUP, "Stable")]
    assert h.coordinator.list_groups(["empty"]) == []
    assert h.coordinator.delete_group(GROUP) == ErrorCode.NON_EMPTY_GROUP
    h.heartbeat(c1.member_id, -1)
    assert h.coordinator.list_groups(["EMPTY"]) == [(GROUP, "Empty")]
    assert h.coordinator.delete_group(GROUP) == 0
    assert h.coordinator.delete_group(GROUP) == ErrorCode.GROUP_ID_NOT_FOUND
    assert h.coordinator.describe(GROUP, {}) is None


def test_members_of_three_share_and_one_leaves_without_stopping_the_others() -> None:
    h = Harness()
    clients = [h.join(f"m{i}") for i in range(3)]
    h.settle(clients)
    assert sorted(len(c.held) for c in clients) == [2, 2, 2]
    kept = {c.member_id: set(c.held) for c in clients[1:]}
    h.heartbeat("m0", -1)
    survivors = clients[1:]
    h.settle(survivors)
    for c in survivors:
        assert kept[c.member_id] <= c.held, "no survivor gave anything up"
    assert sorted(len(c.held) for c in survivors) == [3, 3]


def test_a_repeated_topic_name_is_one_subscription_and_changes_nothing() -> None:
    h = Harness()
    c1 = h.join("m1", topics=("a", "a"))
    for _ in range(3):
        h.beat(c1, subscribed_topic_names=("a", "a"))
    described = h.coordinator.describe(GROUP, {})
    assert described is not None
    assert described.group_epoch == 1
    assert described.members[0].subscribed_topic_names == ("a",)


def test_a_heartbeat_after_the_group_emptied_and_a_stray_leave() -> None:
    h = Harness()
    c1 = h.join("m1")
    assert h.heartbeat("m1", -1).error_code == 0
    assert h.heartbeat("m1", -1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.beat(c1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert state(h) is ConsumerGroupState.EMPTY
