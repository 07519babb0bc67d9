"""Assignors: Kafka's documented examples exactly, and the contract (hypothesis) for every assignor."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalite.groups import (
    ASSIGNORS,
    MemberSubscription,
    StickyUserData,
    Subscription,
    encode_sticky_user_data,
    range_assign,
    roundrobin_assign,
    sticky_assign,
)


def subs(**topics: list[str]) -> dict[str, MemberSubscription]:
    return {member: MemberSubscription(t) for member, t in topics.items()}


def test_range_kafka_example() -> None:
    # RangeAssignor javadoc: C0 and C1 both subscribed to t0 and t1, 3 partitions each.
    result = range_assign(subs(C0=["t0", "t1"], C1=["t0", "t1"]), {"t0": 3, "t1": 3})
    assert result == {
        "C0": [("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)],
        "C1": [("t0", 2), ("t1", 2)],
    }


def test_roundrobin_kafka_examples() -> None:
    # RoundRobinAssignor javadoc, identical subscriptions.
    result = roundrobin_assign(subs(C0=["t0", "t1"], C1=["t0", "t1"]), {"t0": 3, "t1": 3})
    assert result == {
        "C0": [("t0", 0), ("t0", 2), ("t1", 1)],
        "C1": [("t0", 1), ("t1", 0), ("t1", 2)],
    }
    # ... and differing subscriptions: t0, t1, t2 with 1, 2, 3 partitions.
    result = roundrobin_assign(subs(C0=["t0"], C1=["t0", "t1"], C2=["t0", "t1", "t2"]), {"t0": 1, "t1": 2, "t2": 3})
    assert result == {
        "C0": [("t0", 0)],
        "C1": [("t1", 0)],
        "C2": [("t1", 1), ("t2", 0), ("t2", 1), ("t2", 2)],
    }


def test_sticky_kafka_example_keeps_partitions_when_a_member_leaves() -> None:
    # StickyAssignor javadoc: C0, C1, C2 subscribed to t0..t3 with 2 partitions each; then C1 leaves.
    topics = ["t0", "t1", "t2", "t3"]
    counts = dict.fromkeys(topics, 2)
    first = sticky_assign(subs(C0=topics, C1=topics, C2=topics), counts)
    assert sorted(len(p) for p in first.values()) == [2, 3, 3]
    second = sticky_assign(
        {m: MemberSubscription(topics, first[m], generation_id=1) for m in ("C0", "C2")},
        counts,
    )
    for member in ("C0", "C2"):
        assert set(first[member]) <= set(second[member])
    assert sorted(len(p) for p in second.values()) == [4, 4]


def test_standbys_get_nothing() -> None:
    members = subs(a=["t"], b=["t"], c=["t"])
    for assign in ASSIGNORS.values():
        result = assign(members, {"t": 2})
        assert sorted(len(p) for p in result.values()) == [0, 1, 1]


def test_static_members_sort_first_by_instance_id() -> None:
    members = {
        "z-dynamic": MemberSubscription(["t"]),
        "b-member": MemberSubscription(["t"], group_instance_id="2"),
        "a-member": MemberSubscription(["t"], group_instance_id="1"),
    }
    result = range_assign(members, {"t": 3})
    assert result == {"a-member": [("t", 0)], "b-member": [("t", 1)], "z-dynamic": [("t", 2)]}


def test_sticky_reads_previous_assignment_from_user_data() -> None:
    user_data = encode_sticky_user_data(StickyUserData((("t", 1), ("t", 2)), generation=4))
    sub = MemberSubscription.from_subscription(Subscription(("t",), user_data=user_data))
    assert (list(sub.owned_partitions), sub.generation_id) == ([("t", 1), ("t", 2)], 4)
    result = sticky_assign({"late": MemberSubscription(["t"]), "old": sub}, {"t": 4})
    assert set(result["old"]) >= {("t", 1), ("t", 2)}
    garbage = MemberSubscription.from_subscription(Subscription(("t",), user_data=b"\x01"))
    assert list(garbage.owned_partitions) == []


def test_sticky_conflicting_claims_go_to_the_newest_generation() -> None:
    members = {
        "a": MemberSubscription(["t"], [("t", 0)], generation_id=1),
        "b": MemberSubscription(["t"], [("t", 0)], generation_id=2),
    }
    assert sticky_assign(members, {"t": 2}) == {"a": [("t", 1)], "b": [("t", 0)]}


# ---- properties -------------------------------------------------------------------------------------------------

TOPICS = ["a", "b", "c", "d"]
topic_counts = st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 8), min_size=1)
member_ids = st.lists(st.text("mxyz0123", min_size=1, max_size=4), min_size=1, max_size=7, unique=True)


@st.composite
def groups(draw: st.DrawFn, equal: bool) -> tuple[dict[str, MemberSubscription], dict[str, int]]:
    counts = draw(topic_counts)
    members = draw(member_ids)
    everyone = draw(st.lists(st.sampled_from(TOPICS), min_size=1, unique=True))
    all_partitions = [(t, p) for t, n in counts.items() for p in range(n)]
    subscriptions = {}
    for member in members:
        topics = everyone if equal else draw(st.lists(st.sampled_from(TOPICS), min_size=1, unique=True))
        owned = draw(st.lists(st.sampled_from(all_partitions), unique=True)) if all_partitions else []
        subscriptions[member] = MemberSubscription(topics, owned, generation_id=draw(st.integers(-1, 3)))
    return subscriptions, counts


def check_contract(members: dict[str, MemberSubscription], counts: dict[str, int], result: dict[str, list]) -> None:
    assert set(result) == set(members)
    wanted = {(t, p) for m in members.values() for t in m.topics if t in counts for p in range(counts[t])}
    owners = Counter(tp for partitions in result.values() for tp in partitions)
    assert set(owners) == wanted
    assert all(n == 1 for n in owners.values())
    for member, partitions in result.items():
        assert all(topic in members[member].topics for topic, _ in partitions)


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
@given(group=groups(equal=False))
def test_every_partition_assigned_exactly_once(name: str, group: tuple) -> None:
    members, counts = group
    check_contract(members, counts, ASSIGNORS[name](members, counts))


@pytest.mark.parametrize("name", ["roundrobin", "sticky"])
@given(group=groups(equal=True))
def test_balanced_within_one_when_subscriptions_are_equal(name: str, group: tuple) -> None:
    members, counts = group
    sizes = [len(p) for p in ASSIGNORS[name](members, counts).values()]
    assert max(sizes) - min(sizes) <= 1


@given(group=groups(equal=True))
def test_sticky_keeps_as_much_as_balance_allows(group: tuple) -> None:
    members, counts = group
    result = sticky_assign(members, counts)
    total, n = sum(len(p) for p in result.values()), len(members)
    floor, extra = divmod(total, n)
    # The valid previous owner of each partition (newest generation, unique), as the assignor defines it.
    claims: dict[tuple[str, int], list[tuple[int, str]]] = {}
    for member, sub in members.items():
        for tp in sub.owned_partitions:
            if tp[0] in sub.topics and tp[0] in counts:
                claims.setdefault(tp, []).append((sub.generation_id, member))
    owner: dict[tuple[str, int], str] = {}
    for tp, claimed in claims.items():
        newest = max(g for g, _ in claimed)
        winners = [m for g, m in claimed if g == newest]
        if len(winners) == 1:
            owner[tp] = winners[0]
    owned = Counter(owner.values())
    best = sum(min(owned[m], floor) for m in members) + min(extra, sum(owned[m] > floor for m in members))
    kept = sum(1 for m, partitions in result.items() for tp in partitions if owner.get(tp) == m)
    assert kept == best


@given(group=groups(equal=False))
def test_sticky_is_balanced_in_kafkas_sense(group: tuple) -> None:
    members, counts = group
    result = sticky_assign(members, counts)
    for partitions in result.values():
        for topic, _ in partitions:
            for other in members:
                if topic in members[other].topics:
                    assert len(result[other]) >= len(partitions) - 1
