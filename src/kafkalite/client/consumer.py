"""The async consumer: group membership, partition ownership, positions, commits, and the retry → DLQ handler loop.

Group protocol (Kafka's classic, eager): the consumer joins with its subscription (Kafka's ConsumerProtocol bytes);
the leader computes the assignment with the chosen assignor and hands it over in SyncGroup; every member then reads
only its partitions. Before rejoining for a rebalance, a member stops yielding and (with auto-commit) commits its
positions, and the coordinator completes the rebalance only once every live member has rejoined, so a partition is
never read by two live owners and the next owner resumes exactly where the last one stopped. Members beyond the
partition count own nothing: hot standbys that take over when an owner leaves or stops heartbeating.

Positions: a partition's position is the next offset to hand out. It starts at the group's committed offset, or per
`auto_offset_reset` ("earliest", "latest", "none") when the group has none. A message counts as consumed once it is
yielded; `commit()` stores the positions. `seek()` moves a position anywhere in the log (replay).

Buffer: each fetch from a partition becomes one chunk, a list of `Message`s built in one C-level pass from the
batch's decoded columns; consuming hands out slices of chunks and moves the partition's position once per chunk,
so nothing on the consume path is per record beyond decoding the record and making its `Message`.

Replays: a consumer of group `G` also subscribes to `G`'s retry topic of each of its topics (`<topic>.<G>.retry`,
see `kafkalite.broker.dead_letter_format`) once that topic exists, reading it from its earliest offset; a new one is
noticed at the next poll and joined with a rebalance. Letters that fail again there go to the original topic's DLQ.

Isolation: with `isolation_level="read_committed"` a fetch stops at the partition's last stable offset (nothing of a
transaction still open is read) and records of aborted transactions are dropped (`_AbortedRanges`). Either way the
transaction markers (control batches) are never handed out; a fetch that held only markers or aborted records moves
the position past them, so positions, commits and lag count them as Kafka's consumers do.

Heartbeats run in a background task every `heartbeat_interval`, and before every fetch, so a long handler does not
cost the membership and a rebalance is noticed within one poll.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Iterator, Sequence
from itertools import repeat
from types import TracebackType
from typing import Literal, Self, cast

from kafkalite.broker.dead_letter_format import retry_topic_or_none
from kafkalite.client.handling import Handler, handle_with_retries
from kafkalite.client.records import Message
from kafkalite.client.transport import Transport
from kafkalite.errors import (
    ClosedError,
    GroupError,
    KafkaLiteError,
    OffsetOutOfRangeError,
    UnknownPartitionError,
)
from kafkalite.groups import (
    ASSIGNORS,
    Assignment,
    MemberSubscription,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kafkalite.protocol.records import BatchHeader, decode_columns, read_header
from kafkalite.storage import AbortedTxn

logger = logging.getLogger("kafkalite.consumer")

OffsetReset = Literal["earliest", "latest", "none"]
AssignorName = Literal["range", "roundrobin", "sticky"]
IsolationLevel = Literal["read_committed", "read_uncommitted"]
TopicPartition = tuple[str, int]

_REJOIN_ERRORS = {22, 25, 27}  # ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS
_EARLIEST = -2
_LATEST = -1


class _AbortedRanges:
    """Which batches a read_committed consumer drops (Kafka's consumer rule): a transactional batch of a producer
    whose aborted transaction has begun at or before it and whose abort marker has not been met yet. Control
    batches (markers) are always dropped; a marker ends its producer's aborted range."""

    __slots__ = ("_active", "_pending")

    def __init__(self, aborted: Sequence[AbortedTxn] | None) -> None:
        self._pending = sorted(aborted or (), key=lambda entry: entry.first_offset, reverse=True)
        self._active: set[int] = set()

    def skips(self, header: BatchHeader) -> bool:
        while self._pending and self._pending[-1].first_offset <= header.last_offset:
            self._active.add(self._pending.pop().producer_id)
        if header.is_control:
            self._active.discard(header.producer_id)
            return True
        return header.is_transactional and header.producer_id in self._active


class Consumer:
    """Reads topics as a member of `group_id` (or, with `group_id=None`, every partition, committing nothing)."""

    _next_id = 1

    def __init__(
        self,
        transport: Transport,
        topics: str | Sequence[str],
        *,
        group_id: str | None,
        poll_interval: float = 0.1,
        auto_offset_reset: OffsetReset = "earliest",
        enable_auto_commit: bool = True,
        auto_commit_interval: float = 1.0,
        session_timeout: float = 10.0,
        heartbeat_interval: float = 1.0,
        rebalance_timeout: float | None = None,
        max_poll_records: int = 500,
        fetch_max_bytes: int = 1 << 20,
        assignor: AssignorName = "range",
        isolation_level: IsolationLevel = "read_uncommitted",
        name: str | None = None,
    ) -> None:
        if auto_offset_reset not in ("earliest", "latest", "none"):
            raise ValueError(f"auto_offset_reset must be earliest, latest or none, not {auto_offset_reset!r}")
        if poll_interval <= 0 or session_timeout <= 0 or heartbeat_interval <= 0:
            raise ValueError("poll_interval, session_timeout and heartbeat_interval must be positive")
        self._transport = transport
        self.topics = (topics,) if isinstance(topics, str) else tuple(topics)
        for topic in self.topics:
            transport.partition_count(topic)  # unknown topic: fail here, with the topic's name
        self.group_id = group_id
        retries = {topic: retry_topic_or_none(topic, group_id) for topic in self.topics}
        self._retry_topics = {retry: topic for topic, retry in retries.items() if retry is not None}  # retry -> topic
        self._subscribed = self.topics  # the topics, and the retry topics that exist
        self.poll_interval = poll_interval
        self._reset = auto_offset_reset
        self._auto_commit = enable_auto_commit and group_id is not None
        self._auto_commit_interval = auto_commit_interval
        self._session_timeout_ms = int(session_timeout * 1000)
        self._rebalance_timeout_ms = int((rebalance_timeout or session_timeout) * 1000)
        self._heartbeat_interval = heartbeat_interval
        self._max_poll_records = max_poll_records
        self._fetch_max_bytes = fetch_max_bytes
        if isolation_level not in ("read_committed", "read_uncommitted"):
            raise ValueError(f"isolation_level must be read_committed or read_uncommitted, not {isolation_level!r}")
        self._read_committed = isolation_level == "read_committed"
        if assignor not in ASSIGNORS:
            raise ValueError(f"unknown assignor {assignor!r}: choose one of {', '.join(ASSIGNORS)}")
        self._assignor_name = assignor
        self.name = name or f"consumer-{Consumer._next_id}"
        Consumer._next_id += 1
        self.member_id = ""
        self.generation_id = -1  # the generation that assigned `assignment()`
        self._joined_generation = -1  # the generation last joined: ahead of generation_id until SyncGroup answers
        self._assignment: tuple[TopicPartition, ...] = ()
        self._positions: dict[TopicPartition, int] = {}
        self._committed: dict[TopicPartition, int] = {}
        self._buffer: deque[list[Message]] = deque()  # chunks: one fetch of one partition each, in offset order
        self._taken = 0  # messages of _buffer[0] already handed out
        self._next_partition = 0
        self._rejoin_needed = group_id is not None
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._last_commit = 0.0
        self._stopping = False
        self._closed = False

    # --- lifecycle --------------------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def start(self) -> None:
        """Join the group and take an assignment (or, without a group, assign every partition)."""
        if self.group_id is None:
            self._assign([(t, p) for t in self.topics for p in range(self._transport.partition_count(t))])
        else:
            self._refresh_subscription()
            await self._ensure_membership()
            self._heartbeat_task = asyncio.create_task(self._heartbeat_loop(), name=f"{self.name}-heartbeat")

    def stop(self) -> None:
        """Make `async for` and `run()` end after the message in hand (the consumer stays a member until close)."""
        self._stopping = True

    async def close(self) -> None:
        """Commit (with auto-commit), leave the group (its partitions move to the others at once), stop."""
        if self._closed:
            return
        self._stopping = True
        if self._heartbeat_task is not None:
            self._heartbeat_task.cancel()
            await asyncio.gather(self._heartbeat_task, return_exceptions=True)
        try:
            if self.group_id is not None and self.member_id and self._auto_commit:
                await self._commit_quietly()
        finally:
            if self.group_id is not None and self.member_id:
                self._transport.leave_group(self.group_id, self.member_id)
                logger.info("%s left group %s", self.name, self.group_id)
            self._closed = True

    # --- consuming --------------------------------------------------------------------------------------------

    def assignment(self) -> set[TopicPartition]:
        """The (topic, partition) pairs this consumer owns now."""
        return set(self._assignment)

    def position(self, topic: str, partition: int) -> int:
        return self._positions[(topic, partition)]

    def __aiter__(self) -> AsyncIterator[Message]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Message]:
        while not self._stopping:
            if not self._buffer or self._rejoin_needed:  # a pending rebalance drops the buffer: rejoin promptly
                await self._fill_buffer(self.poll_interval)
                continue
            chunk = self._buffer[0]
            message = chunk[self._taken]
            self._taken += 1
            if self._taken == len(chunk):
                self._buffer.popleft()
                self._taken = 0
            self._positions[(message.topic, message.partition)] = message.offset + 1
            yield message

    async def getmany(self, timeout: float | None = None, max_records: int | None = None) -> list[Message]:
        """Up to `max_records` messages, waiting at most `timeout` (default `poll_interval`) when none are ready."""
        if not self._buffer or self._rejoin_needed:
            await self._fill_buffer(self.poll_interval if timeout is None else timeout)
        limit = max_records or self._max_poll_records
        messages: list[Message] = []
        while self._buffer and len(messages) < limit:
            chunk = self._buffer[0]
            end = min(len(chunk), self._taken + limit - len(messages))
            messages += chunk if self._taken == 0 and end == len(chunk) else chunk[self._taken : end]
            last = chunk[end - 1]  # a chunk is one partition in offset order: its last message sets the position
            self._positions[(last.topic, last.partition)] = last.offset + 1
            if end == len(chunk):
                self._buffer.popleft()
                self._taken = 0
            else:
                self._taken = end
        return messages

    async def _fill_buffer(self, wait: float) -> None:
        self._check_open()
        if self.group_id is not None:
            self._heartbeat(self.group_id)
            if self._refresh_subscription():
                self._rejoin_needed = True
        await self._ensure_membership()
        await self._maybe_auto_commit()
        if self._fetch_round():
            return
        if not self._assignment:
            await asyncio.sleep(wait)  # a hot standby: nothing to read until a rebalance gives us partitions
            return
        await self._transport.wait_for_data(self._assignment, wait)
        self._fetch_round()

    def _fetch_round(self) -> bool:
        """Fetch from the owned partitions, starting after the last one served (fairness); True if any data came."""
        count = len(self._assignment)
        for step in range(count):
            topic, partition = self._assignment[(self._next_partition + step) % count]
            if self._fetch_partition(topic, partition):
                self._next_partition = (self._next_partition + step + 1) % count
                return True
        return False

    def _fetch_partition(self, topic: str, partition: int) -> bool:
        position = self._positions[(topic, partition)]
        try:
            data = self._transport.fetch(
                topic, partition, position, self._fetch_max_bytes, read_committed=self._read_committed
            )
        except OffsetOutOfRangeError as exc:
            self._positions[(topic, partition)] = self._reset_position(topic, partition, exc)
            return False
        records = data.records
        pos = 0
        chunk: list[Message] = []
        skipped_to = position
        aborted = _AbortedRanges(data.aborted_transactions)
        while pos < len(records) and len(chunk) < self._max_poll_records:
            header = read_header(records, pos)
            skip = aborted.skips(header)
            skipped_to = header.last_offset + 1
            if header.last_offset >= position and not skip:
                columns = decode_columns(records, pos)
                fields = zip(
                    repeat(topic),
                    repeat(partition),
                    columns.offsets,
                    columns.keys,
                    columns.values,
                    columns.headers,
                    columns.timestamps,
                    strict=False,  # repeat() is endless; the columns are of equal length
                )
                # tuple.__new__ is what Message's own __new__ calls, minus a Python frame per record.
                messages = cast(Iterator[Message], map(tuple.__new__, repeat(Message), fields))
                if min(columns.offsets, default=position) < position:  # the batch holding the position
                    chunk += [message for message in messages if message.offset >= position]
                else:
                    chunk += messages
            pos += header.size
        if chunk:
            self._buffer.append(chunk)
            logger.debug("%s read %d messages from %s-%d offset=%d", self.name, len(chunk), topic, partition, position)
        elif skipped_to > position:
            # Only batches without a message for us (markers, aborted records, a compacted topic's header-only batch):
            # step past them, or the next fetch would return them again.
            self._positions[(topic, partition)] = skipped_to
        return bool(chunk)

    async def run(self, handler: Handler, *, max_retries: int = 3, backoff: float = 0.1) -> None:
        """Call `handler(message)` for every message until `stop()` or `close()`.

        A handler that raises is retried `max_retries` times with exponential backoff; then the message goes to the
        dead-letter topic with the exception and the consumer moves on. A handler's failure never ends the loop.
        """
        async for message in self:
            await handle_with_retries(self.name, handler, message, max_retries, backoff, self._dead_letter)

    async def _dead_letter(self, message: Message, error: Exception) -> tuple[str, int, int]:
        return await self._transport.dead_letter(
            self._retry_topics.get(message.topic, message.topic),  # a replay failing again: the same DLQ
            message.partition,
            message.key,
            message.value,
            message.headers,
            error,
            offset=message.offset,
            timestamp=message.timestamp,
            group_id=self.group_id,
        )

    # --- offsets ----------------------------------------------------------------------------------------------

    async def commit(self) -> None:
        """Store the positions of every owned partition for the group; `GroupError` if the group moved on."""
        self._check_open()
        if self.group_id is None:
            raise GroupError("a consumer without group_id has no offsets to commit", 24)
        pending = [(t, p, o) for (t, p), o in self._positions.items() if self._committed.get((t, p)) != o]
        if not pending:
            return
        error = await self._transport.commit(self.group_id, self.member_id, self.generation_id, pending)
        if error:
            if error in _REJOIN_ERRORS:
                self._rejoin_needed = True
            raise GroupError(f"commit refused by group {self.group_id} (Kafka error {error}); rejoining", error)
        for topic, partition, offset in pending:
            self._committed[(topic, partition)] = offset
        self._last_commit = asyncio.get_running_loop().time()

    async def seek(self, topic: str, partition: int, offset: int) -> None:
        """Move the position of an owned partition; the next message is the one at `offset` (replay or skip)."""
        if (topic, partition) not in self._positions:
            raise UnknownPartitionError(f"{self.name} does not own {topic}-{partition}; assignment: {self._assignment}")
        start = self._transport.list_offset(topic, partition, _EARLIEST)
        end = self._transport.list_offset(topic, partition, _LATEST)
        if not isinstance(offset, int) or not start <= offset <= end:
            raise OffsetOutOfRangeError(offset, start, end)
        self._positions[(topic, partition)] = offset
        head = self._buffer[0] if self._buffer else None
        self._buffer = deque(c for c in self._buffer if (c[0].topic, c[0].partition) != (topic, partition))
        if not self._buffer or self._buffer[0] is not head:
            self._taken = 0

    async def _maybe_auto_commit(self) -> None:
        if self._auto_commit and asyncio.get_running_loop().time() - self._last_commit >= self._auto_commit_interval:
            await self._commit_quietly()

    async def _commit_quietly(self) -> None:
        try:
            await self.commit()
        except GroupError as exc:
            logger.info("%s: %s", self.name, exc)

    def _reset_position(self, topic: str, partition: int, cause: KafkaLiteError | None = None) -> int:
        if topic in self._retry_topics:  # replays written before this group first read the retry topic count too
            return self._transport.list_offset(topic, partition, _EARLIEST)
        if self._reset == "none":
            raise cause or OffsetOutOfRangeError(-1, -1, -1)
        return self._transport.list_offset(topic, partition, _EARLIEST if self._reset == "earliest" else _LATEST)

    # --- membership -------------------------------------------------------------------------------------------

    async def _ensure_membership(self) -> None:
        while self._rejoin_needed and self.group_id is not None and not self._closed:
            if self._auto_commit and self._assignment:
                await self._commit_quietly()
            self._rejoin_needed = False
            if not await self._join_and_sync(self.group_id):
                self._rejoin_needed = True
                await asyncio.sleep(min(self.poll_interval, 0.05))

    async def _join_and_sync(self, group_id: str) -> bool:
        subscription = encode_subscription(
            Subscription(self._subscribed, owned_partitions=self._assignment, generation_id=self.generation_id)
        )
        joined = await self._transport.join_group(
            group_id,
            self.member_id,
            protocols=[(self._assignor_name, subscription)],
            session_timeout_ms=self._session_timeout_ms,
            rebalance_timeout_ms=self._rebalance_timeout_ms,
            client_id=self.name,
        )
        if joined.error_code:
            if joined.error_code == 25:  # UNKNOWN_MEMBER_ID: our membership expired; join as new
                self.member_id = ""
            elif joined.error_code not in _REJOIN_ERRORS and joined.error_code != 79:
                message = f"{self.name} cannot join group {group_id}: Kafka error {joined.error_code}"
                raise GroupError(message, joined.error_code)
            else:  # MEMBER_ID_REQUIRED hands out the id to join with
                self.member_id = joined.member_id or self.member_id
            return False
        self.member_id = joined.member_id
        self._joined_generation = joined.generation_id  # heartbeats while SyncGroup waits keep the member alive
        assignments = None
        if joined.leader_id == joined.member_id:
            assignments = self._compute_assignments({m.member_id: m.metadata for m in joined.members})
        synced = await self._transport.sync_group(group_id, self.member_id, joined.generation_id, assignments)
        if synced.error_code:
            if synced.error_code == 25:
                self.member_id = ""
            return False
        partitions = decode_assignment(synced.assignment).partitions if synced.assignment else ()
        # The generation and the partitions it assigns change together: nobody sees a new generation beside the
        # previous one's partitions (between JoinGroup and SyncGroup the member still owns those of its last one).
        self.generation_id = joined.generation_id
        self._assign(list(partitions))
        logger.info(
            "%s owns %s in group %s generation %d",
            self.name,
            ", ".join(f"{t}-{p}" for t, p in self._assignment) or "nothing (standby)",
            group_id,
            self.generation_id,
        )
        return True

    def _compute_assignments(self, metadata: dict[str, bytes]) -> dict[str, bytes]:
        subscriptions = {
            member: MemberSubscription.from_subscription(decode_subscription(data)) for member, data in metadata.items()
        }
        topics = {t for s in subscriptions.values() for t in s.topics}
        counts = {t: self._transport.partition_count(t) for t in topics}
        plan = ASSIGNORS[self._assignor_name](subscriptions, counts)
        return {member: encode_assignment(Assignment(tuple(plan.get(member, ())))) for member in subscriptions}

    def _assign(self, partitions: list[TopicPartition]) -> None:
        self._assignment = tuple(sorted(partitions))
        self._buffer.clear()
        self._taken = 0
        self._positions = {}
        self._committed = {}
        for topic, partition in self._assignment:
            committed = self._transport.committed(self.group_id, topic, partition) if self.group_id else None
            if committed is not None:
                self._committed[(topic, partition)] = committed
            self._positions[(topic, partition)] = (
                committed if committed is not None else self._reset_position(topic, partition)
            )
        self._next_partition = 0

    def _refresh_subscription(self) -> bool:
        """Add the retry topics created since the last look; True if the subscription grew."""
        subscribed = self.topics + tuple(r for r in self._retry_topics if self._transport.topic_exists(r))
        if subscribed == self._subscribed:
            return False
        self._subscribed = subscribed
        return True

    async def _heartbeat_loop(self) -> None:
        assert self.group_id is not None
        while True:
            await asyncio.sleep(self._heartbeat_interval)
            self._heartbeat(self.group_id)

    def _heartbeat(self, group_id: str) -> None:
        if self._rejoin_needed or not self.member_id:
            return
        error = self._transport.heartbeat(group_id, self.member_id, self._joined_generation)
        if error in _REJOIN_ERRORS:
            self._rejoin_needed = True
            if error == 25:
                self.member_id = ""

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError(f"{self.name} is closed")
