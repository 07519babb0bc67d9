"""Dead letters on a Kafka cluster: written, listed and replayed with the embedded broker's format and rules.

The record format, the retry-topic rule (a replay reaches only the group that failed) and the replay progress (the
committed offsets of `__kafkalite-dlq-replay[.<group>]` on `<topic>.DLQ`) are `kafkalite.broker.dead_letter_format`'s,
so letters written embedded and served can be listed and replayed from here, and the other way round. Everything goes
through ordinary Kafka requests: Metadata/CreateTopics/CreatePartitions for the topics, Produce with acks=all for
letters and replays, Fetch to list, OffsetFetch/OffsetCommit (standalone commits, no group membership) for progress.

Concurrency: replays from this process take one lock (two at once would republish the same letters). Two processes
replaying the same topic at the same moment can both republish a letter: Kafka gives no lock across clients, and
progress is committed after each letter, so the window is one letter.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from kafkalite.broker.dead_letter_format import (
    REPLAY_GROUP,
    DeadLetter,
    Replay,
    dead_letter_headers,
    dead_letter_topic,
    decode_dead_letter,
    is_pending,
    progress_after,
    replay_group,
    replay_target,
    retry_topic_or_none,
    selected,
)
from kafkalite.client.network.kafka_errors import translate
from kafkalite.errors import UnreachableError

if TYPE_CHECKING:
    from kafkalite.client.network.cluster import Cluster

logger = logging.getLogger("kafkalite.dlq")

Headers = Sequence[tuple[str, bytes | None]]
_POLL_MS = 100  # reading a DLQ to its end: short polls, so the first (often empty, after a seek) costs little


class NetworkDeadLetters:
    """`broker.dead_letters` of a `kafkalite.connect()` cluster: `list`, `replay` and `send` as the embedded ones."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self._producer: AIOKafkaProducer | None = None
        self._starting = asyncio.Lock()
        self._replaying = asyncio.Lock()
        self._ensured: dict[str, int] = {}  # topics known to have at least this many partitions

    async def close(self) -> None:
        if self._producer is not None:
            producer, self._producer = self._producer, None
            await producer.stop()

    async def send(
        self,
        topic: str,
        partition: int,
        key: bytes | None,
        value: bytes | None,
        headers: Headers,
        error: BaseException,
        *,
        offset: int = -1,
        timestamp: int = -1,
        group_id: str | None = None,
    ) -> tuple[str, int, int]:
        """Write one dead letter for (topic, partition); create or grow `<topic>.DLQ` (and with a group, the group's
        retry topic) as needed. Return (dead-letter topic, partition, offset)."""
        dlq = dead_letter_topic(topic)
        count = await self._cluster.partition_count(topic)
        await self._ensure(dlq, count)
        retry = retry_topic_or_none(topic, group_id)
        if retry is not None:
            await self._ensure(retry, count)
        letter_headers = [*headers, *dead_letter_headers(topic, partition, offset, timestamp, error, group_id)]
        written = await self._produce(dlq, partition, key, value, letter_headers)
        logger.info(
            "Dead-lettered topic=%s partition=%d offset=%d to %s offset=%d: %s",
            topic,
            partition,
            offset,
            dlq,
            written,
            type(error).__name__,
        )
        return dlq, partition, written

    async def list(self, topic: str) -> builtins.list[DeadLetter]:
        """Every dead letter of `topic`, partition by partition, in offset order."""
        dlq = dead_letter_topic(topic)
        count = (await self._cluster.partition_counts([dlq])).get(dlq)
        if count is None:
            return []
        settings = self._cluster.settings_for(
            AIOKafkaConsumer, enable_auto_commit=False, auto_offset_reset="earliest", fetch_max_wait_ms=_POLL_MS
        )
        consumer = AIOKafkaConsumer(**settings)
        try:
            await consumer.start()
            letters: builtins.list[DeadLetter] = []
            for partition in range(count):
                letters += await _read_partition(consumer, TopicPartition(dlq, partition))
            return letters
        except Exception as exc:
            raise translate(exc, f"cannot read {dlq}") from exc
        finally:
            await consumer.stop()

    async def replay(self, topic: str, *, group: str | None = None, dry_run: bool = False) -> builtins.list[Replay]:
        """Deliver the dead letters of `topic` not replayed yet again, each to the group that failed it (its retry
        topic; letters without a group go back to `topic`); only `group`'s letters when given. Return what was
        (with `dry_run`: would be) replayed, and where to."""
        async with self._replaying:
            letters = await self.list(topic)
            if not letters:
                return []
            dlq = dead_letter_topic(topic)
            count = await self._cluster.partition_count(topic)
            partitions = sorted({letter.dlq_partition for letter in letters})
            groups = {replay_group(letter.consumer_group) for letter in letters}
            progress = await self._progress(dlq, partitions, groups)
            done: builtins.list[Replay] = []
            committers: dict[str, AIOKafkaConsumer] = {}
            try:
                for letter in letters:
                    if not (selected(letter, group) and is_pending(letter, progress.get(letter.dlq_partition, {}))):
                        continue
                    replay = replay_target(topic, letter, count)
                    if not dry_run:
                        await self._republish(dlq, replay, group, count, committers)
                    done.append(replay)
            finally:
                for committer in committers.values():
                    await committer.stop()
        if done and not dry_run:
            logger.info("Replayed %d dead letters of topic=%s", len(done), topic)
        return done

    async def _progress(self, dlq: str, partitions: Sequence[int], groups: set[str]) -> dict[int, dict[str, int]]:
        """DLQ partition -> replay group -> committed offset, for the common progress and `groups`."""
        progress: dict[int, dict[str, int]] = {}
        tps = [TopicPartition(dlq, partition) for partition in partitions]
        for progress_group in sorted({REPLAY_GROUP, *groups}):
            try:
                committed = await self._cluster.admin.list_consumer_group_offsets(progress_group, partitions=tps)
            except Exception as exc:
                raise translate(exc, f"cannot read the replay progress of {dlq}") from exc
            for tp, found in committed.items():
                if tp.topic == dlq and found.offset >= 0:
                    progress.setdefault(tp.partition, {})[progress_group] = found.offset
        return progress

    async def _republish(
        self, dlq: str, replay: Replay, group: str | None, count: int, committers: dict[str, AIOKafkaConsumer]
    ) -> None:
        letter = replay.letter
        if replay.topic != letter.original_topic:
            await self._ensure(replay.topic, count)
        await self._produce(replay.topic, replay.partition, letter.key, letter.value, letter.headers)
        progress_group, offset = progress_after(letter, group)
        committer = committers.get(progress_group)
        if committer is None:
            settings = self._cluster.settings_for(AIOKafkaConsumer, group_id=progress_group, enable_auto_commit=False)
            committer = committers[progress_group] = AIOKafkaConsumer(**settings)
            await committer.start()
        tp = TopicPartition(dlq, letter.dlq_partition)
        try:
            committer.assign([tp])
            await committer.commit({tp: offset})
        except Exception as exc:
            raise translate(exc, f"cannot record the replay of {dlq} offset {letter.dlq_offset}") from exc

    async def _ensure(self, name: str, count: int) -> None:
        if self._ensured.get(name, 0) >= count:
            return
        await self._cluster.ensure_partitions(name, count)
        self._ensured[name] = count

    async def _produce(
        self, topic: str, partition: int, key: bytes | None, value: bytes | None, headers: Headers
    ) -> int:
        producer = await self._client()
        wire_headers = [(name, data or b"") for name, data in headers]  # aiokafka writes no null header values
        stamp = int(time.time() * 1000)
        try:
            sent = await producer.send_and_wait(
                topic, value, key, partition=partition, timestamp_ms=stamp, headers=wire_headers
            )
        except Exception as exc:
            raise translate(exc, f"cannot write to {topic}-{partition}") from exc
        offset: int = sent.offset
        return offset

    async def _client(self) -> AIOKafkaProducer:
        async with self._starting:
            if self._producer is None:
                settings = self._cluster.settings_for(AIOKafkaProducer, acks="all", client_id="kafkalite-dlq")
                producer = AIOKafkaProducer(**settings)
                try:
                    await producer.start()
                except Exception as exc:
                    await producer.stop()
                    raise translate(exc, f"cannot connect to {self._cluster.bootstrap}") from exc
                self._producer = producer
            return self._producer


async def _read_partition(consumer: AIOKafkaConsumer, tp: TopicPartition) -> list[DeadLetter]:
    """Every record of `tp` from its log start to its end offset now, decoded as dead letters."""
    consumer.assign([tp])
    start = (await consumer.beginning_offsets([tp]))[tp]
    end = (await consumer.end_offsets([tp]))[tp]
    if start >= end:
        return []
    consumer.seek(tp, start)
    letters: list[DeadLetter] = []
    deadline = time.monotonic() + 60
    while await consumer.position(tp) < end:
        if time.monotonic() > deadline:
            raise UnreachableError(f"reading {tp.topic}-{tp.partition} up to offset {end} took over 60 s")
        batch: Any = await consumer.getmany(tp, timeout_ms=_POLL_MS)
        for record in batch.get(tp, []):
            if record.offset < end:
                headers = tuple(record.headers)
                letters.append(
                    decode_dead_letter(tp.partition, record.offset, record.key, record.value, headers, record.timestamp)
                )
    return letters
