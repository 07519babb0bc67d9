"""The network consumer: `kafkalite.Consumer`'s interface and semantics, reading through aiokafka's consumer.

aiokafka runs the group protocol (join, sync, heartbeats in its own task, the assignor named by `assignor`) and the
fetching. KafkaLite keeps what the embedded consumer promises on top:

- a message counts as consumed once it is handed out (`async for`, `getmany`, `run`); auto-commit and `commit()`
  store exactly those positions (aiokafka's own auto-commit is off: it would commit what was fetched, not what was
  handled), and so does a rebalance before the partitions move, so the next owner resumes where this one stopped;
- `run(handler, max_retries=, backoff=)`: the same retry loop as the embedded consumer (`client.handling`), then
  `<topic>.DLQ` with Spring Kafka's headers and this group's name;
- a consumer of group `G` also reads `G`'s retry topics (`<topic>.<G>.retry`, where replays of its dead letters go)
  that exist, from their earliest offset when the group has no position there yet. Those created later are looked
  for every `_RETRY_TOPIC_CHECK_S` (and at once after this consumer dead-letters a message); one that appears is
  added to the subscription after committing the positions handed out, so the rebalance it causes loses none.
  The subscription is a list of existing topics, never a pattern or a missing name: aiokafka's metadata requests
  for a missing topic would auto-create it on clusters that allow that, with the wrong partition count.

Without `group_id` the consumer is assigned every partition of its topics and commits nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

from kafkalite.broker.dead_letter_format import retry_topic_or_none
from kafkalite.client.consumer import AssignorName, OffsetReset
from kafkalite.client.handling import Handler, handle_with_retries
from kafkalite.client.network.kafka_errors import translate
from kafkalite.client.records import Message
from kafkalite.errors import ClosedError, GroupError, OffsetOutOfRangeError, UnknownPartitionError, UnknownTopicError

if TYPE_CHECKING:
    from kafkalite.client.network.cluster import Cluster

logger = logging.getLogger("kafkalite.consumer")

_ASSIGNORS: dict[str, type] = {
    "range": RangePartitionAssignor,
    "roundrobin": RoundRobinPartitionAssignor,
    "sticky": StickyPartitionAssignor,
}
_RETRY_TOPIC_CHECK_S = 2.0  # how soon a retry topic made elsewhere is noticed
_Tp = tuple[str, int]


class NetworkConsumer:
    """Reads topics from a Kafka cluster as a member of `group_id`; the same methods as `kafkalite.Consumer`."""

    _next_id = 1

    def __init__(
        self,
        cluster: Cluster,
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
        name: str | None = None,
        **aiokafka_options: Any,
    ) -> None:
        if auto_offset_reset not in ("earliest", "latest", "none"):
            raise ValueError(f"auto_offset_reset must be earliest, latest or none, not {auto_offset_reset!r}")
        if poll_interval <= 0 or session_timeout <= 0 or heartbeat_interval <= 0:
            raise ValueError("poll_interval, session_timeout and heartbeat_interval must be positive")
        if assignor not in _ASSIGNORS:
            raise ValueError(f"unknown assignor {assignor!r}: choose one of {', '.join(_ASSIGNORS)}")
        self._cluster = cluster
        self.topics = (topics,) if isinstance(topics, str) else tuple(topics)
        self.group_id = group_id
        retries = {topic: retry_topic_or_none(topic, group_id) for topic in self.topics}
        self._retry_topics = {retry: topic for topic, retry in retries.items() if retry is not None}  # retry -> topic
        self.poll_interval = poll_interval
        self._auto_commit = enable_auto_commit and group_id is not None
        self._auto_commit_interval = auto_commit_interval
        self._max_poll_records = max_poll_records
        self.name = name or f"consumer-{NetworkConsumer._next_id}"
        NetworkConsumer._next_id += 1
        self._settings = cluster.settings_for(
            AIOKafkaConsumer,
            client_id=self.name,
            group_id=group_id,
            enable_auto_commit=False,
            auto_offset_reset=auto_offset_reset,
            session_timeout_ms=int(session_timeout * 1000),
            heartbeat_interval_ms=int(heartbeat_interval * 1000),
            rebalance_timeout_ms=int((rebalance_timeout or session_timeout) * 1000),
            max_poll_records=max_poll_records,
            fetch_max_bytes=fetch_max_bytes,
            max_partition_fetch_bytes=fetch_max_bytes,
            fetch_max_wait_ms=int(poll_interval * 1000),
            partition_assignment_strategy=(_ASSIGNORS[assignor],),
            **aiokafka_options,
        )
        self._subscribed = self.topics  # the topics, and the retry topics that exist
        self._next_retry_check = 0.0
        self._consumer: AIOKafkaConsumer | None = None
        self._assignment: set[_Tp] = set()
        self._positions: dict[_Tp, int] = {}
        self._committed: dict[_Tp, int] = {}
        self._buffer: deque[Message] = deque()
        self._assigned = asyncio.Event()
        self._last_commit = 0.0
        self._stopping = False
        self._closed = False

    @property
    def member_id(self) -> str:
        coordinator = getattr(self._consumer, "_coordinator", None)
        return str(getattr(coordinator, "member_id", "") or "")

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
        counts = await self._cluster.partition_counts([*self.topics, *self._retry_topics])
        for topic in self.topics:
            if topic not in counts:
                raise UnknownTopicError(f"unknown topic {topic!r} on {self._cluster.bootstrap}")
        consumer = AIOKafkaConsumer(**self._settings)
        try:
            await consumer.start()
        except Exception as exc:
            await consumer.stop()
            raise translate(exc, f"{self.name} cannot connect to {self._cluster.bootstrap}") from exc
        self._consumer = consumer
        try:
            if self.group_id is None:
                consumer.assign([TopicPartition(t, p) for t in self.topics for p in range(counts[t])])
                await self._assign(set(consumer.assignment()))
                return
            self._subscribed = self.topics + tuple(r for r in self._retry_topics if r in counts)
            consumer.subscribe(topics=list(self._subscribed), listener=_Listener(self))
            self._next_retry_check = asyncio.get_running_loop().time() + _RETRY_TOPIC_CHECK_S
            await self._wait_for_assignment()
        except BaseException:
            self._closed = True  # `async with` calls no close() when start() fails: leave nothing running
            await consumer.stop()
            raise

    async def _wait_for_assignment(self) -> None:
        """Wait for the first assignment (possibly empty: a hot standby), as the embedded consumer's start does;
        aiokafka's coordinator task joins the group in the background."""
        try:
            async with asyncio.timeout(self._settings["rebalance_timeout_ms"] / 1000 + 30):
                await self._assigned.wait()
        except TimeoutError:
            raise GroupError(f"{self.name} got no assignment in group {self.group_id}", 27) from None

    async def _look_for_retry_topics(self) -> None:
        """Subscribe to the retry topics created since the last look, committing first (see the module doc)."""
        missing = [r for r in self._retry_topics if r not in self._subscribed]
        self._next_retry_check = asyncio.get_running_loop().time() + _RETRY_TOPIC_CHECK_S
        if not missing:
            return
        found = await self._cluster.partition_counts(missing)
        if not found:
            return
        if self._auto_commit:
            await self._commit_quietly()
        self._subscribed += tuple(r for r in missing if r in found)
        self._client().subscribe(topics=list(self._subscribed), listener=_Listener(self))
        logger.info("%s subscribes to %s", self.name, ", ".join(r for r in missing if r in found))

    def stop(self) -> None:
        """Make `async for` and `run()` end after the message in hand (the consumer stays a member until close)."""
        self._stopping = True

    async def close(self) -> None:
        """Commit (with auto-commit), leave the group (its partitions move to the others at once), stop."""
        if self._closed:
            return
        self._stopping = True
        try:
            if self._auto_commit and self._consumer is not None:
                await self._commit_quietly()
        finally:
            self._closed = True
            if self._consumer is not None:
                await self._consumer.stop()
                if self.group_id is not None:
                    logger.info("%s left group %s", self.name, self.group_id)

    def _client(self) -> AIOKafkaConsumer:
        if self._closed:
            raise ClosedError(f"{self.name} is closed")
        if self._consumer is None:
            raise ClosedError(f"{self.name} is not started: use `async with` or `await consumer.start()`")
        return self._consumer

    # --- assignment (called by aiokafka's coordinator through _Listener) --------------------------------------

    async def _revoke(self) -> None:
        if self._auto_commit:
            await self._commit_quietly()
        self._buffer.clear()
        self._assignment = set()
        self._positions = {}

    async def _assign(self, partitions: set[TopicPartition]) -> None:
        consumer = self._client()
        self._assignment = {(tp.topic, tp.partition) for tp in partitions}
        self._buffer.clear()
        self._positions = {}
        self._committed = {}
        for tp in partitions:
            committed = await consumer.committed(tp) if self.group_id is not None else None
            if committed is not None:
                self._committed[(tp.topic, tp.partition)] = committed
            elif tp.topic in self._retry_topics:  # replays written before the group first read it count too
                await consumer.seek_to_beginning(tp)
            self._positions[(tp.topic, tp.partition)] = await consumer.position(tp)
        logger.info(
            "%s owns %s in group %s",
            self.name,
            ", ".join(f"{t}-{p}" for t, p in sorted(self._assignment)) or "nothing (standby)",
            self.group_id,
        )
        self._assigned.set()

    # --- consuming --------------------------------------------------------------------------------------------

    def assignment(self) -> set[_Tp]:
        """The (topic, partition) pairs this consumer owns now."""
        return set(self._assignment)

    def position(self, topic: str, partition: int) -> int:
        return self._positions[(topic, partition)]

    def __aiter__(self) -> AsyncIterator[Message]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Message]:
        while not self._stopping:
            if not self._buffer:
                await self._fill(self.poll_interval)
                continue
            message = self._buffer.popleft()
            self._positions[(message.topic, message.partition)] = message.offset + 1
            yield message

    async def getmany(self, timeout: float | None = None, max_records: int | None = None) -> list[Message]:
        """Up to `max_records` messages, waiting at most `timeout` (default `poll_interval`) when none are ready."""
        if not self._buffer:
            await self._fill(self.poll_interval if timeout is None else timeout)
        limit = max_records or self._max_poll_records
        messages = [self._buffer.popleft() for _ in range(min(limit, len(self._buffer)))]
        for message in messages:
            self._positions[(message.topic, message.partition)] = message.offset + 1
        return messages

    async def _fill(self, wait: float) -> None:
        consumer = self._client()
        await self._maybe_auto_commit()
        if self.group_id is not None and asyncio.get_running_loop().time() >= self._next_retry_check:
            await self._look_for_retry_topics()
        try:
            records = await consumer.getmany(timeout_ms=int(wait * 1000), max_records=self._max_poll_records)
        except Exception as exc:
            raise translate(exc, f"{self.name} cannot fetch") from exc
        self._take(records)

    def _take(self, records: dict[TopicPartition, list[Any]]) -> None:
        for tp, batch in records.items():
            if (tp.topic, tp.partition) not in self._assignment:
                continue  # fetched before a rebalance took the partition away
            position = self._positions.get((tp.topic, tp.partition), 0)
            self._buffer.extend(
                Message(r.topic, r.partition, r.offset, r.key, r.value, tuple(r.headers), r.timestamp)
                for r in batch
                if r.offset >= position
            )

    async def run(self, handler: Handler, *, max_retries: int = 3, backoff: float = 0.1) -> None:
        """Call `handler(message)` for every message until `stop()` or `close()`.

        A handler that raises is retried `max_retries` times with exponential backoff; then the message goes to the
        dead-letter topic with the exception and the consumer moves on. A handler's failure never ends the loop.
        """
        async for message in self:
            await handle_with_retries(self.name, handler, message, max_retries, backoff, self._dead_letter)

    async def _dead_letter(self, message: Message, error: Exception) -> tuple[str, int, int]:
        topic = self._retry_topics.get(message.topic, message.topic)  # a replay failing again: the same DLQ
        where = await self._cluster.dead_letters.send(
            topic,
            message.partition,
            message.key,
            message.value,
            message.headers,
            error,
            offset=message.offset,
            timestamp=message.timestamp,
            group_id=self.group_id,
        )
        if retry_topic_or_none(topic, self.group_id) not in (None, *self._subscribed):
            self._next_retry_check = 0.0  # the letter created the retry topic: subscribe at the next fetch
        return where

    # --- offsets ----------------------------------------------------------------------------------------------

    async def commit(self) -> None:
        """Store the positions of every owned partition for the group; `GroupError` if the group moved on."""
        consumer = self._client()
        if self.group_id is None:
            raise GroupError("a consumer without group_id has no offsets to commit", 24)
        pending = {tp: o for tp, o in self._positions.items() if self._committed.get(tp) != o}
        if not pending:
            return
        try:
            await consumer.commit({TopicPartition(t, p): o for (t, p), o in pending.items()})
        except Exception as exc:
            code = getattr(exc, "errno", -1)
            raise GroupError(f"commit refused by group {self.group_id} ({exc!r}); rejoining", code) from exc
        self._committed.update(pending)
        self._last_commit = asyncio.get_running_loop().time()

    async def seek(self, topic: str, partition: int, offset: int) -> None:
        """Move the position of an owned partition; the next message is the one at `offset` (replay or skip)."""
        consumer = self._client()
        if (topic, partition) not in self._positions:
            raise UnknownPartitionError(f"{self.name} does not own {topic}-{partition}; assignment: {self._assignment}")
        tp = TopicPartition(topic, partition)
        start = (await consumer.beginning_offsets([tp]))[tp]
        end = (await consumer.end_offsets([tp]))[tp]
        if not isinstance(offset, int) or not start <= offset <= end:
            raise OffsetOutOfRangeError(offset, start, end)
        consumer.seek(tp, offset)
        self._positions[(topic, partition)] = offset
        self._buffer = deque(m for m in self._buffer if (m.topic, m.partition) != (topic, partition))

    async def _maybe_auto_commit(self) -> None:
        if self._auto_commit and asyncio.get_running_loop().time() - self._last_commit >= self._auto_commit_interval:
            await self._commit_quietly()

    async def _commit_quietly(self) -> None:
        try:
            await self.commit()
        except GroupError as exc:
            logger.info("%s: %s", self.name, exc)


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    """aiokafka's rebalance callbacks, handed to the consumer: commit before partitions move, take new ones after."""

    def __init__(self, owner: NetworkConsumer) -> None:
        self._owner = owner

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        await self._owner._revoke()

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        await self._owner._assign(assigned)
