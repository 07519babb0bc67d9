"""The async driver of the pure group coordinator: clock, timers, and futures for long-polled replies.

`kafkalite.groups.GroupCoordinator` is sans-I/O: it takes `now_ms`, returns results or tickets, and keeps an outbox
of completed replies. This service is the only place that touches it, from the event loop:

- every call passes the monotonic clock in milliseconds;
- a `JoinPending`/`SyncPending` ticket becomes a future the caller awaits (a JoinGroup or SyncGroup long poll);
- after every call the outbox is drained into those futures, and one loop timer is set for `next_deadline_ms()`
  (session expiry, rebalance timeout), whose callback calls `tick` and drains again.

A caller that stops waiting (its connection closed, its task cancelled) simply drops its future; the coordinator
still completes the ticket later and the reply is discarded, as Kafka discards replies to closed connections.
Offset commits are checked here against the group's generation, then stored by the `OffsetManager`.

KIP-848 consumer groups (`group.protocol=consumer`) are kept by a second pure coordinator,
`groups.ConsumerGroupCoordinator`, driven from here too (its heartbeats are answered at once; only its session and
revocation deadlines need the timer). A group id names one group of one type, as in Kafka 4: a ConsumerGroupHeartbeat
for a classic group with members gets GROUP_ID_NOT_FOUND ("not a consumer group"), a JoinGroup for a consumer group
with members gets INCONSISTENT_GROUP_PROTOCOL (Kafka's answer when online migration is off); an Empty group of the
other type is replaced. OffsetCommit/OffsetFetch of a consumer group check member id and member epoch. A consumer
group left Empty without committed offsets is forgotten at once.

Restarts. A classic group's membership is stored in `__consumer_offsets` as Kafka stores it (`groups.stored_group` says
when, `group_records.py` how): after every call the coordinator's store outbox is drained and written through the
`OffsetManager`, and the replies completed by the same call wait for that write, so a member gets its assignment only
once its generation is durable (the leader's and the followers' SyncGroup answers wait for the group's record, as in
Kafka; the JoinGroup answers before them already name the new generation). Writes and the replies behind them keep their
order. Each group is written as a batch of its own, so a group that cannot be written fails alone. A write that fails is
logged and the replies go out anyway: the group carries on in memory, and a restart then finds its previous generation,
so its members rejoin. The one exception is a static member's takeover of its instance id (a new member id, no
rebalance): as in Kafka it is undone when the write that carries it fails, and its JoinGroup answered with
COORDINATOR_NOT_AVAILABLE so that it joins again, because a restart would otherwise fence it. A failed fsync is not a
failed write (the records are in the log). When the broker closes, `stop_storing` lets the writes under way finish and
stores nothing after: a takeover from then on is undone too. At start, the stored groups are restored: one with members
comes back Stable with them, its members' sessions starting again; an Empty one comes back Empty when it has offsets
(committed, or in an undecided transaction) and is deleted (a tombstone) when it has none, as Kafka's expiry sweep
would. KIP-848 consumer groups are stored too, as Kafka's consumer-group records (`consumer_group_records.py`): after
every call the groups it may have changed are encoded, what differs from the log is written (tombstones for what is
gone) through the same queue, and the heartbeat is answered after that write; after a failed write the group is looked
at whole again at the next call, and what the log lacks is written. At start they are rebuilt and restored.

A group the coordinators do not know but that has committed offsets (a standalone commit, or offsets written before
groups were stored) is answered here as Kafka would after loading it: listed and described as an Empty "consumer"
group, and deletable (which deletes its offsets).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafkalite.broker.consumer_group_records import group_records, rebuild, record_group_id
from kafkalite.broker.offsets import OffsetManager
from kafkalite.errors import ClosedError
from kafkalite.groups import (
    Assignment,
    CompletedReply,
    ConsumerGroupConfig,
    ConsumerGroupCoordinator,
    DescribedConsumerGroup,
    ErrorCode,
    GroupConfig,
    GroupCoordinator,
    GroupDescription,
    GroupListing,
    GroupState,
    HeartbeatResult,
    JoinPending,
    JoinResult,
    LeaveResult,
    LeavingMember,
    MemberDescription,
    StoredGroup,
    StoreEntry,
    SyncPending,
    SyncResult,
    Takeover,
    TopicImage,
    encode_assignment,
)
from kafkalite.groups import HeartbeatRequest as ConsumerHeartbeatRequest
from kafkalite.groups.consumer_coordinator import HeartbeatResult as ConsumerHeartbeatResult

logger = logging.getLogger("kafkalite.groups")

_UNKNOWN = object()  # a record whose write failed: the log may or may not hold it

CONSUMER_PROTOCOL_TYPE = "consumer"


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


class GroupService:
    """Consumer groups for the wire handlers and the embedded consumer alike."""

    def __init__(
        self,
        config: GroupConfig,
        offsets: OffsetManager,
        consumer_config: ConsumerGroupConfig | None = None,
        topics: Callable[[], TopicImage] = dict,
        *,
        storing: bool = True,
    ) -> None:
        self.coordinator = GroupCoordinator(config)
        self.consumer = ConsumerGroupCoordinator(consumer_config)
        self._topics = topics
        self.offsets = offsets
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: int | None = None
        self.rebalances: dict[str, int] = {}  # group -> completed rebalances (generations), for `/metrics`
        # Group records to write, each with the replies that wait for it and a future set once both are done.
        self._store_queue: list[_PendingStore] = []
        self._store_task: asyncio.Task[None] | None = None
        self._undone_takeovers: set[tuple[str, str]] = set()  # (group, member id) whose JoinGroup must fail
        self._consumer_view: dict[str, dict[bytes, object]] = {}  # KIP-848 group -> its records in the log
        self._failing: set[tuple[str, str]] = set()  # (kind, group) whose last write failed: logged once
        self._storing = storing  # until the broker closes: see `stop_storing` (False: built after the close)
        self._restore()

    def _restore(self) -> None:
        """Bring back the classic groups stored before the restart (see the module docstring)."""
        now = monotonic_ms()
        with_offsets = self.offsets.groups() | self.offsets.groups_with_pending()
        forgotten: list[StoreEntry] = []
        for group_id, stored in self.offsets.stored_groups().items():
            if (stored.members and stored.protocol_name is not None) or group_id in with_offsets:
                self.coordinator.restore(group_id, stored, now_ms=now)
            else:
                forgotten.append(StoreEntry(group_id, None))
        restored = self.coordinator.list_groups()
        if restored:
            active = sum(g.state != GroupState.EMPTY.value for g in restored)
            logger.info("Restored %d classic groups, %d of them with members", len(restored), active)
        if forgotten:
            logger.info("Deleting %d stored classic groups left Empty without committed offsets", len(forgotten))
            self._queue_store(forgotten, [])
        self._restore_consumer_groups(now)
        self._settle()

    def _restore_consumer_groups(self, now_ms: int) -> None:
        """Bring back the KIP-848 groups stored before the restart; one left Empty without offsets is forgotten, and
        the records of a group that cannot be read are tombstoned (its members rejoin)."""
        records = self.offsets.consumer_group_records()
        for key, value in records.items():
            group_id = record_group_id(key)
            if group_id is not None:
                self._consumer_view.setdefault(group_id, {})[key] = value
        groups, unreadable = rebuild(records)
        for what, why in unreadable.items():
            logger.warning("Consumer group %s: its stored records cannot be read (%s); it is not restored", what, why)
        for group in groups.values():
            self.consumer.restore(group, now_ms=now_ms)
            self._forget_if_unused(group.group_id)
        for group_id in self._consumer_view.keys() - groups.keys():
            self.consumer.mark_changed(group_id)  # records of no group it could rebuild: tombstoned
        if groups:
            active = sum(bool(g.members) for g in groups.values())
            logger.info("Restored %d consumer groups, %d of them with members", len(groups), active)

    async def join(self, group_id: str, member_id: str, **request: Any) -> JoinResult:
        """JoinGroup: wait until the rebalance completes (or fails) and return this member's reply."""
        if group_id in self.consumer:
            if not self.consumer.is_empty(group_id):
                return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
            self.consumer.delete_group(group_id)
        outcome = self.coordinator.join(group_id, member_id, now_ms=monotonic_ms(), **request)
        future = self._future_for(outcome.ticket) if isinstance(outcome, JoinPending) else None
        stored = self._settle()
        if future is None:
            assert isinstance(outcome, JoinResult)
            result = outcome
            try:
                if stored is not None:
                    await stored
            finally:
                undone = (group_id, result.member_id) in self._undone_takeovers
                self._undone_takeovers.discard((group_id, result.member_id))
            if undone:  # a static member's takeover whose record could not be written was undone: it joins again
                return JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, "")
        else:
            result = await future
        if result.error_code == 0 and result.leader_id == result.member_id:  # one leader per generation
            self.rebalances[group_id] = self.rebalances.get(group_id, 0) + 1
        if result.error_code == 0 and future is not None:
            logger.info(
                "Group %s generation %d: member %s joined%s",
                group_id,
                result.generation_id,
                result.member_id,
                " as leader" if result.leader_id == result.member_id else "",
            )
        return result

    async def sync(
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        *,
        assignments: Mapping[str, bytes] | None = None,
        **request: Any,
    ) -> SyncResult:
        """SyncGroup: followers wait for the leader's assignments."""
        outcome = self.coordinator.sync(
            group_id, member_id, generation_id, now_ms=monotonic_ms(), assignments=assignments, **request
        )
        future = self._future_for(outcome.ticket) if isinstance(outcome, SyncPending) else None
        stored = self._settle()
        if future is None:
            assert isinstance(outcome, SyncResult)
            if stored is not None:  # the leader's SyncGroup: its generation is stored before it hears of it
                await stored
            return outcome
        result: SyncResult = await future
        return result

    def heartbeat(
        self, group_id: str, member_id: str, generation_id: int, *, group_instance_id: str | None = None
    ) -> HeartbeatResult:
        result = self.coordinator.heartbeat(
            group_id, member_id, generation_id, now_ms=monotonic_ms(), group_instance_id=group_instance_id
        )
        self._settle()
        return result

    def leave(self, group_id: str, members: Sequence[LeavingMember]) -> LeaveResult:
        result = self.coordinator.leave(group_id, members, now_ms=monotonic_ms())
        self._settle()
        for member in result.members:
            if member.error_code == 0:
                logger.info("Group %s: member %s left", group_id, member.member_id or member.group_instance_id)
        return result

    async def consumer_heartbeat(self, request: ConsumerHeartbeatRequest) -> ConsumerHeartbeatResult:
        """ConsumerGroupHeartbeat (KIP-848): answered once what it changed in the group is stored."""
        group_id = request.group_id
        classic_state = self.coordinator.describe(group_id).state
        if classic_state != GroupState.DEAD.value:
            if classic_state != GroupState.EMPTY.value:
                message = f"Group {group_id} is not a consumer group."
                return ConsumerHeartbeatResult(ErrorCode.GROUP_ID_NOT_FOUND, message, request.member_id or None)
            if request.member_epoch == 0:  # only a join turns an Empty classic group into a consumer group
                self.coordinator.delete_group(group_id)
        before = self.consumer.state(group_id)
        assignment_epoch = self.consumer.assignment_epoch(group_id)
        result = self.consumer.heartbeat(request, topics=self._topics(), now_ms=monotonic_ms())
        self._forget_if_unused(group_id)
        stored = self._settle()
        if self.consumer.assignment_epoch(group_id) > assignment_epoch:  # a new target assignment: a rebalance
            self.rebalances[group_id] = self.rebalances.get(group_id, 0) + 1
        if result.error_code == 0 and request.member_epoch == 0:
            logger.info(
                "Consumer group %s: member %s joined at epoch %d", group_id, result.member_id, result.member_epoch
            )
        elif result.error_code == 0 and request.member_epoch == -1:
            logger.info("Consumer group %s: member %s left", group_id, request.member_id)
        elif result.error_code == 0 and request.member_epoch == -2:
            logger.info(
                "Consumer group %s: static member %s (%s) left, its partitions kept for it",
                group_id,
                request.member_id,
                request.instance_id,
            )
        after = self.consumer.state(group_id)
        if after is not before:
            logger.debug("Consumer group %s: %s -> %s", group_id, before.value, after.value)
        if stored is not None:
            await stored
        return result

    def _forget_if_unused(self, group_id: str) -> None:
        """An Empty consumer group without committed offsets holds nothing worth keeping: it is dropped at once, as
        Kafka's offset-expiration sweep drops it later, so that groups made and left (or fuzzed) cost no memory."""
        if group_id not in self.consumer or not self.consumer.is_empty(group_id):
            return
        if group_id not in self.offsets.groups() and group_id not in self.offsets.groups_with_pending():
            self.consumer.delete_group(group_id)

    def consumer_describe(self, group_id: str, names: Mapping[Any, str]) -> DescribedConsumerGroup | None:
        return self.consumer.describe(group_id, names)

    def is_consumer_group(self, group_id: str) -> bool:
        return group_id in self.consumer

    def validate_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> int:
        """OffsetFetch v9+ of a consumer group checks the member and its epoch; classic groups ignore both."""
        if group_id not in self.consumer:
            return ErrorCode.NONE
        return self.consumer.validate_offset_fetch(group_id, member_id, member_epoch)

    def validate_offset_commit(
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        *,
        group_instance_id: str | None = None,
        api_version: int = 9,
    ) -> int:
        if group_id in self.consumer:
            return self.consumer.validate_offset_commit(group_id, member_id, generation_id, api_version=api_version)
        error = self.coordinator.validate_offset_commit(
            group_id, member_id, generation_id, now_ms=monotonic_ms(), group_instance_id=group_instance_id
        )
        self._settle()
        return error

    async def commit_offsets(
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        offsets: Sequence[tuple[str, int, int, str, int]],
        *,
        group_instance_id: str | None = None,
        api_version: int = 9,
    ) -> int:
        """OffsetCommit: check the member and generation (member epoch for a consumer group), then store (topic,
        partition, offset, metadata, epoch) entries durably. Returns the Kafka error code for every entry."""
        error = self.validate_offset_commit(
            group_id, member_id, generation_id, group_instance_id=group_instance_id, api_version=api_version
        )
        if error == 0:
            await self.offsets.commit_many(group_id, offsets)
        return error

    def describe(self, group_id: str) -> GroupDescription:
        """A group of either type in the classic shape (the console and `/metrics` read it): a consumer group's members
        carry their current assignments as ConsumerProtocol Assignment bytes and its assignor as the protocol name.
        The DescribeGroups handler answers a consumer group with GROUP_ID_NOT_FOUND itself, as Kafka does."""
        if group_id in self.consumer:
            return self._consumer_group_as_classic(group_id)
        described = self.coordinator.describe(group_id)
        if described.state == GroupState.DEAD.value and group_id in self.offsets.groups():
            return GroupDescription(group_id, 0, GroupState.EMPTY.value, CONSUMER_PROTOCOL_TYPE, "")
        return described

    def _consumer_group_as_classic(self, group_id: str) -> GroupDescription:
        names = {topic_id: name for name, (topic_id, _) in self._topics().items()}
        described = self.consumer.describe(group_id, names)
        assert described is not None
        members = tuple(
            MemberDescription(
                member_id=m.member_id,
                group_instance_id=m.instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                metadata=b"",
                assignment=encode_assignment(
                    Assignment(tuple((names[t], p) for t, ps in sorted(m.assignment.items()) for p in sorted(ps)))
                ),
            )
            for m in described.members
        )
        return GroupDescription(
            group_id,
            0,
            described.state,
            CONSUMER_PROTOCOL_TYPE,
            described.assignor_name,
            members,
            described.group_epoch,
        )

    def list_groups(self, states: Collection[str] | None = None) -> list[GroupListing]:
        """Every group of both types (`GroupListing.group_type`), those in `states` when given."""
        listings = self.coordinator.list_groups(states) + [
            GroupListing(group_id, CONSUMER_PROTOCOL_TYPE, state, "consumer")
            for group_id, state in self.consumer.list_groups(states)
        ]
        if states and GroupState.EMPTY.value.lower() not in {s.lower() for s in states}:
            return listings
        known = {g.group_id for g in self.coordinator.list_groups()} | {g for g, _ in self.consumer.list_groups()}
        offsets_only = sorted(self.offsets.groups() - known)
        return listings + [GroupListing(g, CONSUMER_PROTOCOL_TYPE, GroupState.EMPTY.value) for g in offsets_only]

    async def delete_group(self, group_id: str) -> int:
        if group_id in self.consumer:
            error = self.consumer.delete_group(group_id)
        else:
            error = self.coordinator.delete_group(group_id)
        if error == ErrorCode.GROUP_ID_NOT_FOUND and group_id in self.offsets.groups():
            error = ErrorCode.NONE
        stored = self._settle()  # a classic group's tombstone, queued
        if error == 0:  # its offsets' tombstones now: an offset committed after this belongs to the group after
            await self.offsets.delete(group_id)
        if stored is not None:
            await stored
        return error

    async def delete_offsets(
        self, group_id: str, partitions: Sequence[tuple[str, int]]
    ) -> tuple[int, dict[tuple[str, int], int]]:
        """OffsetDelete, by Kafka's rules: (group error, error per partition). An unknown group: GROUP_ID_NOT_FOUND.
        An Empty group (or one known only by its committed offsets) loses the offsets asked for. A "consumer" group
        with members keeps the offsets of topics it subscribes to (GROUP_SUBSCRIBED_TO_TOPIC) and loses the others;
        any other group with members: NON_EMPTY_GROUP."""
        if group_id in self.consumer:
            subscribed: frozenset[str] | None = self.consumer.subscribed_topics(group_id)
            if self.consumer.is_empty(group_id):
                subscribed = frozenset()
            return await self._delete_unsubscribed(group_id, partitions, subscribed)
        described = self.coordinator.describe(group_id)
        state = described.state
        if state == GroupState.DEAD.value:
            if group_id not in self.offsets.groups():
                return ErrorCode.GROUP_ID_NOT_FOUND, {}
            state = GroupState.EMPTY.value
        if state == GroupState.EMPTY.value:
            subscribed = frozenset()
        elif described.protocol_type == CONSUMER_PROTOCOL_TYPE:
            subscribed = self.coordinator.subscribed_topics(group_id)
        else:
            return ErrorCode.NON_EMPTY_GROUP, {}
        return await self._delete_unsubscribed(group_id, partitions, subscribed)

    async def _delete_unsubscribed(
        self, group_id: str, partitions: Sequence[tuple[str, int]], subscribed: frozenset[str] | None
    ) -> tuple[int, dict[tuple[str, int], int]]:
        errors: dict[tuple[str, int], int] = {
            tp: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if subscribed is None or tp[0] in subscribed else ErrorCode.NONE
            for tp in partitions
        }
        await self.offsets.delete(group_id, [tp for tp, error in errors.items() if error == ErrorCode.NONE])
        return ErrorCode.NONE, errors

    def close(self) -> None:
        """Shutting down: every JoinGroup/SyncGroup still waiting fails with `ClosedError` (its caller's task was not
        cancelled, so it must not see a `CancelledError`). A server that stops serving the broker calls this too; the
        broker itself may go on (an embedded broker outlives its served block)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(ClosedError("the broker is shutting down"))
        self._waiting.clear()

    async def stop_storing(self) -> None:
        """The broker is closing: let the group records being written reach the log before it closes, and store
        nothing after. A form that would have been stored from now on counts as a failed write (a static member's
        takeover is undone, and its JoinGroup answered with an error)."""
        self._storing = False
        await self.wait_stored()

    async def wait_stored(self) -> None:
        """Until the group records queued so far are written (and the replies behind them released)."""
        while self._store_task is not None and not self._store_task.done():
            await asyncio.gather(asyncio.shield(self._store_task), return_exceptions=True)

    # --- driver -----------------------------------------------------------------------------------------------

    def _future_for(self, ticket: int) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[ticket] = future
        return future

    def _settle(self) -> asyncio.Future[None] | None:
        """Write what the coordinator stored, hand completed replies to their waiters (after that write, when there
        is one or one is under way), and arm the timer for the coordinator's next deadline. Returns a future done
        once the replies went out, or None when they went out at once."""
        stores = self.coordinator.take_to_store()
        while stores and not self._storing:  # the broker is closing: the logs close after the writes under way
            logger.debug("Not storing %d classic groups: the broker is closing", len(stores))
            for entry in stores:
                self._note_undone(
                    entry.group_id, self.coordinator.store_result(entry.group_id, entry.takeovers, stored=False)
                )
            stores = self.coordinator.take_to_store()  # what an undo queued again
        changes = self._consumer_changes() if self._storing else []
        replies = self.coordinator.take_completed()
        stored = None
        if stores or changes or self._store_task is not None:  # replies never overtake a write queued before them
            stored = self._queue_store(stores, replies, changes)
        else:
            self._deliver(replies)
        self._arm_timer()
        return stored

    def _deliver(self, replies: list[tuple[int, CompletedReply]]) -> None:
        for ticket, reply in replies:
            future = self._waiting.pop(ticket, None)
            if future is not None and not future.done():
                future.set_result(reply)

    def _note_undone(self, group_id: str, member_ids: list[str]) -> None:
        self._undone_takeovers.update((group_id, member_id) for member_id in member_ids)

    def _consumer_changes(self) -> list[tuple[str, list[tuple[bytes, bytes | None]]]]:
        """The records to write for the KIP-848 groups the last calls changed: what differs from the log (as it
        will be once the writes already queued are done), with tombstones for what is gone."""
        changes = []
        for group_id, members in self.consumer.take_changed():
            group = self.consumer.group(group_id)
            view = self._consumer_view.setdefault(group_id, {})
            if any(value is _UNKNOWN for value in view.values()):
                members = None  # a write of it failed: look at the whole group, tombstones included
            now = group_records(group, members) if group is not None else {}
            diff: list[tuple[bytes, bytes | None]] = [(k, v) for k, v in now.items() if view.get(k) != v]
            if members is None:  # the whole group: what it no longer has is tombstoned
                diff += [(k, None) for k in view if k not in now]
            for key, value in diff:
                if value is None:
                    del view[key]
                else:
                    view[key] = value
            if not view:
                del self._consumer_view[group_id]
            if diff:
                changes.append((group_id, diff))
        return changes

    def _queue_store(
        self,
        stores: list[StoreEntry],
        replies: list[tuple[int, CompletedReply]],
        records: list[tuple[str, list[tuple[bytes, bytes | None]]]] | None = None,
    ) -> asyncio.Future[None]:
        loop = asyncio.get_running_loop()
        pending = _PendingStore(stores, replies, loop.create_future(), records or [])
        self._store_queue.append(pending)
        if self._store_task is None:
            self._store_task = loop.create_task(self._write_stores())
        return pending.done

    async def _write_stores(self) -> None:
        """Write the queued group records, all queued at once as one batch, then release the replies behind them."""
        batch: list[_PendingStore] = []
        try:
            while self._store_queue:
                batch, self._store_queue = self._store_queue, []
                latest: dict[str, StoredGroup | None] = {}
                takeovers: dict[str, list[Takeover]] = {}
                for pending in batch:
                    for entry in pending.stores:
                        latest[entry.group_id] = entry.group
                        takeovers.setdefault(entry.group_id, []).extend(entry.takeovers)
                failed = await self._written(
                    "classic",
                    latest,
                    self.offsets.store_groups(latest.items()),
                    "a restart finds its previous generation",
                )
                for group_id, carried in takeovers.items():
                    if group_id in failed and carried:
                        self._note_undone(group_id, self.coordinator.store_result(group_id, carried, stored=False))
                if any(group_id in failed for group_id in takeovers):
                    self._settle()  # the forms an undo queued again: written next, after those queued before
                await self._write_consumer_records([change for pending in batch for change in pending.records])
                self._release(batch)
                batch = []
        finally:
            self._store_task = None
            leftover, self._store_queue = batch + self._store_queue, []
            self._release(leftover)  # not empty only when this task failed or was cancelled

    async def _write_consumer_records(self, changes: list[tuple[str, list[tuple[bytes, bytes | None]]]]) -> None:
        if not changes:
            return
        merged: dict[str, list[tuple[bytes, bytes | None]]] = {}
        for group_id, records in changes:
            merged.setdefault(group_id, []).extend(records)
        failed = await self._written(
            "consumer",
            merged,
            self.offsets.store_records(merged.items()),
            "what the log lacks is written at the next call",
        )
        for group_id in failed:
            view = self._consumer_view.setdefault(group_id, {})
            for key, _ in merged[group_id]:
                view[key] = _UNKNOWN  # not what any record is: the next look writes (or tombstones) it again
            self.consumer.mark_changed(group_id)  # looked at again by the next call, whichever group it is for

    async def _written(
        self, kind: str, groups: Collection[str], write: Awaitable[dict[str, Exception]], consequence: str
    ) -> dict[str, Exception]:
        """The groups `write` failed to store, with why, noted in the log; an exception out of it (a bug) fails every
        group, and the replies behind them still go out."""
        try:
            failed = await write
        except Exception as exc:
            logger.exception("Storing %d %s groups failed", len(groups), kind)
            failed = dict.fromkeys(groups, exc)
        self._note_stored(kind, groups, failed, consequence)
        return failed

    def _note_stored(
        self, kind: str, written: Collection[str], failed: Mapping[str, Exception], consequence: str
    ) -> None:
        """Log a group's writes failing once, when they start to (a full disk fails every heartbeat's), and once when
        they succeed again."""
        for group_id in written:
            streak = (kind, group_id)
            if group_id in failed and streak not in self._failing:
                self._failing.add(streak)
                logger.error(
                    "Could not store %s group %s (%s): it carries on; %s", kind, group_id, failed[group_id], consequence
                )
            elif group_id not in failed and streak in self._failing:
                self._failing.discard(streak)
                logger.warning("Stored %s group %s again", kind, group_id)

    def _release(self, batch: list[_PendingStore]) -> None:
        for pending in batch:
            self._deliver(pending.replies)
            if not pending.done.done():  # its awaiter may have been cancelled
                pending.done.set_result(None)

    def _arm_timer(self) -> None:
        deadlines = [
            d for d in (self.coordinator.next_deadline_ms(), self.consumer.next_deadline_ms()) if d is not None
        ]
        deadline = min(deadlines, default=None)
        if deadline == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = deadline
        if deadline is not None:
            delay = max(0.0, (deadline - monotonic_ms()) / 1000)
            self._timer = asyncio.get_running_loop().call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = None
        now = monotonic_ms()
        self.coordinator.tick(now)
        for group_id, member_id in self.consumer.tick(now):
            logger.info("Consumer group %s: member %s fenced (session or revocation timeout)", group_id, member_id)
            self._forget_if_unused(group_id)
        self._settle()


@dataclass(slots=True)
class _PendingStore:
    """Group records waiting to be written, the replies completed with them, and a future set after both."""

    stores: list[StoreEntry]
    replies: list[tuple[int, CompletedReply]]
    done: asyncio.Future[None]
    records: list[tuple[str, list[tuple[bytes, bytes | None]]]]  # KIP-848 groups' records, per group
