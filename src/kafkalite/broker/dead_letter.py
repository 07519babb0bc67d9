"""The embedded broker's dead letters: written, listed and replayed through its ordinary produce and fetch paths.

The record format, the retry-topic rule (a replay reaches only the group that failed) and the replay progress are
`kafkalite.broker.dead_letter_format`'s, shared with the network client; this module applies them to the in-process
broker. Concurrency: creating or growing a topic awaits (the file engine opens logs in a thread), so creation is
serialised by one lock; two replays at once would both republish the same letters, so replays take another.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import time
from collections.abc import Iterator
from itertools import islice
from typing import TYPE_CHECKING

from kafkalite.broker.dead_letter_format import (
    REPLAY_GROUP,
    DeadLetter,
    Replay,
    dead_letter_headers,
    dead_letter_topic,
    decode_dead_letter,
    is_pending,
    progress_after,
    replay_target,
    retry_topic_or_none,
    selected,
)
from kafkalite.broker.log_reader import scan_records
from kafkalite.broker.partition import ProduceResult
from kafkalite.errors import TopicExistsError
from kafkalite.protocol.records import RecordToWrite, build_batch

if TYPE_CHECKING:
    from kafkalite.broker.broker import Broker

logger = logging.getLogger("kafkalite.dlq")


class DeadLetterQueue:
    """Writes, lists and replays dead letters through the broker's ordinary produce and fetch paths."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self._creating = asyncio.Lock()
        self._replaying = asyncio.Lock()

    async def send(
        self,
        topic: str,
        partition: int,
        key: bytes | None,
        value: bytes | None,
        headers: tuple[tuple[str, bytes | None], ...] | list[tuple[str, bytes | None]],
        error: BaseException,
        *,
        offset: int = -1,
        timestamp: int = -1,
        group_id: str | None = None,
    ) -> ProduceResult:
        """Write one dead letter for (topic, partition); create or grow `<topic>.DLQ` as needed, and with a group, the
        group's retry topic (so its consumers subscribe to it before any replay)."""
        dlq = dead_letter_topic(topic)
        count = len(self._broker.topic(topic).partitions)
        async with self._creating:
            await self._ensure_partitions(dlq, count)
            retry = retry_topic_or_none(topic, group_id)
            if retry is not None:
                await self._ensure_partitions(retry, count)
        record = RecordToWrite(
            value, key, [*headers, *dead_letter_headers(topic, partition, offset, timestamp, error, group_id)]
        )
        batch = build_batch([record], now_ms=int(time.time() * 1000))
        result = await self._broker.produce(dlq, partition, batch, acks=-1)
        logger.info(
            "Dead-lettered topic=%s partition=%d offset=%d to %s offset=%d: %s",
            topic,
            partition,
            offset,
            dlq,
            result.base_offset,
            type(error).__name__,
        )
        return result

    async def _ensure_partitions(self, name: str, count: int) -> None:
        topic = self._broker.topics.get(name)
        if topic is None:
            try:
                await self._broker.create_topic(name, count)
            except TopicExistsError:
                pass
        elif len(topic.partitions) < count:
            await self._broker.create_partitions(name, count)

    async def list(self, topic: str) -> list[DeadLetter]:
        """Every dead letter of `topic`, partition by partition, in offset order."""
        dlq = self._broker.topics.get(dead_letter_topic(topic))
        if dlq is None:
            return []
        return [
            letter
            for partition in dlq.partitions
            for letter in self._read(dlq.name, partition.index, partition.log_start_offset)
        ]

    def read(self, topic: str, partition: int, start: int, limit: int) -> tuple[DeadLetter, ...]:
        """One page: up to `limit` dead letters of `topic` in DLQ partition `partition` from offset `start` on."""
        return tuple(islice(self._read(dead_letter_topic(topic), partition, start), max(0, limit)))

    def replay_position(self, topic: str, partition: int) -> int:
        """The first offset of DLQ partition `partition` that a full `replay` (every group's letters) has not
        reached."""
        dlq = self._broker.partition(dead_letter_topic(topic), partition)
        return max(dlq.log_start_offset, self._progress(dlq.topic, partition).get(REPLAY_GROUP, 0))

    async def replay(self, topic: str, *, group: str | None = None, dry_run: bool = False) -> builtins.list[Replay]:
        """Deliver the dead letters of `topic` not replayed yet again, each to the group that failed it (see
        `dead_letter_format`); only `group`'s letters when given. Return what was (with `dry_run`: would be)
        replayed, and where to."""
        dlq = self._broker.topics.get(dead_letter_topic(topic))
        if dlq is None:
            return []
        count = len(self._broker.topic(topic).partitions)
        done: builtins.list[Replay] = []
        async with self._replaying:
            for partition in dlq.partitions:
                progress = self._progress(dlq.name, partition.index)
                start = max(partition.log_start_offset, progress.get(REPLAY_GROUP, 0))
                for letter in self._read(dlq.name, partition.index, start):
                    if not (selected(letter, group) and is_pending(letter, progress)):
                        continue
                    replay = replay_target(topic, letter, count)
                    if not dry_run:
                        await self._republish(dlq.name, replay, group, count)
                    done.append(replay)
        if done and not dry_run:
            logger.info("Replayed %d dead letters of topic=%s", len(done), topic)
        return done

    def _progress(self, dlq: str, partition: int) -> dict[str, int]:
        groups = [g for g in self._broker.offsets.groups() if g == REPLAY_GROUP or g.startswith(REPLAY_GROUP + ".")]
        found = {g: self._broker.offsets.fetch(g, dlq, partition) for g in groups}
        return {g: committed.offset for g, committed in found.items() if committed is not None}

    async def _republish(self, dlq: str, replay: Replay, group: str | None, count: int) -> None:
        if replay.topic != replay.letter.original_topic:
            async with self._creating:
                await self._ensure_partitions(replay.topic, count)
        letter = replay.letter
        batch = build_batch([RecordToWrite(letter.value, letter.key, letter.headers)], now_ms=int(time.time() * 1000))
        await self._broker.produce(replay.topic, replay.partition, batch, acks=-1)
        progress_group, offset = progress_after(letter, group)
        await self._broker.offsets.commit(progress_group, dlq, letter.dlq_partition, offset)

    def _read(self, dlq: str, partition: int, start: int) -> Iterator[DeadLetter]:
        for record in scan_records(self._broker.partition(dlq, partition).log, start):
            yield decode_dead_letter(
                partition, record.offset, record.key, record.value, record.headers, record.timestamp
            )
