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
by at most one wherever the subscriptions allow it. When every member subscribes to the same topics (the usual
case) it is exact and linear: with P partitions over M members each gets P // M and P % M of them one more; a member
first keeps up to its quota of its previous partitions (the first members in id order that had more keep one extra
while extras are left), then the free partitions go, in order, to members under quota. With different
subscriptions: keep each member's previous partitions that are still valid (up to its fair share of the topics it
can take), give each unassigned partition (the most constrained first: fewest eligible members) to the
least-loaded eligible member, then move partitions from the most- to the least-loaded eligible member while two
loads differ by more than one; every move lowers the sum of squared loads, so this ends.

`range` (Kafka's server-side RangeAssignor): topic by topic, the partitions split into contiguous ranges over the
topic's subscribers sorted by member id: n partitions over m members gives each n // m, and the first n % m members
one more. Sticky: a member first keeps up to its quota of its previous partitions of the topic; the rest are handed
out in partition order to members still under quota, in member order. Members with identical subscriptions to
co-partitioned topics get the same partition numbers of each (joins work).
"""

from __future__ import annotations

import heapq
import math
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
    subscriptions = {frozenset(spec.subscribed & partition_counts.keys()) for spec in members.values()}
    if len(subscriptions) == 1:
        return _uniform_homogeneous(members, partition_counts, sorted(subscriptions.pop()))
    return _uniform_general(members, partition_counts)


def _uniform_homogeneous(
    members: Mapping[str, AssignmentSpec], partition_counts: Mapping[uuid.UUID, int], topics: list[uuid.UUID]
) -> dict[str, TopicAssignment]:
    ids = sorted(members)
    partitions = [(t, p) for t in topics for p in range(partition_counts[t])]
    base, extras = divmod(len(partitions), len(ids))
    owned: dict[str, set[tuple[uuid.UUID, int]]] = {m: set() for m in ids}
    taken: set[tuple[uuid.UUID, int]] = set()
    for member_id in ids:
        previous = sorted(
            (t, p)
            for t, ps in members[member_id].current.items()
            if t in partition_counts
            for p in ps
            if p < partition_counts[t] and t in members[member_id].subscribed
        )
        keep = base + (1 if extras and len(previous) > base else 0)
        extras -= keep - base
        owned[member_id].update(previous[:keep])
        taken.update(previous[:keep])
    free = iter(tp for tp in partitions if tp not in taken)
    for member_id in ids:
        while len(owned[member_id]) < base:
            owned[member_id].add(next(free))
    for member_id in ids:
        if not extras:
            break
        if len(owned[member_id]) == base:
            owned[member_id].add(next(free))
            extras -= 1
    return _to_assignment(owned)


def _uniform_general(
    members: Mapping[str, AssignmentSpec], partition_counts: Mapping[uuid.UUID, int]
) -> dict[str, TopicAssignment]:
    ids = sorted(members)
    # Members with the same subscription are interchangeable: one heap of (load, member id) per subscription finds
    # "the least-loaded member that can take this topic" in O(subscriptions · log members) instead of O(members).
    class_of = {m: frozenset(members[m].subscribed & partition_counts.keys()) for m in ids}
    heaps: dict[frozenset[uuid.UUID], list[tuple[int, str]]] = {c: [] for c in class_of.values()}
    takers = {t: [c for c in heaps if t in c] for t in sorted(partition_counts)}
    eligible = {t: sum(1 for m in ids if t in class_of[m]) for t in takers}
    owned: dict[str, set[tuple[uuid.UUID, int]]] = {m: set() for m in ids}
    taken: set[tuple[uuid.UUID, int]] = set()
    for member_id in ids:
        cap = math.ceil(sum(partition_counts[t] / eligible[t] for t in class_of[member_id]))
        for topic_id, partitions in sorted(members[member_id].current.items()):
            if topic_id not in class_of[member_id]:
                continue
            for p in sorted(partitions):
                tp = (topic_id, p)
                if p < partition_counts[topic_id] and tp not in taken and len(owned[member_id]) < cap:
                    owned[member_id].add(tp)
                    taken.add(tp)

    def changed(member_id: str) -> None:
        heapq.heappush(heaps[class_of[member_id]], (len(owned[member_id]), member_id))

    def lightest(topic_id: uuid.UUID) -> str | None:
        best: tuple[int, str] | None = None
        for subscription in takers[topic_id]:
            heap = heaps[subscription]
            while heap and heap[0][0] != len(owned[heap[0][1]]):  # pushed before the member's load changed
                heapq.heappop(heap)
            if heap and (best is None or heap[0] < best):
                best = heap[0]
        return None if best is None else best[1]

    for member_id in ids:
        changed(member_id)
    unassigned = sorted(
        (eligible[t], t, p) for t in takers if eligible[t] for p in range(partition_counts[t]) if (t, p) not in taken
    )
    for _, topic_id, p in unassigned:
        chosen = lightest(topic_id)
        assert chosen is not None
        owned[chosen].add((topic_id, p))
        changed(chosen)
    moved = True
    while moved:
        moved = False
        for donor in sorted(ids, key=lambda m: (-len(owned[m]), m)):
            for tp in sorted(owned[donor], reverse=True):
                target = lightest(tp[0])
                if target is not None and len(owned[target]) < len(owned[donor]) - 1:
                    owned[donor].remove(tp)
                    owned[target].add(tp)
                    changed(donor)
                    changed(target)
                    moved = True
    return _to_assignment(owned)


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
