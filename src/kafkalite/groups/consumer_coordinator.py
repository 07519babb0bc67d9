"""The KIP-848 consumer-group coordinator: every `group.protocol=consumer` group of the broker, sans-I/O.

`ConsumerGroupCoordinator` answers ConsumerGroupHeartbeat and ConsumerGroupDescribe and checks the OffsetCommit and
OffsetFetch of consumer-protocol members. It holds no clock and never blocks: every call takes `now_ms`, and
`tick(now_ms)` (due at `next_deadline_ms()`) fences members whose session or revocation time ran out. Unlike the
classic protocol nothing is long-polled: a heartbeat is answered at once.

Rules of a heartbeat (Kafka's GroupMetadataManager.consumerGroupHeartbeat; one group, one member):

1. The request is checked first: a group id; a member id (v1+: the client makes it, v0: the coordinator does on
   epoch 0); on epoch 0 a rebalance timeout, a subscription (topic names or a regex) and no owned partitions;
   epoch ≥ -2, and -2 only with an instance id. Anything else is INVALID_REQUEST. An assignor the broker does not
   offer is UNSUPPORTED_ASSIGNOR; a regex RE2 cannot compile is INVALID_REGULAR_EXPRESSION.
2. Epoch 0 joins, creating the group if needed (GROUP_MAX_SIZE_REACHED past `max_size`). A static member whose
   instance id is held by a member that did not leave with epoch -2 gets UNRELEASED_INSTANCE_ID; one coming back
   after -2 takes over the old member: its partitions, epoch and target. A member id that is already in the group
   rejoins from scratch (it was fenced, or lost its state: it owns nothing).
3. Epoch > 0 must name a member (else UNKNOWN_MEMBER_ID; an unknown group, e.g. after a restart, too) with its
   instance id (else FENCED_INSTANCE_ID) and its current epoch, or its previous one when the owned partitions it
   reports are a subset of what it has (the answer to its last heartbeat was lost); else FENCED_MEMBER_EPOCH.
4. Epoch -1 leaves: the member is removed and its partitions released. Epoch -2 (static) leaves but keeps its
   place for `session_timeout_ms`, so that the instance coming back keeps its assignment.
5. The group epoch goes up when a member joins or leaves, a subscription or assignor changes, or a subscribed topic's
   partition count changes; then the target assignment is computed again by the assignor most members asked for
   (ties and no preference: the first of `assignors`), and the assignment epoch becomes the group epoch.
6. The member reconciles one step (`consumer_group.reconcile`). The answer carries its epoch, the heartbeat
   interval and, when it changed or the member joined or reported something else, its assignment.
7. Sessions: a member not heard from for `session_timeout_ms` is fenced (removed, group epoch + 1); one that has not
   revoked within its rebalance timeout is fenced too.

Offsets (KIP-848 turned OffsetCommit's generation into the member epoch): a commit or fetch naming a member must name
a current member (UNKNOWN_MEMBER_ID) at its current epoch (STALE_MEMBER_EPOCH); OffsetCommit below v9 from a
consumer-protocol member is UNSUPPORTED_VERSION. A commit without a member (epoch < 0) is allowed while the group
is Empty.

Restarts: the coordinator names the groups a call may have changed (`take_changed`); the driver stores each group
(`group`) as Kafka's consumer-group records and, at start, hands the stored groups back (`restore`).
"""

from __future__ import annotations

import functools
import uuid
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafkalite.groups.consumer_group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroup,
    ConsumerGroupState,
    ConsumerMember,
    MemberState,
    TopicPartition,
    as_assignment,
    partitions_of,
    reconcile,
)
from kafkalite.groups.results import ErrorCode
from kafkalite.groups.server_assignors import SERVER_ASSIGNORS, AssignmentSpec, TopicAssignment

if TYPE_CHECKING:
    import re2

