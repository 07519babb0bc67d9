"""KIP-848's server-side assignors: every partition once, to a subscriber; balance; stickiness; range's ranges."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.groups.server_assignors import (
    SERVER_ASSIGNORS,
    AssignmentSpec,
    TopicAssignment,
    range_assign,
    uniform_assign,
)

A, B, C = (uuid.UUID(int=i) for i in (1, 2, 3))


def counts(result: Mapping[str, TopicAssignment]) -> dict[str, int]:
    return {m: sum(len(ps) for ps in a.values()) for m, a in result.items()}


def check_complete(
    result: Mapping[str, TopicAssignment], members: Mapping[str, AssignmentSpec], partitions: Mapping[uuid.UUID, int]
) -> None:
    """Each partition of a topic someone subscribes to is given exactly once, and only to a subscriber."""
    seen: list[tuple[uuid.UUID, int]] = []
    for member_id, assignment in result.items():
        for topic_id, ps in assignment.items():
            assert topic_id in members[member_id].subscribed
            seen += [(topic_id, p) for p in ps]
    wanted = {
        (t, p) for t, n in partitions.items() for p in range(n) if any(t in m.subscribed for m in members.values())
    }
    assert sorted(seen) == sorted(wanted)


def test_uniform_balances_a_homogeneous_group() -> None:
    members = {f"m{i}": AssignmentSpec(frozenset({A, B})) for i in range(3)}
    result = uniform_assign(members, {A: 7, B: 4})
    check_complete(result, members, {A: 7, B: 4})
    assert sorted(counts(result).values()) == [3, 4, 4]


def test_uniform_is_sticky_when_a_member_joins() -> None:
    members = {f"m{i}": AssignmentSpec(frozenset({A})) for i in range(2)}
    first = uniform_assign(members, {A: 6})
    members = {m: AssignmentSpec(frozenset({A}), first[m]) for m in first} | {"m2": AssignmentSpec(frozenset({A}))}
    second = uniform_assign(members, {A: 6})
    assert counts(second) == {"m0": 2, "m1": 2, "m2": 2}
    # the two old members each gave one partition to the newcomer and kept the other two
    assert second["m0"][A] <= first["m0"][A]
    assert second["m1"][A] <= first["m1"][A]


def test_uniform_with_heterogeneous_subscriptions_uses_who_can_take_a_partition() -> None:
    members = {"m0": AssignmentSpec(frozenset({A})), "m1": AssignmentSpec(frozenset({A, B}))}
    result = uniform_assign(members, {A: 2, B: 4})
    check_complete(result, members, {A: 2, B: 4})
    assert result["m0"] == {A: frozenset({0, 1})}
    assert result["m1"] == {B: frozenset({0, 1, 2, 3})}


def test_range_gives_contiguous_ranges_and_copartitions() -> None:
    members = {m: AssignmentSpec(frozenset({A, B})) for m in ("m0", "m1", "m2")}
    result = range_assign(members, {A: 7, B: 7})
    assert result["m0"] == {A: frozenset({0, 1, 2}), B: frozenset({0, 1, 2})}
    assert result["m1"] == {A: frozenset({3, 4}), B: frozenset({3, 4})}
    assert result["m2"] == {A: frozenset({5, 6}), B: frozenset({5, 6})}


def test_range_is_sticky_within_quota() -> None:
    members = {"m0": AssignmentSpec(frozenset({A}), {A: frozenset({4, 5})}), "m1": AssignmentSpec(frozenset({A}))}
    result = range_assign(members, {A: 6})
    assert result["m0"][A] >= {4, 5}
    check_complete(result, members, {A: 6})


def test_a_topic_nobody_subscribes_to_is_not_assigned() -> None:
    members = {"m0": AssignmentSpec(frozenset({A}))}
    for assign in SERVER_ASSIGNORS.values():
        assert assign(members, {A: 1, C: 3}) == {"m0": {A: frozenset({0})}}


@st.composite
def groups(draw: st.DrawFn) -> tuple[dict[str, AssignmentSpec], dict[uuid.UUID, int]]:
    partitions = {A: draw(st.integers(0, 12)), B: draw(st.integers(0, 12)), C: draw(st.integers(0, 5))}
    n = draw(st.integers(1, 6))
    members = {}
    taken: set[tuple[uuid.UUID, int]] = set()
    for i in range(n):
        subscribed = frozenset(draw(st.sets(st.sampled_from([A, B, C]), min_size=1)))
        previous: dict[uuid.UUID, frozenset[int]] = {}
        for t in subscribed:
            own = {p for p in draw(st.sets(st.integers(0, 14), max_size=5)) if (t, p) not in taken}
            taken |= {(t, p) for p in own}
            previous[t] = frozenset(own)
        members[f"m{i}"] = AssignmentSpec(subscribed, previous)
    return members, partitions


@given(groups(), st.sampled_from(sorted(SERVER_ASSIGNORS)))
@settings(max_examples=300, deadline=None)
def test_every_assignor_assigns_every_partition_once(
    case: tuple[dict[str, AssignmentSpec], dict[uuid.UUID, int]], name: str
) -> None:
    members, partitions = case
    result = SERVER_ASSIGNORS[name](members, partitions)
    check_complete(result, members, partitions)
    assert result == SERVER_ASSIGNORS[name](members, partitions), "deterministic"


@given(groups())
@settings(max_examples=300, deadline=None)
def test_uniform_is_balanced_when_subscriptions_are_equal(
    case: tuple[dict[str, AssignmentSpec], dict[uuid.UUID, int]],
) -> None:
    members, partitions = case
    same = {m: AssignmentSpec(frozenset({A, B, C}), spec.current) for m, spec in members.items()}
    loads = counts(uniform_assign(same, partitions)).values()
    assert max(loads) - min(loads) <= 1


@given(groups())
@settings(max_examples=200, deadline=None)
def test_uniform_keeps_previous_partitions_a_balanced_result_allows(
    case: tuple[dict[str, AssignmentSpec], dict[uuid.UUID, int]],
) -> None:
    """Stickiness: with equal subscriptions, each member keeps min(previous valid, its new load) partitions."""
    members, partitions = case
    same = {m: AssignmentSpec(frozenset({A, B, C}), spec.current) for m, spec in members.items()}
    result = uniform_assign(same, partitions)
    for m, spec in same.items():
        previous = {(t, p) for t, ps in spec.current.items() for p in ps if p < partitions[t]}
        now = {(t, p) for t, ps in result[m].items() for p in ps}
        assert len(previous & now) == min(len(previous), len(now))
