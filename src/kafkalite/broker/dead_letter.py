"""Dead-letter topics: `<topic>.DLQ`, same partition number as the original, Spring Kafka's header names.

A record lands here when a consumer's handler keeps failing, or when a producer gives up on a full partition. The
dead-letter record keeps the original key, value and headers, and adds (binary encodings as Spring Kafka writes
them, so existing tools understand them)::

    kafka_dlt-original-topic           UTF-8
    kafka_dlt-original-partition       int32, big-endian
    kafka_dlt-original-offset          int64, big-endian (-1 when the record never got an offset: producer path)
    kafka_dlt-original-timestamp       int64, big-endian
    kafka_dlt-original-timestamp-type  UTF-8 ("CreateTime" or "LogAppendTime")
    kafka_dlt-original-consumer-group  UTF-8 (consumer path only)
    kafka_dlt-exception-fqcn           UTF-8, module-qualified class name of the exception
    kafka_dlt-exception-message        UTF-8
    kafka_dlt-exception-stacktrace     UTF-8

`replay` republishes every dead letter not replayed before to its original topic and partition (without the
`kafka_dlt-` headers); its progress is a committed offset of the group `__kafkalite-dlq-replay`, so a replay is
never repeated and survives restarts.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING

from kafkalite.broker.log_reader import scan_records
from kafkalite.broker.partition import ProduceResult
from kafkalite.errors import TopicExistsError
from kafkalite.protocol.records import Record, RecordToWrite, build_batch

if TYPE_CHECKING:
    from kafkalite.broker.broker import Broker

logger = logging.getLogger("kafkalite.dlq")

DLQ_SUFFIX = ".DLQ"
REPLAY_GROUP = "__kafkalite-dlq-replay"
HEADER_PREFIX = "kafka_dlt-"


def dead_letter_topic(topic: str) -> str:
    return topic + DLQ_SUFFIX


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """One record of a dead-letter topic, with its Spring-Kafka headers decoded."""

    dlq_partition: int
    dlq_offset: int
    original_topic: str
    original_partition: int
    original_offset: int
    original_timestamp: int
    exception_class: str
    exception_message: str
    consumer_group: str | None
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]  # the original record's own headers


class DeadLetterQueue:
    """Writes, lists and replays dead letters through the broker's ordinary produce and fetch paths."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        # Creating or growing a DLQ awaits (the file engine opens logs in a thread): one at a time, or two first dead
        # letters of a topic would both create its partitions.
        self._creating = asyncio.Lock()
        self._replaying = asyncio.Lock()  # two replays at once would both republish the same letters

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
        """Write one dead letter for (topic, partition); create or grow `<topic>.DLQ` as needed."""
        dlq = dead_letter_topic(topic)
        async with self._creating:
            await self._ensure_partitions(dlq, len(self._broker.topic(topic).partitions))
        error_class = type(error)
        dlt_headers: list[tuple[str, bytes | None]] = [
            (HEADER_PREFIX + "original-topic", topic.encode()),
            (HEADER_PREFIX + "original-partition", struct.pack(">i", partition)),
            (HEADER_PREFIX + "original-offset", struct.pack(">q", offset)),
            (HEADER_PREFIX + "original-timestamp", struct.pack(">q", timestamp)),
            (HEADER_PREFIX + "original-timestamp-type", b"CreateTime"),
            (HEADER_PREFIX + "exception-fqcn", f"{error_class.__module__}.{error_class.__qualname__}".encode()),
            (HEADER_PREFIX + "exception-message", str(error).encode()),
            (HEADER_PREFIX + "exception-stacktrace", "".join(traceback.format_exception(error)).encode()),
        ]
        if group_id is not None:
            dlt_headers.append((HEADER_PREFIX + "original-consumer-group", group_id.encode()))
        record = RecordToWrite(value, key, [*headers, *dlt_headers])
        batch = build_batch([record], now_ms=int(time.time() * 1000))
        result = await self._broker.produce(dlq, partition, batch, acks=-1)
        logger.info(
            "Dead-lettered topic=%s partition=%d offset=%d to %s offset=%d: %s",
            topic,
            partition,
            offset,
            dlq,
            result.base_offset,
            error_class.__name__,
        )
        return result

    async def _ensure_partitions(self, dlq: str, count: int) -> None:
        topic = self._broker.topics.get(dlq)
        if topic is None:
            try:
                await self._broker.create_topic(dlq, count)
            except TopicExistsError:
                pass
        elif len(topic.partitions) < count:
            await self._broker.create_partitions(dlq, count)

    def list(self, topic: str) -> list[DeadLetter]:
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
        """The first offset of DLQ partition `partition` that `replay` has not republished yet."""
        dlq = self._broker.partition(dead_letter_topic(topic), partition)
        committed = self._broker.offsets.fetch(REPLAY_GROUP, dlq.topic, partition)
        return max(dlq.log_start_offset, committed.offset if committed else 0)

    async def replay(self, topic: str) -> int:
        """Republish dead letters of `topic` not replayed yet to their original partition; return how many."""
        dlq = self._broker.topics.get(dead_letter_topic(topic))
        if dlq is None:
            return 0
        replayed = 0
        async with self._replaying:
            for partition in dlq.partitions:
                committed = self._broker.offsets.fetch(REPLAY_GROUP, dlq.name, partition.index)
                start = max(partition.log_start_offset, committed.offset if committed else 0)
                for letter in self._read(dlq.name, partition.index, start):
                    await self._republish(dlq.name, letter)
                    replayed += 1
        if replayed:
            logger.info("Replayed %d dead letters of topic=%s", replayed, topic)
        return replayed

    async def _republish(self, dlq: str, letter: DeadLetter) -> None:
        """Write one dead letter back to its original partition (or the same-numbered one, if that is gone)."""
        target = letter.original_partition
        if not 0 <= target < len(self._broker.topic(letter.original_topic).partitions):
            target = letter.dlq_partition
        batch = build_batch([RecordToWrite(letter.value, letter.key, letter.headers)], now_ms=int(time.time() * 1000))
        await self._broker.produce(letter.original_topic, target, batch, acks=-1)
        await self._broker.offsets.commit(REPLAY_GROUP, dlq, letter.dlq_partition, letter.dlq_offset + 1)

    def _read(self, dlq: str, partition: int, start: int) -> Iterator[DeadLetter]:
        for record in scan_records(self._broker.partition(dlq, partition).log, start):
            yield _decode(partition, record)


def _decode(dlq_partition: int, record: Record) -> DeadLetter:
    dlt = {name[len(HEADER_PREFIX) :]: value or b"" for name, value in record.headers if name.startswith(HEADER_PREFIX)}
    own = tuple((name, value) for name, value in record.headers if not name.startswith(HEADER_PREFIX))

    def integer(name: str, fmt: str) -> int:
        raw = dlt.get(name, b"")
        return int(struct.unpack(fmt, raw)[0]) if len(raw) == struct.calcsize(fmt) else -1

    group = dlt.get("original-consumer-group")
    return DeadLetter(
        dlq_partition=dlq_partition,
        dlq_offset=record.offset,
        original_topic=dlt.get("original-topic", b"").decode(),
        original_partition=integer("original-partition", ">i"),
        original_offset=integer("original-offset", ">q"),
        original_timestamp=integer("original-timestamp", ">q"),
        exception_class=dlt.get("exception-fqcn", b"").decode(),
        exception_message=dlt.get("exception-message", b"").decode(),
        consumer_group=group.decode() if group is not None else None,
        key=record.key,
        value=record.value,
        headers=own,
    )
