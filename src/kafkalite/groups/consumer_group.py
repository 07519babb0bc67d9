"""One KIP-848 consumer group: its members, epochs, target assignment, and each member's reconciliation.

The consumer protocol (`group.protocol=consumer`, KIP-848) has no JoinGroup/SyncGroup rounds: members heartbeat,
and the coordinator moves each member from its current assignment towards the group's *target assignment* on its own
schedule. Three epochs order everything:

* the **group epoch** goes up whenever what the assignment depends on changes: a member joins or leaves, a
  subscription or the chosen assignor changes, or a subscribed topic's partition count changes;
* the **assignment epoch** is the group epoch the current target assignment was computed at;
* each **member epoch** is the assignment epoch the member has reconciled to (0 before its first assignment).

Group states are derived, never stored (Kafka's ConsumerGroup.maybeUpdateGroupState), and are what DescribeGroups,
ListGroups and ConsumerGroupDescribe report:

| state         | when                                                                     |
|---------------|--------------------------------------------------------------------------|
| `Empty`       | no members                                                               |
| `Assigning`   | group epoch > assignment epoch: the target is recomputed at the next heartbeat |
| `Reconciling` | the target is current, but some member is not at the assignment epoch or not Stable |
| `Stable`      | every member is Stable at the assignment epoch                           |
| `Dead`        | deleted (then dropped)                                                   |

Member reconciliation (`reconcile`, Kafka's CurrentAssignmentBuilder). Let *target* be the member's partitions in
the target assignment, *current* what it has; rows are tried in order:

    state                 condition                               next state: what the member gets
    unrevoked_partitions  owned partitions not sent, or still     unrevoked_partitions: unchanged (the member is
                          holding some pending revocation         fenced after its rebalance timeout)
    unrevoked_partitions  owned partitions hold none pending      pending revocation released, then the rows below
    stable                member epoch = assignment epoch         stable: unchanged
    any                   current - target is not empty           unrevoked_partitions: current ∩ target, same epoch;
                                                                  current - target becomes pending revocation
    any                   every target partition is free          stable at the assignment epoch: target
    any                   some target partitions are still owned  unreleased_partitions at the assignment epoch:
                          by others                               target minus those (they follow once released)

Invariant (checked by the tests after every step): every partition is owned, i.e. assigned or pending revocation,
by at most one member (`owners`). A partition reaches a new member only once its previous owner has revoked it
(its heartbeat no longer lists it), or has left or been fenced. Pure data: no clock, no I/O.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kafkalite.groups.server_assignors import TopicAssignment

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

TopicPartition = tuple[uuid.UUID, int]


class ConsumerGroupState(enum.Enum):
    """A consumer group's state; the value is Kafka's name for it."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class MemberState(enum.Enum):
    """Where a member is in its reconciliation (Kafka's MemberState names)."""

    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"


def partitions_of(assignment: Mapping[uuid.UUID, Iterable[int]]) -> set[TopicPartition]:
    return {(t, p) for t, ps in assignment.items() for p in ps}


def as_assignment(partitions: Iterable[TopicPartition]) -> TopicAssignment:
    by_topic: dict[uuid.UUID, set[int]] = {}
    for topic_id, p in partitions:
        by_topic.setdefault(topic_id, set()).add(p)
    return {t: frozenset(ps) for t, ps in by_topic.items()}


@dataclass(slots=True)
class ConsumerMember:
    """One member of a consumer group, as the coordinator knows it."""

    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: set[TopicPartition] = field(default_factory=set)
    pending_revocation: set[TopicPartition] = field(default_factory=set)
    session_deadline_ms: int = 0
    revocation_deadline_ms: int | None = None


@dataclass(slots=True)
class ConsumerGroup:
    """One consumer group: epochs, members, the target assignment and who owns which partition."""

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    target: dict[str, TopicAssignment] = field(default_factory=dict)  # member id -> target partitions
    owners: dict[TopicPartition, str] = field(default_factory=dict)  # partition -> member owning it
    subscription_metadata: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)  # topic -> (id, count)

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        reconciled = all(
            m.member_epoch == self.assignment_epoch and m.state is MemberState.STABLE
            for m in self.members.values()
            if m.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH
        )
        return ConsumerGroupState.STABLE if reconciled else ConsumerGroupState.RECONCILING

    def bump_epoch(self) -> None:
        self.group_epoch += 1

    def add(self, member: ConsumerMember) -> None:
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove(self, member_id: str) -> ConsumerMember:
        """Drop a member and release everything it owns (it left, or was fenced: it owns nothing any more)."""
        member = self.members.pop(member_id)
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]
        for tp in member.assigned | member.pending_revocation:
            if self.owners.get(tp) == member_id:
                del self.owners[tp]
        self.target.pop(member_id, None)
        return member

    def rename(self, old_id: str, new_id: str) -> ConsumerMember:
        """A static member came back under a new member id: it keeps its partitions, epoch and target."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = new_id
        for tp in member.assigned | member.pending_revocation:
            self.owners[tp] = new_id
        if old_id in self.target:
            self.target[new_id] = self.target.pop(old_id)
        return member


def reconcile(group: ConsumerGroup, member: ConsumerMember, owned: set[TopicPartition] | None, now_ms: int) -> None:
    """Move `member` one step towards its target (the table in the module docstring). `owned`: the partitions the
    heartbeat says the member holds, None when it did not say."""
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if owned is None or owned & member.pending_revocation:
            return
        for tp in member.pending_revocation:
            if group.owners.get(tp) == member.member_id:
                del group.owners[tp]
        member.pending_revocation = set()
        member.revocation_deadline_ms = None
    elif member.state is MemberState.STABLE and member.member_epoch == group.assignment_epoch:
        return
    target = partitions_of(group.target.get(member.member_id, {}))
    revoke = member.assigned - target
    if revoke:
        member.assigned -= revoke
        member.pending_revocation = revoke
        member.state = MemberState.UNREVOKED_PARTITIONS
        member.revocation_deadline_ms = now_ms + member.rebalance_timeout_ms
        return
    free = {tp for tp in target - member.assigned if group.owners.get(tp, member.member_id) == member.member_id}
    member.assigned |= free
    for tp in free:
        group.owners[tp] = member.member_id
    if member.member_epoch != group.assignment_epoch:
        member.previous_member_epoch = member.member_epoch
        member.member_epoch = group.assignment_epoch
    member.state = MemberState.STABLE if member.assigned == target else MemberState.UNRELEASED_PARTITIONS