MAX_ID_BYTES = 32767
"""The longest group or member id, in UTF-8 bytes: the stored records' keys hold them as int16-length strings."""

TopicImage = Mapping[str, tuple[uuid.UUID, int]]
"""The broker's topics as the coordinator sees them: name → (topic id, partition count)."""


@dataclass(frozen=True, slots=True)
class ConsumerGroupConfig:
    """Settings under Kafka's names: group.consumer.session.timeout.ms, group.consumer.heartbeat.interval.ms,
    group.consumer.assignors (the first is the default), group.consumer.max.size (None: unlimited)."""

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    assignors: tuple[str, ...] = ("uniform", "range")
    max_size: int | None = None
    new_member_id: Callable[[], str] = field(default=lambda: str(uuid.uuid4()))


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    """ConsumerGroupHeartbeat's fields (None: "not changed since the last heartbeat", as on the wire)."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: tuple[tuple[uuid.UUID, tuple[int, ...]], ...] | None = None
    client_id: str = ""
    client_host: str = ""
    coordinator_generates_member_id: bool = False  # v0: an empty member id on epoch 0 gets one from us


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    error_code: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: TopicAssignment | None = None


@dataclass(frozen=True, slots=True)
class DescribedMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: TopicAssignment
    target_assignment: TopicAssignment


@dataclass(frozen=True, slots=True)
class DescribedConsumerGroup:
    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: tuple[DescribedMember, ...]


class _Refused(Exception):
    def __init__(self, error_code: int, message: str | None = None) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


@functools.lru_cache(maxsize=256)
def compile_regex(pattern: str) -> re2._Regexp:
    """A subscription regex, RE2 syntax (as Kafka's RE2/J), matched against whole topic names. RE2 matches in
    linear time, so no pattern a client sends can hold the event loop (Python's `re` backtracks: `(a+)+b`)."""
    import re2  # imported where used, as `scramp` is: it costs every start-up 10 ms, and few groups use a regex

    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error as e:
        detail = e.args[0].decode(errors="replace") if e.args and isinstance(e.args[0], bytes) else str(e)
        raise _Refused(ErrorCode.INVALID_REGULAR_EXPRESSION, f"Invalid regular expression {pattern!r}: {detail}") from e


class ConsumerGroupCoordinator:
    """Every consumer-protocol group of one broker. See the module docstring for the rules."""

    def __init__(self, config: ConsumerGroupConfig | None = None) -> None:
        self.config = config or ConsumerGroupConfig()
        unknown = [name for name in self.config.assignors if name not in SERVER_ASSIGNORS]
        if not self.config.assignors or unknown:
            raise ValueError(f"group.consumer.assignors must name some of {sorted(SERVER_ASSIGNORS)}, not {unknown}")
        self._groups: dict[str, ConsumerGroup] = {}
        # Groups a call may have changed, for the driver to store: group id -> the member ids whose records may have
        # changed, or None when the whole group may have (an epoch moved, a member came or went).
        self._changed: dict[str, set[str] | None] = {}

    # ---- what a restart keeps ------------------------------------------------------------------------------------

    def take_changed(self) -> list[tuple[str, frozenset[str] | None]]:
        """The groups calls may have changed since the last take, each with the members whose records may have
        changed, or None for the whole group (the driver stores what did change)."""
        changed = [(g, None if members is None else frozenset(members)) for g, members in self._changed.items()]
        self._changed.clear()
        return changed

    def _mark(self, group_id: str, member_id: str | None = None) -> None:
        """`group_id` may have changed: only `member_id`'s records, or (None) anything."""
        if member_id is None:
            self._changed[group_id] = None
            return
        members = self._changed.setdefault(group_id, set())
        if members is not None:
            members.add(member_id)

    def mark_changed(self, group_id: str) -> None:
        """Have the driver look at this group's stored form again (records of a group it could not restore)."""
        self._mark(group_id)

    def group(self, group_id: str) -> ConsumerGroup | None:
        """The group itself, for the driver to store; None when there is none (deleted, or never made)."""
        return self._groups.get(group_id)

    def restore(self, group: ConsumerGroup, *, now_ms: int) -> None:
        """Put back a group as it was stored (at start, before any request): its members, epochs, target and
        current assignments. Every member's session starts at `now_ms`, a revocation in progress gets its rebalance
        timeout again, and what is derived (owners, static members, the assignor) is derived again. A group
        already known is left as it is."""
        if group.group_id in self._groups:
            return
        for member in group.members.values():
            member.session_deadline_ms = now_ms + self.config.session_timeout_ms
            if member.state is MemberState.UNREVOKED_PARTITIONS:
                member.revocation_deadline_ms = now_ms + member.rebalance_timeout_ms
            if member.instance_id is not None:
                group.static_members[member.instance_id] = member.member_id
            for tp in member.assigned | member.pending_revocation:
                group.owners[tp] = member.member_id
        group.assignor_name = self._assignor_for(group)
        self._groups[group.group_id] = group

    # ---- ConsumerGroupHeartbeat ----------------------------------------------------------------------------------

    def heartbeat(self, req: HeartbeatRequest, *, topics: TopicImage, now_ms: int) -> HeartbeatResult:
        self.tick(now_ms)
        group = self._groups.get(req.group_id)
        before = None if group is None else (group.group_epoch, group.assignment_epoch, list(group.members))
        try:
            result = self._heartbeat(req, topics, now_ms)
        except _Refused as refused:
            result = HeartbeatResult(refused.error_code, refused.message, req.member_id or None, 0)
        after = self._groups.get(req.group_id)
        if (
            after is not None
            and after is group
            and before == (group.group_epoch, group.assignment_epoch, list(group.members))
        ):
            if result.error_code == 0 and result.member_id:
                self._mark(req.group_id, result.member_id)  # only this member's records can have changed
        elif after is not None or group is not None:
            self._mark(req.group_id)
        return result

    def _heartbeat(self, req: HeartbeatRequest, topics: TopicImage, now_ms: int) -> HeartbeatResult:
        self._check_request(req)
        if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._leave(req, now_ms)
        group = self._groups.get(req.group_id)
        if req.member_epoch == 0:
            if group is None:
                group = self._groups[req.group_id] = ConsumerGroup(req.group_id, assignor_name=self.config.assignors[0])
            member, changed = self._join(group, req, now_ms)
            joined = True
        else:
            if group is None or req.member_id not in group.members:
                raise _Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not in group {req.group_id}.")
            member, joined, changed = group.members[req.member_id], False, False
            self._check_epoch(member, req)
        owned = None if req.owned is None else {(t, p) for t, ps in req.owned for p in ps}
        before = set(member.assigned)
        changed |= self._update_subscription(member, req)
        changed |= self._refresh_metadata(group, topics)
        if changed:
            group.bump_epoch()
        if group.group_epoch > group.assignment_epoch:
            self._compute_target(group, topics)
        reconcile(group, member, owned, now_ms)
        member.session_deadline_ms = now_ms + self.config.session_timeout_ms
        send = joined or member.assigned != before or (owned is not None and owned != member.assigned)
        return HeartbeatResult(
            ErrorCode.NONE,
            None,
            member.member_id,
            member.member_epoch,
            self.config.heartbeat_interval_ms,
            as_assignment(member.assigned) if send else None,
        )

    def _check_request(self, req: HeartbeatRequest) -> None:
        invalid = None
        if not req.group_id:
            invalid = "GroupId can't be empty."
        elif req.instance_id == "":
            invalid = "InstanceId can't be empty."
        elif req.rack_id == "":
            invalid = "RackId can't be empty."
        elif req.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            invalid = f"MemberEpoch {req.member_epoch} is invalid."
        elif req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH and req.instance_id is None:
            invalid = "InstanceId can't be null when leaving as a static member."
        elif not req.member_id and not (req.member_epoch == 0 and req.coordinator_generates_member_id):
            invalid = "MemberId can't be empty."
        elif len(req.group_id.encode()) > MAX_ID_BYTES or len(req.member_id.encode()) > MAX_ID_BYTES:
            invalid = f"GroupId and MemberId can't be longer than {MAX_ID_BYTES} bytes."
        elif req.member_epoch == 0:
            if req.rebalance_timeout_ms <= 0:
                invalid = "RebalanceTimeoutMs must be provided when joining."
            elif req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
                invalid = "SubscribedTopicNames or SubscribedTopicRegex must be set when joining."
            elif req.owned:
                invalid = "TopicPartitions must be empty when (re-)joining."
        if invalid is not None:
            raise _Refused(ErrorCode.INVALID_REQUEST, invalid)
        if req.server_assignor is not None and req.server_assignor not in self.config.assignors:
            raise _Refused(ErrorCode.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {req.server_assignor} is not supported.")
        if req.subscribed_topic_regex:
            compile_regex(req.subscribed_topic_regex)

    def _join(self, group: ConsumerGroup, req: HeartbeatRequest, now_ms: int) -> tuple[ConsumerMember, bool]:
        """The joining member, and whether the group's membership changed (a static member taking its old place
        back does not change it)."""
        member_id = req.member_id or self.config.new_member_id()
        if req.instance_id is not None and req.instance_id in group.static_members:
            holder = group.members[group.static_members[req.instance_id]]
            if holder.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH and holder.member_id != member_id:
                raise _Refused(
                    ErrorCode.UNRELEASED_INSTANCE_ID,
                    f"Static member {holder.member_id} with instance id {req.instance_id} is still in group.",
                )
            if holder.member_id != member_id:
                member = group.rename(holder.member_id, member_id)
                member.member_epoch = member.previous_member_epoch if member.previous_member_epoch > 0 else 0
                member.client_id, member.client_host = req.client_id, req.client_host
                member.rebalance_timeout_ms = req.rebalance_timeout_ms
                return member, False
        if member_id in group.members:
            group.remove(member_id)
        limit = self.config.max_size
        if limit is not None and len(group.members) >= limit:
            raise _Refused(
                ErrorCode.GROUP_MAX_SIZE_REACHED, f"The consumer group has reached its maximum size {limit}."
            )
        member = ConsumerMember(
            member_id=member_id,
            instance_id=req.instance_id,
            rack_id=req.rack_id,
            client_id=req.client_id,
            client_host=req.client_host,
            rebalance_timeout_ms=req.rebalance_timeout_ms,
            session_deadline_ms=now_ms + self.config.session_timeout_ms,
        )
        group.add(member)
        return member, True

    def _check_epoch(self, member: ConsumerMember, req: HeartbeatRequest) -> None:
        if req.instance_id is not None and member.instance_id != req.instance_id:
            raise _Refused(ErrorCode.FENCED_INSTANCE_ID, f"Instance id {req.instance_id} is not member's.")
        epoch = req.member_epoch
        if epoch == member.member_epoch:
            return
        if epoch == member.previous_member_epoch and req.owned is not None:
            owned = {(t, p) for t, ps in req.owned for p in ps}
            if owned <= member.assigned | member.pending_revocation:
                return
        raise _Refused(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a greater member epoch ({member.member_epoch}) than the one known by "
            f"the client ({epoch}), or the client is ahead."
            if epoch < member.member_epoch
            else f"The member epoch {epoch} is ahead of the coordinator's ({member.member_epoch}).",
        )

    def _update_subscription(self, member: ConsumerMember, req: HeartbeatRequest) -> bool:
        changed = False
        names = None if req.subscribed_topic_names is None else tuple(sorted(set(req.subscribed_topic_names)))
        if names is not None and names != member.subscribed_topic_names:
            member.subscribed_topic_names = names
            changed = True
        if req.subscribed_topic_regex is not None:
            regex = req.subscribed_topic_regex or None
            changed |= regex != member.subscribed_topic_regex
            member.subscribed_topic_regex = regex
        if req.server_assignor is not None and req.server_assignor != member.server_assignor:
            member.server_assignor = req.server_assignor
            changed = True
        if req.rebalance_timeout_ms > 0:
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        return changed

    def _subscribed(self, member: ConsumerMember, topics: TopicImage) -> set[str]:
        names = {n for n in member.subscribed_topic_names if n in topics}
        if member.subscribed_topic_regex:
            pattern = compile_regex(member.subscribed_topic_regex)
            names.update(n for n in topics if not n.startswith("__") and pattern.fullmatch(n))
        return names

    def _refresh_metadata(self, group: ConsumerGroup, topics: TopicImage) -> bool:
        subscribed: set[str] = set()
        for member in group.members.values():
            subscribed |= self._subscribed(member, topics)
        metadata = {name: topics[name] for name in sorted(subscribed)}
        if metadata == group.subscription_metadata:
            return False
        group.subscription_metadata = metadata
        return True

    def _assignor_for(self, group: ConsumerGroup) -> str:
        """The assignor most members ask for (ties and no preference: the first of `assignors`)."""
        wanted = Counter(m.server_assignor for m in group.members.values() if m.server_assignor is not None)
        if not wanted:
            return self.config.assignors[0]
        most = max(wanted.values())
        return next(a for a in self.config.assignors if wanted.get(a) == most)

    def _compute_target(self, group: ConsumerGroup, topics: TopicImage) -> None:
        name = self._assignor_for(group)
        specs = {
            m.member_id: AssignmentSpec(
                frozenset(topics[n][0] for n in self._subscribed(m, topics)), group.target.get(m.member_id, {})
            )
            for m in group.members.values()
        }
        counts = {topic_id: count for topic_id, count in group.subscription_metadata.values()}
        group.target = SERVER_ASSIGNORS[name](specs, counts)
        group.assignor_name = name
        group.assignment_epoch = group.group_epoch

    def _leave(self, req: HeartbeatRequest, now_ms: int) -> HeartbeatResult:
        group = self._groups.get(req.group_id)
        if req.instance_id is not None:
            member_id = None if group is None else group.static_members.get(req.instance_id)
            if group is None or member_id is None:
                raise _Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
            if member_id != req.member_id:
                raise _Refused(ErrorCode.FENCED_INSTANCE_ID, f"Instance id {req.instance_id} is another member's.")
        elif group is None or req.member_id not in group.members:
            raise _Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not in group {req.group_id}.")
        if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            member = group.members[req.member_id]
            if member.member_epoch > 0:
                member.previous_member_epoch = member.member_epoch
            member.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH
            member.session_deadline_ms = now_ms + self.config.session_timeout_ms
        else:
            group.remove(req.member_id)
            group.bump_epoch()
        return HeartbeatResult(ErrorCode.NONE, None, req.member_id, req.member_epoch, 0, None)

    # ---- timers --------------------------------------------------------------------------------------------------

    def next_deadline_ms(self) -> int | None:
        deadlines = [d for g in self._groups.values() for m in g.members.values() for d in _deadlines(m)]
        return min(deadlines, default=None)

    def tick(self, now_ms: int) -> list[tuple[str, str]]:
        """Fence every member whose session or revocation deadline passed; returns (group, member) fenced."""
        fenced = []
        for group in self._groups.values():
            for member in list(group.members.values()):
                if any(d <= now_ms for d in _deadlines(member)):
                    group.remove(member.member_id)
                    group.bump_epoch()
                    fenced.append((group.group_id, member.member_id))
                    self._mark(group.group_id)
        return fenced

    # ---- offsets -------------------------------------------------------------------------------------------------

    def validate_offset_commit(self, group_id: str, member_id: str, member_epoch: int, *, api_version: int) -> int:
        group = self._groups[group_id]
        if member_epoch < 0 and not member_id and not group.members:
            return ErrorCode.NONE
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if api_version < 9:
            return ErrorCode.UNSUPPORTED_VERSION
        return ErrorCode.NONE if member_epoch == member.member_epoch else ErrorCode.STALE_MEMBER_EPOCH

    def validate_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> int:
        group = self._groups[group_id]
        if member_epoch < 0 and not member_id:
            return ErrorCode.NONE
        member = group.members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.NONE if member_epoch == member.member_epoch else ErrorCode.STALE_MEMBER_EPOCH

    # ---- describe, list, delete ----------------------------------------------------------------------------------

    def __contains__(self, group_id: object) -> bool:
        return group_id in self._groups

    def is_empty(self, group_id: str) -> bool:
        return not self._groups[group_id].members

    def assignment_epoch(self, group_id: str) -> int:
        """The epoch of the group's current target assignment (-1: no such group)."""
        group = self._groups.get(group_id)
        return -1 if group is None else group.assignment_epoch

    def state(self, group_id: str) -> ConsumerGroupState:
        group = self._groups.get(group_id)
        return ConsumerGroupState.DEAD if group is None else group.state

    def describe(self, group_id: str, names: Mapping[uuid.UUID, str]) -> DescribedConsumerGroup | None:
        """ConsumerGroupDescribe of one group (None: no such consumer group); `names` maps topic ids to names."""
        group = self._groups.get(group_id)
        if group is None:
            return None
        members = tuple(
            DescribedMember(
                member_id=m.member_id,
                instance_id=m.instance_id,
                rack_id=m.rack_id,
                member_epoch=m.member_epoch,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=m.subscribed_topic_names,
                subscribed_topic_regex=m.subscribed_topic_regex,
                assignment=_known(as_assignment(m.assigned), names),
                target_assignment=_known(group.target.get(m.member_id, {}), names),
            )
            for m in group.members.values()
        )
        return DescribedConsumerGroup(
            group_id, group.state.value, group.group_epoch, group.assignment_epoch, group.assignor_name, members
        )

    def list_groups(self, states: Collection[str] | None = None) -> list[tuple[str, str]]:
        """(group id, state) of every consumer group, only those in `states` when given (case-insensitive)."""
        wanted = {s.lower() for s in states} if states else None
        return [
            (g.group_id, g.state.value)
            for g in self._groups.values()
            if wanted is None or g.state.value.lower() in wanted
        ]

    def subscribed_topics(self, group_id: str) -> frozenset[str]:
        return frozenset(self._groups[group_id].subscription_metadata)

    def delete_group(self, group_id: str) -> int:
        group = self._groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        del self._groups[group_id]
        self._mark(group_id)
        return ErrorCode.NONE

    def owned_partitions(self, group_id: str) -> dict[TopicPartition, str]:
        """Partition → the member that owns it (assigned or pending revocation): the tests' invariant check."""
        return dict(self._groups[group_id].owners)


def _deadlines(member: ConsumerMember) -> list[int]:
    deadlines = [member.session_deadline_ms]
    if member.state is MemberState.UNREVOKED_PARTITIONS and member.revocation_deadline_ms is not None:
        deadlines.append(member.revocation_deadline_ms)
    return deadlines


def _known(assignment: Mapping[uuid.UUID, frozenset[int]], names: Mapping[uuid.UUID, str]) -> TopicAssignment:
    return {t: ps for t, ps in assignment.items() if t in names and ps}


__all__ = [
    "ConsumerGroupConfig",
    "ConsumerGroupCoordinator",
    "DescribedConsumerGroup",
    "DescribedMember",
    "HeartbeatRequest",
    "HeartbeatResult",
    "TopicImage",
    "compile_regex",
    "partitions_of",
]
