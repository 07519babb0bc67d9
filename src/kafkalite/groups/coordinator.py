"""The group coordinator: every consumer group of the broker, as a sans-I/O state machine (Kafka's classic protocol).

This module answers the group APIs. The rules and the state table are in `_state.py`; who is in a group and its
timers in `membership.py`; the rebalance (every state change, the timers firing, the reply outbox) in
`rebalance.py`, whose `RebalanceMachine` `GroupCoordinator` extends. It does no I/O, holds no clock and never blocks.
The caller (the wire handlers and the embedded consumer, through one async driver) feeds it:

* requests — `join()`, `sync()`, `heartbeat()`, `leave()`, `validate_offset_commit()`, `describe()`,
  `list_groups()`, `delete_group()` — each with the current time `now_ms` (a monotonic clock in milliseconds);
* the passing of time — `tick(now_ms)`, to be called at or after `next_deadline_ms()`;
* at start, the groups stored before — `restore()`.

Long polls. JoinGroup and SyncGroup are long polls in Kafka. `join()` returns either its `JoinResult` at once or a
`JoinPending(ticket)`; `sync()` likewise returns a `SyncResult` or a `SyncPending(ticket)`. A pending reply is
completed later by some other call (another member's join, the leader's sync, a leave, a timer in `tick`), which puts
`(ticket, result)` into the outbox; the driver drains it with `take_completed()` after every call and answers the
request that owns the ticket. Every ticket is completed exactly once: with its result, or with an error when its member
is removed (UNKNOWN_MEMBER_ID), fenced by a static member taking its instance id (FENCED_INSTANCE_ID), sent back to
rejoin (REBALANCE_IN_PROGRESS), or superseded by a newer JoinGroup/SyncGroup of the same member
(REBALANCE_IN_PROGRESS; Kafka leaves that older request unanswered).

Time. Every call first fires the timers that are due at `now_ms`, each as if at its own deadline and in deadline
order, so outcomes do not depend on how often the driver ticks; a timer due "now" (initial rebalance delay 0) fires
before the call returns, which is why a lone consumer's first join completes at once. The timers are listed in
`membership.py`.

Invariants: a group in the map is never Dead (deleting drops it); every member has at most one pending join ticket
and one pending sync ticket; `leader_id` names a member whenever the group has members; pending syncs exist only in
CompletingRebalance; pending joins only in PreparingRebalance.

Restarts. What a group keeps across one (`stored_group.py`) leaves through a second outbox, `take_to_store()`, which
the driver writes to `__consumer_offsets` and then reports on with `store_result()` (a failed write undoes a static
member's takeover, as in Kafka); at start it hands the stored groups back with `restore()`.

Differences from Kafka, on purpose: Dead groups are dropped at once; the Stable-group fast path for a static member
rejoining with a new member id answers like JoinGroup < v9 (no skip_assignment).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from kafkalite.errors import GroupError
from kafkalite.groups._state import GroupEvent, GroupState
from kafkalite.groups.consumer_protocol import decode_subscription
from kafkalite.groups.membership import (
    MEMBER_ID_PREFIX_CHARS,
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    Group,
    Member,
    Protocols,
    Takeover,
    first_of_each_name,
)
from kafkalite.groups.rebalance import GroupConfig, RebalanceMachine, StoreEntry, join_error
from kafkalite.groups.results import (
    ErrorCode,
    GroupDescription,
    GroupListing,
    HeartbeatResult,
    JoinPending,
    JoinResult,
    LeaveResult,
    LeavingMember,
    MemberDescription,
    MemberLeaveResult,
    SyncPending,
    SyncResult,
)

__all__ = ["NEW_MEMBER_JOIN_TIMEOUT_MS", "GroupConfig", "GroupCoordinator", "StoreEntry"]

CONSUMER_PROTOCOL_TYPE = "consumer"


class GroupCoordinator(RebalanceMachine):
    """All consumer groups of one broker. See the module docstring for the calling convention."""

    # ---- JoinGroup -----------------------------------------------------------------------------------------------

    def join(
        self,
        group_id: str,
        member_id: str,
        *,
        now_ms: int,
        protocol_type: str,
        protocols: Protocols,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        client_id: str = "",
        client_host: str = "",
        group_instance_id: str | None = None,
        require_known_member_id: bool = False,
    ) -> JoinResult | JoinPending:
        """JoinGroup. `rebalance_timeout_ms`: JoinGroup v0 has none; pass the session timeout, as Kafka does.
        `require_known_member_id`: True for JoinGroup v4+, where a member joining with an empty id first gets
        MEMBER_ID_REQUIRED carrying its new id and must join again with it."""
        self.tick(now_ms)
        ticket = self._new_ticket()
        if not group_id:
            return join_error(member_id, ErrorCode.INVALID_GROUP_ID)
        if not self.config.min_session_timeout_ms <= session_timeout_ms <= self.config.max_session_timeout_ms:
            return join_error(member_id, ErrorCode.INVALID_SESSION_TIMEOUT)
        group = self._groups.get(group_id)
        if group is None:
            if member_id:
                return join_error(member_id, ErrorCode.UNKNOWN_MEMBER_ID)
            group = self._groups[group_id] = Group(group_id)
        request = _JoinRequest(
            ticket,
            member_id,
            group_instance_id,
            client_id,
            client_host,
            session_timeout_ms,
            rebalance_timeout_ms,
            protocol_type,
            first_of_each_name(protocols),
            now_ms,
        )
        if not self._accept_joining_member(group, member_id):
            if member_id in group.members:
                self._remove_member_and_update(group, group.members[member_id], now_ms)
            result: JoinResult | None = join_error("", ErrorCode.GROUP_MAX_SIZE_REACHED)
        elif not member_id:
            result = self._join_unknown_member(group, request, require_known_member_id)
        else:
            result = self._join_known_member(group, request)
        if group.state is GroupState.PREPARING_REBALANCE:
            self._try_complete_join(group, now_ms)
        self._drop_if_unused(group)
        self.tick(now_ms)
        if result is not None:
            return result
        completed = self._completed.pop(ticket, None)
        if completed is not None:
            assert isinstance(completed, JoinResult)
            return completed
        return JoinPending(ticket)

    def _accept_joining_member(self, group: Group, member_id: str) -> bool:
        limit = self.config.max_group_size
        if limit is None or group.state is GroupState.EMPTY:
            return True
        member = group.members.get(member_id)
        if group.state is GroupState.PREPARING_REBALANCE:
            awaiting = sum(m.join_ticket is not None for m in group.members.values())
            return (member is not None and member.join_ticket is not None) or awaiting < limit
        return member is not None or len(group.members) < limit

    def _join_unknown_member(self, group: Group, req: _JoinRequest, require_known_member_id: bool) -> JoinResult | None:
        if not group.supports_protocols(req.protocol_type, [name for name, _ in req.protocols]):
            return join_error(req.member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        prefix = (req.group_instance_id or req.client_id)[:MEMBER_ID_PREFIX_CHARS]
        new_member_id = f"{prefix}-{self.config.new_member_id_suffix()}"
        if req.group_instance_id is not None:
            old_member_id = group.static_members.get(req.group_instance_id)
            if old_member_id is not None:
                return self._replace_static_member(group, old_member_id, new_member_id, req)
        elif require_known_member_id:
            group.pending_members[new_member_id] = req.now_ms + req.session_timeout_ms
            return join_error(new_member_id, ErrorCode.MEMBER_ID_REQUIRED)
        self._add_member_and_rebalance(group, new_member_id, req)
        return None

    def _join_known_member(self, group: Group, req: _JoinRequest) -> JoinResult | None:
        if not group.supports_protocols(req.protocol_type, [name for name, _ in req.protocols]):
            return join_error(req.member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if req.member_id in group.pending_members:
            self._add_member_and_rebalance(group, req.member_id, req)
            return None
        error = self._validate_member(group, req.member_id, req.group_instance_id)
        if error:
            return join_error(req.member_id, error)
        member = group.members.get(req.member_id)
        if member is None or group.state is GroupState.EMPTY:
            return join_error(req.member_id, ErrorCode.UNKNOWN_MEMBER_ID)
        unchanged = member.protocols == req.protocols
        if group.state is GroupState.COMPLETING_REBALANCE and unchanged:
            # A retry of a JoinGroup whose reply was lost: answer the current generation again.
            return group.join_result(member.member_id, with_members=member.member_id == group.leader_id)
        if group.state is GroupState.STABLE and unchanged and member.member_id != group.leader_id:
            return group.join_result(member.member_id, with_members=False)
        # PreparingRebalance, changed metadata, or the leader rejoining a Stable group (so it can reassign after a
        # change its metadata does not show, such as new partitions): a rebalance.
        self._update_member(member, req)
        self._maybe_prepare_rebalance(group, req.now_ms)
        return None

    def _add_member_and_rebalance(self, group: Group, member_id: str, req: _JoinRequest) -> None:
        member = Member(
            member_id=member_id,
            group_instance_id=req.group_instance_id,
            client_id=req.client_id,
            client_host=req.client_host,
            rebalance_timeout_ms=req.rebalance_timeout_ms,
            session_timeout_ms=req.session_timeout_ms,
            protocol_type=req.protocol_type,
            protocols=req.protocols,
            last_heartbeat_ms=req.now_ms,
            new_member_deadline_ms=req.now_ms + NEW_MEMBER_JOIN_TIMEOUT_MS,
            join_ticket=req.ticket,
        )
        if group.state is GroupState.PREPARING_REBALANCE and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        self._maybe_prepare_rebalance(group, req.now_ms)

    def _update_member(self, member: Member, req: _JoinRequest) -> None:
        member.protocols = req.protocols
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        if member.join_ticket is not None:
            self._complete(member.join_ticket, join_error(member.member_id, ErrorCode.REBALANCE_IN_PROGRESS))
        member.join_ticket = req.ticket

    def _replace_static_member(
        self, group: Group, old_member_id: str, new_member_id: str, req: _JoinRequest
    ) -> JoinResult | None:
        """A static member came back with an empty member id: it takes over its instance id; the old id is fenced."""
        old_leader = group.leader_id or ""
        member = group.members[old_member_id]
        undo = Takeover(
            new_member_id,
            old_member_id,
            member.client_id,
            member.client_host,
            member.protocols,
            member.rebalance_timeout_ms,
            member.session_timeout_ms,
            group.leader_id == old_member_id,
        )
        del group.members[old_member_id]
        if member.join_ticket is not None:
            self._complete(member.join_ticket, join_error(old_member_id, ErrorCode.FENCED_INSTANCE_ID))
            member.join_ticket = None
        if member.sync_ticket is not None:
            self._complete(member.sync_ticket, SyncResult(ErrorCode.FENCED_INSTANCE_ID))
            member.sync_ticket = None
        member.member_id = new_member_id
        member.client_id = req.client_id
        member.client_host = req.client_host
        member.last_heartbeat_ms = req.now_ms
        group.members[new_member_id] = member
        group.static_members[req.group_instance_id or ""] = new_member_id
        if group.leader_id == old_member_id:
            group.leader_id = new_member_id
        if old_member_id in group.pending_sync:
            group.pending_sync.discard(old_member_id)
            group.pending_sync.add(new_member_id)
        member.protocols = req.protocols
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        if group.state is GroupState.STABLE and group.select_protocol() == group.protocol_name:
            # Same protocol: no rebalance; the member syncs and gets its stored assignment. The old leader id is
            # returned so that a replaced leader does not compute a new assignment a Stable group would not send.
            # The new member id is stored: a restart must not bring back the fenced one. Until that write is done
            # the takeover can be undone (`store_result`), as Kafka undoes it when the write fails.
            self._store(group)
            self._takeovers.setdefault(group.group_id, []).append(undo)
            return JoinResult(
                error_code=ErrorCode.NONE,
                member_id=new_member_id,
                generation_id=group.generation_id,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                leader_id=old_leader,
            )
        member.join_ticket = req.ticket
        self._maybe_prepare_rebalance(group, req.now_ms)
        return None

    # ---- SyncGroup -----------------------------------------------------------------------------------------------

    def sync(
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        *,
        now_ms: int,
        assignments: Mapping[str, bytes] | None = None,
        group_instance_id: str | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> SyncResult | SyncPending:
        """SyncGroup. Only the leader's `assignments` (member id → assignment bytes) are used; members it leaves out
        get empty bytes. `protocol_type`/`protocol_name` (v5+) must match the group's when given."""
        self.tick(now_ms)
        if not group_id:
            return SyncResult(ErrorCode.INVALID_GROUP_ID)
        group = self._groups.get(group_id)
        if group is None:
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        error = self._validate_member(group, member_id, group_instance_id)
        if not error and generation_id != group.generation_id:
            error = ErrorCode.ILLEGAL_GENERATION
        if not error and protocol_type is not None and protocol_type != group.protocol_type:
            error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if not error and protocol_name is not None and protocol_name != group.protocol_name:
            error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if error:
            return SyncResult(error)
        if group.state is GroupState.EMPTY:
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.state is GroupState.PREPARING_REBALANCE:
            return SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
        member = group.members[member_id]
        self._synced(group, member_id)
        if group.state is GroupState.STABLE:
            member.last_heartbeat_ms = now_ms
            return SyncResult(ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment)
        ticket = self._new_ticket()
        if member.sync_ticket is not None:
            self._complete(member.sync_ticket, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        member.sync_ticket = ticket
        if member_id == group.leader_id:
            given = assignments or {}
            for m in group.members.values():
                m.assignment = given.get(m.member_id, b"")
            self._propagate_assignment(group, ErrorCode.NONE, now_ms)
            group.move(GroupEvent.ASSIGNMENT_SET)
            self._store(group)
        self.tick(now_ms)
        completed = self._completed.pop(ticket, None)
        if completed is not None:
            assert isinstance(completed, SyncResult)
            return completed
        return SyncPending(ticket)

    def store_result(self, group_id: str, takeovers: Sequence[Takeover], *, stored: bool) -> list[str]:
        """The driver wrote (`stored`) or failed to write a form of the group; `takeovers` are those it carried
        (`StoreEntry.takeovers`). A failed write undoes them: the old member ids come back, and the group's form is
        queued again so that the log follows. Returns the member ids undone; their JoinGroup must be answered with
        an error, so that the client joins again."""
        group = self._groups.get(group_id)
        if stored or group is None:
            return []
        undone = []
        for undo in reversed(takeovers):
            member = group.members.pop(undo.new_member_id, None)
            if member is None:  # it has left since, or was removed: nothing to give back
                continue
            member.member_id = undo.old_member_id
            member.client_id, member.client_host = undo.client_id, undo.client_host
            member.protocols = undo.protocols
            member.rebalance_timeout_ms, member.session_timeout_ms = undo.rebalance_timeout_ms, undo.session_timeout_ms
            group.members[undo.old_member_id] = member
            group.static_members[member.group_instance_id or ""] = undo.old_member_id
            if undo.was_leader and group.leader_id == undo.new_member_id:
                group.leader_id = undo.old_member_id
            undone.append(undo.new_member_id)
        if undone:
            self._store(group)
        return undone

    def _synced(self, group: Group, member_id: str) -> None:
        group.pending_sync.discard(member_id)
        if not group.pending_sync:
            group.sync_deadline_ms = None

    # ---- Heartbeat, LeaveGroup, offset commits -------------------------------------------------------------------

    def heartbeat(
        self, group_id: str, member_id: str, generation_id: int, *, now_ms: int, group_instance_id: str | None = None
    ) -> HeartbeatResult:
        self.tick(now_ms)
        if not group_id:
            return HeartbeatResult(ErrorCode.INVALID_GROUP_ID)
        group = self._groups.get(group_id)
        if group is None:
            return HeartbeatResult(ErrorCode.UNKNOWN_MEMBER_ID)
        error = self._validate_member(group, member_id, group_instance_id)
        if error:
            return HeartbeatResult(error)
        if generation_id != group.generation_id:
            return HeartbeatResult(ErrorCode.ILLEGAL_GENERATION)
        if group.state is GroupState.EMPTY:
            return HeartbeatResult(ErrorCode.UNKNOWN_MEMBER_ID)
        group.members[member_id].last_heartbeat_ms = now_ms
        if group.state is GroupState.PREPARING_REBALANCE:
            return HeartbeatResult(ErrorCode.REBALANCE_IN_PROGRESS)
        return HeartbeatResult(ErrorCode.NONE)

    def leave(self, group_id: str, members: Sequence[LeavingMember], *, now_ms: int) -> LeaveResult:
        """LeaveGroup (v3+ batch; v0-v2 pass one member). A member named by group_instance_id alone is removed too."""
        self.tick(now_ms)
        if not group_id:
            return LeaveResult(ErrorCode.INVALID_GROUP_ID)
        group = self._groups.get(group_id)
        outcomes: list[MemberLeaveResult] = []
        for leaving in members:
            error = ErrorCode.UNKNOWN_MEMBER_ID if group is None else self._leave_one(group, leaving, now_ms)
            outcomes.append(MemberLeaveResult(leaving.member_id, leaving.group_instance_id, error))
        self.tick(now_ms)
        return LeaveResult(ErrorCode.NONE, tuple(outcomes))

    def _leave_one(self, group: Group, leaving: LeavingMember, now_ms: int) -> ErrorCode:
        member_id = leaving.member_id
        if not member_id:
            current = group.static_members.get(leaving.group_instance_id or "")
            if leaving.group_instance_id is None or current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            member_id = current
        elif member_id in group.pending_members:
            del group.pending_members[member_id]
            if group.state is GroupState.PREPARING_REBALANCE:
                self._try_complete_join(group, now_ms)
            return ErrorCode.NONE
        else:
            error = self._validate_member(group, member_id, leaving.group_instance_id)
            if error:
                return error
        self._remove_member_and_update(group, group.members[member_id], now_ms)
        return ErrorCode.NONE

    def validate_offset_commit(
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        *,
        now_ms: int,
        group_instance_id: str | None = None,
    ) -> int:
        """May this OffsetCommit be stored? Returns a Kafka error code (0 = yes).

        Generation -1 with an empty member id is a standalone commit (a consumer without group management): allowed
        while the group is Empty or unknown — an unknown group is then created Empty, as Kafka does, so it lists and
        describes. Anything else must name a current member and the current generation; a commit in
        CompletingRebalance gets REBALANCE_IN_PROGRESS; a good commit counts as a heartbeat.
        """
        self.tick(now_ms)
        group = self._groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return ErrorCode.ILLEGAL_GENERATION
            group = self._groups[group_id] = Group(group_id, keep_when_empty=True)
        if generation_id >= 0 or member_id or group_instance_id is not None:
            error = self._validate_member(group, member_id, group_instance_id)
            if error:
                return error
            if generation_id != group.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
        elif group.state is not GroupState.EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.state is GroupState.EMPTY:
            group.keep_when_empty = True
            return ErrorCode.NONE
        if group.state is GroupState.COMPLETING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        group.members[member_id].last_heartbeat_ms = now_ms
        return ErrorCode.NONE

    # ---- DescribeGroups, ListGroups, DeleteGroups ----------------------------------------------------------------

    def describe(self, group_id: str) -> GroupDescription:
        group = self._groups.get(group_id)
        if group is None:
            return GroupDescription(group_id, ErrorCode.NONE, GroupState.DEAD.value, "", "")
        stable = group.state is GroupState.STABLE and group.protocol_name is not None
        members = tuple(
            MemberDescription(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                metadata=m.metadata(group.protocol_name) if stable and group.protocol_name is not None else b"",
                assignment=m.assignment if stable else b"",
            )
            for m in group.members.values()
        )
        return GroupDescription(
            group_id=group_id,
            error_code=ErrorCode.NONE,
            state=group.state.value,
            protocol_type=group.protocol_type or "",
            protocol_name=(group.protocol_name or "") if stable else "",
            members=members,
            generation_id=group.generation_id,
        )

    def list_groups(self, states: Collection[str] | None = None) -> list[GroupListing]:
        """ListGroups; `states` (v4+) keeps only groups in those states (Kafka's names, compared case-insensitively)."""
        wanted = {s.lower() for s in states} if states else None
        return [
            GroupListing(g.group_id, g.protocol_type or "", g.state.value)
            for g in self._groups.values()
            if wanted is None or g.state.value.lower() in wanted
        ]

    def delete_group(self, group_id: str) -> int:
        """DeleteGroups for one group: only an Empty group can go (NON_EMPTY_GROUP otherwise). The broker deletes the
        group's committed offsets when this returns 0."""
        group = self._groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.state is not GroupState.EMPTY:
            return ErrorCode.NON_EMPTY_GROUP
        group.move(GroupEvent.DELETE)
        del self._groups[group_id]
        self._store_deleted(group_id)
        return ErrorCode.NONE

    def subscribed_topics(self, group_id: str) -> frozenset[str] | None:
        """The topics the members of a "consumer" group subscribe to under its chosen protocol (empty for a group
        with no members); None when that cannot be told: an unknown group, another protocol type, no protocol chosen
        yet, or metadata that is not a consumer Subscription. Kafka's OffsetDelete treats None as "every topic"."""
        group = self._groups.get(group_id)
        if group is None or group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not group.members:
            return frozenset()
        if group.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for member in group.members.values():
                topics.update(decode_subscription(member.metadata(group.protocol_name)).topics)
        except GroupError:
            return None
        return frozenset(topics)

    # ---- helpers -------------------------------------------------------------------------------------------------

    def _validate_member(self, group: Group, member_id: str, group_instance_id: str | None) -> ErrorCode:
        if group_instance_id is not None:
            current = group.static_members.get(group_instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            return ErrorCode.FENCED_INSTANCE_ID if current != member_id else ErrorCode.NONE
        return ErrorCode.NONE if member_id in group.members else ErrorCode.UNKNOWN_MEMBER_ID


@dataclass(frozen=True, slots=True)
class _JoinRequest:
    ticket: int
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    now_ms: int
