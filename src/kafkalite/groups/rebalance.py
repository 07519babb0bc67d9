"""The classic protocol's rebalance: the state changes of every group, its timers firing, and the reply outbox.

`RebalanceMachine` holds every group (`membership.Group`) and drives each through the table of `_state.py`:
PREPARE_REBALANCE when membership changes, JOIN_COMPLETED(_EMPTY) once every member has rejoined or the rebalance
timeout passed, ASSIGNMENT_SET when the leader's SyncGroup arrives (applied by `coordinator.py`), and removal of
members whose session or SyncGroup deadline passed. `GroupCoordinator` (coordinator.py) extends it with the group
APIs; nothing else changes a group's state.

Outbox: a JoinGroup or SyncGroup that cannot be answered at once holds a ticket (`_new_ticket`); whatever completes
it later (another member's join, the leader's sync, a leave, a timer) puts `(ticket, result)` into the outbox with
`_complete`, and the driver drains it with `take_completed()`. Every ticket is completed exactly once.

Store outbox: when a group's stored form changes (`stored_group.py` lists when: a rebalance that ends Empty here, a
generation's assignments or a static member's new id in `coordinator.py`, a deletion) its `StoredGroup`, or None for a
deleted group, goes into a second outbox that the driver drains with `take_to_store()` and writes; `restore()` puts
the stored groups back at start.

Time: `tick(now_ms)` fires every timer due at `now_ms`, each as if at its own deadline and in deadline order (`_fire`),
so outcomes do not depend on how often the driver ticks. Pure: no clock, no I/O, never blocks.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from kafkalite.groups._state import TRANSITIONS, GroupEvent, GroupState
from kafkalite.groups.membership import Group, Member, Takeover
from kafkalite.groups.results import CompletedReply, ErrorCode, JoinResult, SyncResult
from kafkalite.groups.stored_group import StoredGroup, StoredMember


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """Coordinator settings, named after Kafka's broker configs.

    min/max_session_timeout_ms: group.min.session.timeout.ms / group.max.session.timeout.ms (Kafka's defaults;
    the embedded broker passes min 1 so tests can use short sessions). initial_rebalance_delay_ms:
    group.initial.rebalance.delay.ms — Kafka's default is 3000, ours 0 so a single consumer starts at once.
    max_group_size: group.max.size (None = unlimited, Kafka's Int.MaxValue). new_member_id_suffix makes member ids
    `{client_id}-{suffix}` (`{group_instance_id}-{suffix}` for static members); tests pass a counter.
    """

    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 0
    max_group_size: int | None = None
    new_member_id_suffix: Callable[[], str] = field(default=lambda: str(uuid.uuid4()))


@dataclass(frozen=True, slots=True)
class StoreEntry:
    """One group's form to store (None: a tombstone) and the static takeovers it carries, which a failed write
    undoes (`GroupCoordinator.store_result`)."""

    group_id: str
    group: StoredGroup | None
    takeovers: tuple[Takeover, ...] = ()


def join_error(member_id: str, error_code: int) -> JoinResult:
    """A JoinGroup refusal: the error and the member id, with Kafka's placeholders for everything else."""
    return JoinResult(error_code=error_code, member_id=member_id)


class RebalanceMachine:
    """Every group of one coordinator, their rebalances and timers; `GroupCoordinator` adds the group APIs."""

    def __init__(self, config: GroupConfig | None = None) -> None:
        self.config = config or GroupConfig()
        self._groups: dict[str, Group] = {}
        self._completed: dict[int, CompletedReply] = {}
        self._to_store: dict[str, StoredGroup | None] = {}
        self._takeovers: dict[str, list[Takeover]] = {}  # group id -> static takeovers in its form to store
        self._next_ticket = 1

    # ---- driver interface ----------------------------------------------------------------------------------------

    def take_completed(self) -> list[tuple[int, CompletedReply]]:
        """Replies completed since the last call, in completion order, as (ticket, JoinResult | SyncResult)."""
        completed = list(self._completed.items())
        self._completed.clear()
        return completed

    def take_to_store(self) -> list[StoreEntry]:
        """The groups whose stored form changed since the last call, each once with its latest form (None for a
        deleted group) and the takeovers that form carries. The driver writes each and reports with
        `store_result`."""
        to_store = [
            StoreEntry(group_id, group, tuple(self._takeovers.pop(group_id, ())))
            for group_id, group in self._to_store.items()
        ]
        self._to_store.clear()
        return to_store

    def restore(self, group_id: str, stored: StoredGroup, *, now_ms: int) -> None:
        """Put back a group as it was stored (at start, before any request): Stable with its members, each member's
        session starting at `now_ms`, or Empty at its generation. A group already known is left as it is."""
        if group_id in self._groups:
            return
        group = Group(group_id, generation_id=stored.generation_id, protocol_type=stored.protocol_type)
        for kept in stored.members:
            group.add(_member_from_stored(kept, stored, now_ms))
        if group.members and stored.protocol_name is not None:
            group.protocol_name = stored.protocol_name
            if stored.leader_id in group.members:
                group.leader_id = stored.leader_id
            group.state = GroupState.STABLE
        else:
            group.members.clear()
            group.static_members.clear()
            group.leader_id = None
            group.keep_when_empty = True
        self._groups[group_id] = group

    def next_deadline_ms(self) -> int | None:
        """The earliest time at which `tick()` has work to do; None when no timer is running."""
        deadlines = [t[0] for g in self._groups.values() if (t := g.next_timer()) is not None]
        return min(deadlines, default=None)

    def tick(self, now_ms: int) -> None:
        """Fire every timer due at `now_ms`: expire sessions, finish rebalances, drop members that did not sync."""
        while True:
            due: tuple[int, str, str, Group] | None = None
            for group in self._groups.values():
                timer = group.next_timer()
                if timer is not None and timer[0] <= now_ms and (due is None or timer[0] < due[0]):
                    due = (*timer, group)
            if due is None:
                return
            self._fire(due[3], due[1], due[2], due[0])

    # ---- the rebalance -------------------------------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: Group, now_ms: int) -> None:
        if GroupEvent.PREPARE_REBALANCE in TRANSITIONS[group.state]:
            self._prepare_rebalance(group, now_ms)

    def _prepare_rebalance(self, group: Group, now_ms: int) -> None:
        if group.state is GroupState.COMPLETING_REBALANCE:
            for member in group.members.values():
                member.assignment = b""
            self._propagate_assignment(group, ErrorCode.REBALANCE_IN_PROGRESS, now_ms)
        group.sync_deadline_ms = None
        rebalance_timeout = group.rebalance_timeout_ms()
        if group.state is GroupState.EMPTY:
            delay = self.config.initial_rebalance_delay_ms
            group.initial_join = True
            group.initial_remaining_ms = max(rebalance_timeout - delay, 0)
            group.join_deadline_ms = now_ms + delay
        else:
            group.initial_join = False
            group.join_deadline_ms = now_ms + rebalance_timeout
        group.move(GroupEvent.PREPARE_REBALANCE)
        self._try_complete_join(group, now_ms)

    def _try_complete_join(self, group: Group, now_ms: int) -> None:
        if not group.initial_join and group.all_joined():
            self._complete_join(group, now_ms)

    def _complete_join(self, group: Group, now_ms: int) -> None:
        group.join_deadline_ms = None
        group.initial_join = False
        group.new_member_added = False
        for member in [m for m in group.members.values() if m.join_ticket is None and m.group_instance_id is None]:
            group.remove(member.member_id)
        if group.members and not self._elect_joined_leader(group):
            # Only static members that did not rejoin are left: wait for them (or for their sessions to end).
            group.join_deadline_ms = now_ms + max(group.rebalance_timeout_ms(), 1)
            return
        group.generation_id += 1
        group.pending_sync.clear()
        if not group.members:
            group.protocol_name = None
            group.move(GroupEvent.JOIN_COMPLETED_EMPTY)
            self._store(group)
            return
        group.protocol_name = group.select_protocol()
        group.move(GroupEvent.JOIN_COMPLETED)
        for member in group.members.values():
            if member.join_ticket is not None:
                result = group.join_result(member.member_id, with_members=member.member_id == group.leader_id)
                self._complete(member.join_ticket, result)
                member.join_ticket = None
            member.last_heartbeat_ms = now_ms
            member.is_new = False
            group.pending_sync.add(member.member_id)
        group.sync_deadline_ms = now_ms + group.rebalance_timeout_ms()

    def _elect_joined_leader(self, group: Group) -> bool:
        leader = group.members.get(group.leader_id or "")
        if leader is None:
            return False
        if leader.join_ticket is not None:
            return True
        joined = next((m for m in group.members.values() if m.join_ticket is not None), None)
        if joined is None:
            return False
        group.leader_id = joined.member_id
        return True

    def _remove_member_and_update(self, group: Group, member: Member, now_ms: int) -> None:
        if member.join_ticket is not None:
            self._complete(member.join_ticket, join_error("", ErrorCode.UNKNOWN_MEMBER_ID))
            member.join_ticket = None
        if member.sync_ticket is not None:
            self._complete(member.sync_ticket, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
            member.sync_ticket = None
        group.remove(member.member_id)
        if group.state is GroupState.PREPARING_REBALANCE:
            self._try_complete_join(group, now_ms)
        elif group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, now_ms)

    def _propagate_assignment(self, group: Group, error: int, now_ms: int) -> None:
        ok = error == ErrorCode.NONE
        for member in group.members.values():
            if member.sync_ticket is not None:
                result = SyncResult(
                    error,
                    group.protocol_type if ok else None,
                    group.protocol_name if ok else None,
                    member.assignment,
                )
                self._complete(member.sync_ticket, result)
                member.sync_ticket = None
                member.last_heartbeat_ms = now_ms

    # ---- timers --------------------------------------------------------------------------------------------------

    def _fire(self, group: Group, kind: str, key: str, at_ms: int) -> None:
        if kind == "join":
            if group.initial_join and group.new_member_added and group.initial_remaining_ms != 0:
                # Kafka's InitialDelayedJoin: new members keep arriving, so wait one more delay (bounded).
                delay = min(self.config.initial_rebalance_delay_ms, group.initial_remaining_ms)
                group.new_member_added = False
                group.initial_remaining_ms = max(group.initial_remaining_ms - delay, 0)
                group.join_deadline_ms = at_ms + delay
            else:
                self._complete_join(group, at_ms)
        elif kind == "sync":
            for member_id in sorted(group.pending_sync):
                group.remove(member_id)
            self._prepare_rebalance(group, at_ms)
        elif kind == "session":
            self._remove_member_and_update(group, group.members[key], at_ms)
        else:
            del group.pending_members[key]
            if group.state is GroupState.PREPARING_REBALANCE:
                self._try_complete_join(group, at_ms)
        self._drop_if_unused(group)

    # ---- helpers -------------------------------------------------------------------------------------------------

    def _drop_if_unused(self, group: Group) -> None:
        """Forget a group that never got anywhere (a failed first join, an expired MEMBER_ID_REQUIRED id)."""
        unused = group.state is GroupState.EMPTY and group.generation_id == 0 and not group.keep_when_empty
        if unused and not group.pending_members and self._groups.get(group.group_id) is group:
            del self._groups[group.group_id]

    def _store(self, group: Group) -> None:
        """Queue the group's current form for the driver to write (`take_to_store`)."""
        name = group.protocol_name
        members = tuple(
            StoredMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                session_timeout_ms=m.session_timeout_ms,
                subscription=m.metadata(name),
                assignment=m.assignment,
            )
            for m in group.members.values()
            if name is not None
        )
        self._to_store[group.group_id] = StoredGroup(
            protocol_type=group.protocol_type or "",
            generation_id=group.generation_id,
            protocol_name=name if members else None,
            leader_id=group.leader_id if members else None,
            members=members,
        )

    def _store_deleted(self, group_id: str) -> None:
        self._to_store[group_id] = None

    def _new_ticket(self) -> int:
        ticket = self._next_ticket
        self._next_ticket += 1
        return ticket

    def _complete(self, ticket: int, result: CompletedReply) -> None:
        self._completed[ticket] = result


def _member_from_stored(kept: StoredMember, stored: StoredGroup, now_ms: int) -> Member:
    """A member as a restart finds it: no pending request, its session starting `now_ms`, the one protocol it was
    stored with (a rejoin offering more counts as changed metadata, as after a reload in Kafka)."""
    protocols = [(stored.protocol_name, kept.subscription)] if stored.protocol_name is not None else []
    return Member(
        member_id=kept.member_id,
        group_instance_id=kept.group_instance_id,
        client_id=kept.client_id,
        client_host=kept.client_host,
        rebalance_timeout_ms=kept.rebalance_timeout_ms,
        session_timeout_ms=kept.session_timeout_ms,
        protocol_type=stored.protocol_type,
        protocols=protocols,
        last_heartbeat_ms=now_ms,
        new_member_deadline_ms=now_ms,
        is_new=False,
        assignment=kept.assignment,
    )
