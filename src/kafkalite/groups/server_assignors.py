"""The server-side assignors of KIP-848 consumer groups: `uniform` and `range`.

In the consumer protocol the coordinator computes every member's *target assignment* (KIP-848, "Assignors"): the
client only names an assignor (`server_assignor`) or takes the broker's first one (`group.consumer.assignors`).
An assignor is a pure function of

* the members, each with the topic ids it subscribes to and its current target (for stickiness), and
* the partition count of every subscribed topic,

returning member id → {topic id → partitions}. Both assignors here are deterministic (members and partitions are
visited in sorted order), sticky (a partition stays with its previous owner whenever the balance rule allows it) and
give every partition of a subscribed topic to exactly one member subscribed to that topic.

`uniform` (Kafka's UniformAssignor): every partition of every subscribed topic, spread so that member loads differ
by at most one wherever the subscriptions allow it. Steps: keep each member's previous partitions that are still
valid; give each unassigned partition (the most constrained first: fewest eligible members) to the least-loaded
eligible member; then move partitions from the most- to the least-loaded eligible member while two loads differ by
more than one. Every move lowers the sum of squared loads, so the last step ends.

`range` (Kafka's server-side RangeAssignor): topic by topic, the partitions split into contiguous ranges over the
topic's subscribers sorted by member id: n partitions over m members gives each n // m, and the first n % m members
one more. Sticky: a member first keeps up to its quota of its previous partitions of the topic; the rest are handed
out in partition order to members still under quota, in member order. Members with identical subscriptions to
co-partitioned topics get the same partition numbers of each (joins work).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

TopicAssignment = dict[uuid.UUID, frozenset[int]]
"""One member's partitions: topic id → partition numbers."""


@dataclass(frozen=True, slots=True)
class AssignmentSpec:
    """What an assignor knows of one member: its subscription (topic ids) and its current target assignment."""

    subscribed: frozenset[uuid.UUID]
    current: Mapping[uuid.UUID, frozenset[int]] = field(default_factory=dict)


ServerAssignor = Callable[[Mapping[str, AssignmentSpec], Mapping[uuid.UUID, int]], dict[str, TopicAssignment]]


def _to_assignment(owned: dict[str, set[tuple[uuid.UUID, int]]]) -> dict[str, TopicAssignment]:
    result: dict[str, TopicAssignment] = {}
    for member_id, partitions in owned.items():
        by_topic: dict[uuid.UUID, set[int]] = {}
        for topic_id, partition in partitions:
            by_topic.setdefault(topic_id, set()).add(partition)
        result[member_id] = {t: frozenset(ps) for t, ps in by_topic.items()}
    return result


def uniform_assign(
    members: Mapping[str, AssignmentSpec], partition_counts: Mapping[uuid.UUID, int]
) -> dict[str, TopicAssignment]:
    """KIP-848's `uniform` assignor (see the module docstring)."""
    ids = sorted(members)
    eligible: dict[uuid.UUID, list[str]] = {
        t: [m for m in ids if t in members[m].subscribed] for t in sorted(partition_counts)
    }
    owned: dict[str, set[tuple[uuid.UUID, int]]] = {m: set() for m in ids}
    taken: set[tuple[uuid.UUID, int]] = set()
    for member_id in ids:
        spec = members[member_id]
        for topic_id, partitions in sorted(spec.current.items()):
            if topic_id not in spec.subscribed or topic_id not in partition_counts:
                continue
            for p in sorted(partitions):
                tp = (topic_id, p)
                if p < partition_counts[topic_id] and tp not in taken:
                    owned[member_id].add(tp)
                    taken.add(tp)
    unassigned = [
        (len(subscribers), topic_id, p)
        for topic_id, subscribers in eligible.items()
        if subscribers
        for p in range(partition_counts[topic_id])
        if (topic_id, p) not in taken
    ]
    for _, topic_id, p in sorted(unassigned):
        chosen = min(eligible[topic_id], key=lambda m: (len(owned[m]), m))
        owned[chosen].add((topic_id, p))
    _balance(owned, eligible)
    return _to_assignment(owned)


def _balance(owned: dict[str, set[tuple[uuid.UUID, int]]], eligible: Mapping[uuid.UUID, list[str]]) -> None:
    """Move partitions from heavier to lighter eligible members until no move lowers the imbalance."""
    moved = True
    while moved:
        moved = False
        for donor in sorted(owned, key=lambda m: (-len(owned[m]), m)):
            for tp in sorted(owned[donor], reverse=True):
                lighter = [m for m in eligible[tp[0]] if len(owned[m]) < len(owned[donor]) - 1]
                if lighter:
                    target = min(lighter, key=lambda m: (len(owned[m]), m))
                    owned[donor].remove(tp)
                    owned[target].add(tp)
                    moved = True
                    break
            if moved:
                break


def range_assign(
    members: Mapping[str, AssignmentSpec], partition_counts: Mapping[uuid.UUID, int]
) -> dict[str, TopicAssignment]:
    """KIP-848's `range` assignor (see the module docstring)."""
    result: dict[str, TopicAssignment] = {m: {} for m in members}
    for topic_id in sorted(partition_counts):
        subscribers = sorted(m for m, spec in members.items() if topic_id in spec.subscribed)
        if not subscribers:
            continue
        count = partition_counts[topic_id]
        base, extra = divmod(count, len(subscribers))
        quotas = {m: base + (1 if i < extra else 0) for i, m in enumerate(subscribers)}
        given: dict[str, list[int]] = {m: [] for m in subscribers}
        taken: set[int] = set()
        for member_id in subscribers:
            previous = sorted(p for p in members[member_id].current.get(topic_id, ()) if p < count)
            for p in previous[: quotas[member_id]]:
                given[member_id].append(p)
                taken.add(p)
        free = iter(p for p in range(count) if p not in taken)
        for member_id in subscribers:
            while len(given[member_id]) < quotas[member_id]:
                given[member_id].append(next(free))
        for member_id, partitions in given.items():
            if partitions:
                result[member_id][topic_id] = frozenset(partitions)
    return result


SERVER_ASSIGNORS: dict[str, ServerAssignor] = {"uniform": uniform_assign, "range": range_assign}
"""The assignors `group.consumer.assignors` may name, by KIP-848's names."""
