"""Who is in a consumer group: its members, their protocols and sessions, and the group's timers.

`Member` is one member as the coordinator knows it (ids, timeouts, the protocols it offered with their metadata, its
assignment, and the tickets of its pending JoinGroup/SyncGroup long polls). `Group` is one group's membership and
bookkeeping: members by id, static members by instance id, member ids handed out with MEMBER_ID_REQUIRED that have
not joined yet, the SyncGroups still awaited, and the deadlines of its running timers. Its `state` is changed only by
`move()`, which applies `_state.transition()`; which event to apply, and when, is `rebalance.py`'s business.

Timers (`Group.next_timer`): the rebalance deadline (PreparingRebalance), the SyncGroup deadline (members that got a
JoinGroup reply must sync within the rebalance timeout), per member its session (last heartbeat + session timeout,
suspended while the member has a pending join or sync) or, for a member whose first join is pending,
`NEW_MEMBER_JOIN_TIMEOUT_MS`, and per member id handed out with MEMBER_ID_REQUIRED, its session timeout.

Invariants: `static_members` maps each static member's instance id to its current member id; `leader_id` names a
member whenever the group has members (removing the leader hands the role to the next member); a member is in
`pending_sync` only while the group is CompletingRebalance. Pure data and arithmetic: no clock, no I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from kafkalite.groups._state import GroupEvent, GroupState, transition
from kafkalite.groups.results import ErrorCode, JoinMember, JoinResult

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
"""Kafka's GroupCoordinator.NewMemberJoinTimeoutMs: a new member's pending first join holds it this long at most."""

Protocols = Sequence[tuple[str, bytes]]

MEMBER_ID_PREFIX_CHARS = 255
"""A new member id is its client id (or group instance id) and a UUID. The prefix is cut to this many characters so
that the id always fits the int16-length string it travels in, whatever client id a request carried."""


def first_of_each_name(protocols: Protocols) -> list[tuple[str, bytes]]:
    """A member's protocols with a repeated name kept once, at its first place (its metadata wins), as Kafka
    reads them: protocol selection counts and votes per name, so a repeat must not count twice."""
    seen: set[str] = set()
    unique = []
    for name, metadata in protocols:
        if name not in seen:
            seen.add(name)
            unique.append((name, metadata))
    return unique


@dataclass(slots=True)
class Member:
    """One member of a group: who it is, its timeouts, the protocols it offered, its assignment, its pending polls."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    last_heartbeat_ms: int
    new_member_deadline_ms: int
    is_new: bool = True
    assignment: bytes = b""
    join_ticket: int | None = None
    sync_ticket: int | None = None

    def supports(self, protocol_name: str) -> bool:
        return any(name == protocol_name for name, _ in self.protocols)

    def metadata(self, protocol_name: str) -> bytes:
        return next(meta for name, meta in self.protocols if name == protocol_name)

    def vote(self, candidates: Collection[str]) -> str:
        return next(name for name, _ in self.protocols if name in candidates)

    def session_deadline_ms(self) -> int | None:
        """When this member expires; None while the coordinator itself holds it up (rule 7)."""
        if self.join_ticket is not None:
            return self.new_member_deadline_ms if self.is_new else None
        if self.sync_ticket is not None:
            return None
        return self.last_heartbeat_ms + self.session_timeout_ms


@dataclass(frozen=True, slots=True)
class Takeover:
    """What a static member's takeover of its instance id replaced (the old member id and what came with it), kept
    with the group's stored form until that is written: a failed write undoes the takeover."""

    new_member_id: str
    old_member_id: str
    client_id: str
    client_host: str
    protocols: list[tuple[str, bytes]]
    rebalance_timeout_ms: int
    session_timeout_ms: int
    was_leader: bool


@dataclass(slots=True)
class Group:
    """One group: its state and generation, its members, and the deadlines of its timers."""

    group_id: str
    state: GroupState = GroupState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    pending_members: dict[str, int] = field(default_factory=dict)  # MEMBER_ID_REQUIRED id -> expiry
    static_members: dict[str, str] = field(default_factory=dict)  # group_instance_id -> member id
    pending_sync: set[str] = field(default_factory=set)
    join_deadline_ms: int | None = None
    initial_join: bool = False
    initial_remaining_ms: int = 0
    new_member_added: bool = False
    sync_deadline_ms: int | None = None
    keep_when_empty: bool = False

    def move(self, event: GroupEvent) -> None:
        self.state = transition(self.state, event)

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def all_joined(self) -> bool:
        return not self.pending_members and all(m.join_ticket is not None for m in self.members.values())

    def supports_protocols(self, protocol_type: str, names: Collection[str]) -> bool:
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(names)
        counts = Counter(name for m in self.members.values() for name, _ in m.protocols)
        return self.protocol_type == protocol_type and any(counts[n] == len(self.members) for n in names)

    def select_protocol(self) -> str:
        counts = Counter(name for m in self.members.values() for name, _ in m.protocols)
        candidates = {name for name, n in counts.items() if n == len(self.members)}
        votes = [m.vote(candidates) for m in self.members.values()]
        tally = Counter(votes)
        most = max(tally.values())
        return next(v for v in votes if tally[v] == most)

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.members[member.member_id] = member
        self.pending_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id)
        if member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_sync.discard(member_id)

    def join_members(self) -> tuple[JoinMember, ...]:
        assert self.protocol_name is not None
        name = self.protocol_name
        return tuple(JoinMember(m.member_id, m.group_instance_id, m.metadata(name)) for m in self.members.values())

    def join_result(self, member_id: str, *, with_members: bool) -> JoinResult:
        return JoinResult(
            error_code=ErrorCode.NONE,
            member_id=member_id,
            generation_id=self.generation_id,
            protocol_type=self.protocol_type,
            protocol_name=self.protocol_name,
            leader_id=self.leader_id or "",
            members=self.join_members() if with_members else (),
        )

    def next_timer(self) -> tuple[int, str, str] | None:
        """The earliest (deadline, kind, key) of this group's timers."""
        timers: list[tuple[int, str, str]] = []
        if self.join_deadline_ms is not None:
            timers.append((self.join_deadline_ms, "join", ""))
        if self.sync_deadline_ms is not None:
            timers.append((self.sync_deadline_ms, "sync", ""))
        for member in self.members.values():
            deadline = member.session_deadline_ms()
            if deadline is not None:
                timers.append((deadline, "session", member.member_id))
        timers.extend((deadline, "pending", member_id) for member_id, deadline in self.pending_members.items())
        return min(timers, default=None)
