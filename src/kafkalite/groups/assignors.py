"""Partition assignors of the "consumer" protocol: range, roundrobin and sticky, as Kafka's Java client has them.

Input: member id → `MemberSubscription` (subscribed topics; for sticky the partitions it owned and their generation)
and topic → partition count. Output: member id → [(topic, partition), ...] for every member (possibly empty).
Invariants, for every assignor: each partition of a subscribed topic that exists is assigned to exactly one member,
and only to a member subscribed to its topic; topics missing from the partition counts are skipped; members beyond
the partition count get nothing (hot standbys). Outputs are deterministic.

Member order is Kafka's MemberInfo order: static members (group_instance_id) first, by instance id, then the others
by member id. (Java compares strings by UTF-16 units, Python by code points: they differ only outside the BMP.)

* range (RangeAssignor): per topic, the members subscribed to it, in member order, take consecutive ranges; the first
  `partitions % members` of them take one extra.
* roundrobin (RoundRobinAssignor): all partitions of all subscribed topics, sorted by topic then partition, dealt to
  the members in member order, in a circle, skipping members not subscribed to the partition's topic.
* sticky (StickyAssignor): the result is balanced — no partition could move to an eligible member that has two or
  more fewer partitions — and keeps as many previously owned partitions as that balance allows. A partition claimed
  by several members goes to the claim with the highest generation; a tie there leaves it unowned, as Kafka does.
  Previous ownership comes from the subscription's owned partitions, else from StickyAssignor user data. With equal
  subscriptions this keeps the maximum possible; the general case uses a greedy balance, not Kafka's exact search,
  so outputs can differ from Java's while satisfying the same contract.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from kafkalite.errors import GroupError
from kafkalite.groups.consumer_protocol import Subscription, TopicPartition, decode_sticky_user_data

Assignment = dict[str, list[TopicPartition]]


@dataclass(frozen=True, slots=True)
class MemberSubscription:
    topics: Collection[str]
    owned_partitions: Sequence[TopicPartition] = ()
    generation_id: int = -1
    group_instance_id: str | None = None

    @classmethod
    def from_subscription(cls, subscription: Subscription, group_instance_id: str | None = None) -> MemberSubscription:
        """From decoded JoinGroup metadata: owned partitions (v1+), else the eager StickyAssignor's user data."""
        owned, generation = subscription.owned_partitions, subscription.generation_id
        if not owned and subscription.user_data:
            try:
                sticky = decode_sticky_user_data(subscription.user_data)
            except GroupError:
                sticky = None  # another assignor's user data: no previous assignment, as Kafka falls back
            if sticky is not None:
                owned, generation = sticky.previous_assignment, sticky.generation
        return cls(subscription.topics, owned, generation, group_instance_id)


Assignor = Callable[[Mapping[str, MemberSubscription], Mapping[str, int]], Assignment]


def _member_order(members: Mapping[str, MemberSubscription]) -> list[str]:
    def key(member_id: str) -> tuple[int, str]:
        instance = members[member_id].group_instance_id
        return (0, instance) if instance is not None else (1, member_id)

    return sorted(members, key=key)


def _all_partitions(
    members: Mapping[str, MemberSubscription], partitions_per_topic: Mapping[str, int]
) -> list[TopicPartition]:
    topics = sorted({t for m in members.values() for t in m.topics if t in partitions_per_topic})
    return [(topic, p) for topic in topics for p in range(partitions_per_topic[topic])]


def range_assign(members: Mapping[str, MemberSubscription], partitions_per_topic: Mapping[str, int]) -> Assignment:
    order = _member_order(members)
    assignment: Assignment = {m: [] for m in order}
    topics = sorted({t for m in members.values() for t in m.topics if t in partitions_per_topic})
    for topic in topics:
        consumers = [m for m in order if topic in members[m].topics]
        per_consumer, extra = divmod(partitions_per_topic[topic], len(consumers))
        for i, member_id in enumerate(consumers):
            start = per_consumer * i + min(i, extra)
            length = per_consumer + (1 if i < extra else 0)
            assignment[member_id].extend((topic, p) for p in range(start, start + length))
    return assignment


def roundrobin_assign(members: Mapping[str, MemberSubscription], partitions_per_topic: Mapping[str, int]) -> Assignment:
    order = _member_order(members)
    assignment: Assignment = {m: [] for m in order}
    position = 0
    for topic, partition in _all_partitions(members, partitions_per_topic):
        while topic not in members[order[position % len(order)]].topics:
            position += 1
        assignment[order[position % len(order)]].append((topic, partition))
        position += 1
    return assignment


def sticky_assign(members: Mapping[str, MemberSubscription], partitions_per_topic: Mapping[str, int]) -> Assignment:
    order = _member_order(members)
    rank = {m: i for i, m in enumerate(order)}
    partitions = _all_partitions(members, partitions_per_topic)
    eligible = {tp: [m for m in order if tp[0] in members[m].topics] for tp in partitions}

    claims: dict[TopicPartition, list[tuple[int, str]]] = {}
    for member_id in order:
        sub = members[member_id]
        for tp in dict.fromkeys(sub.owned_partitions):
            if tp in eligible and tp[0] in sub.topics:
                claims.setdefault(tp, []).append((sub.generation_id, member_id))
    previous_owner: dict[TopicPartition, str] = {}
    for tp, claimed in claims.items():
        newest = max(generation for generation, _ in claimed)
        winners = [member_id for generation, member_id in claimed if generation == newest]
        if len(winners) == 1:
            previous_owner[tp] = winners[0]

    assignment: Assignment = {m: [] for m in order}
    for tp in partitions:
        if tp in previous_owner:
            assignment[previous_owner[tp]].append(tp)
    unowned = sorted((tp for tp in partitions if tp not in previous_owner), key=lambda tp: (len(eligible[tp]), tp))
    for tp in unowned:
        target = min(eligible[tp], key=lambda m: (len(assignment[m]), rank[m]))
        assignment[target].append(tp)

    while (move := _best_move(assignment, eligible, previous_owner, rank)) is not None:
        source, tp, target = move
        assignment[source].remove(tp)
        assignment[target].append(tp)
    return {m: sorted(tps) for m, tps in assignment.items()}


def _best_move(
    assignment: Assignment,
    eligible: Mapping[TopicPartition, list[str]],
    previous_owner: Mapping[TopicPartition, str],
    rank: Mapping[str, int],
) -> tuple[str, TopicPartition, str] | None:
    """One step toward balance: from the most loaded member that can give, the partition it loses least by giving
    (one it did not own before, if any) to the least loaded eligible member with at least two fewer partitions.
    Each step lowers the sum of squared counts, so the loop ends."""
    for level in sorted({len(tps) for tps in assignment.values()}, reverse=True):
        moves: list[tuple[bool, int, TopicPartition, str, str]] = []
        for source, tps in assignment.items():
            if len(tps) != level:
                continue
            for tp in tps:
                targets = [m for m in eligible[tp] if len(assignment[m]) < level - 1]
                if targets:
                    target = min(targets, key=lambda m: (len(assignment[m]), rank[m]))
                    moves.append((previous_owner.get(tp) == source, rank[source], tp, source, target))
        if moves:
            _, _, tp, source, target = min(moves)
            return source, tp, target
    return None


ASSIGNORS: dict[str, Assignor] = {
    "range": range_assign,
    "roundrobin": roundrobin_assign,
    "sticky": sticky_assign,
}
"""Assignors by the protocol name Kafka clients use in JoinGroup."""
