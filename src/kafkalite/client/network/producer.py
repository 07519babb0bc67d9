"""The network producer: `kafkalite.Producer`'s interface and routing, sending through aiokafka's producer.

Routing is KafkaLite's (`Partitioner`: MD5 of the key by default, "murmur2" for Java-client placement, round robin
without a key), computed here from the topic's partition count in aiokafka's metadata, so a key lands on the same
partition number embedded, served or on any Kafka cluster. aiokafka batches, compresses and retries what Kafka calls
retriable; a refusal it cannot retry is retried here `retries` times with exponential backoff, and a refusal that is
KafkaLite's "partition full" (code 89, which aiokafka does not name and reports as `UnknownError`) then goes to
`<topic>.DLQ` like the embedded producer's, with `RecordMetadata.dead_lettered` set.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from aiokafka import AIOKafkaProducer
from aiokafka.errors import UnknownError

from kafkalite.client.network.kafka_errors import translate
from kafkalite.client.partitioners import Partitioner, PartitionerName
from kafkalite.client.producer import Acks, Header, _as_bytes, _check_headers
from kafkalite.client.records import RecordMetadata
from kafkalite.errors import ClosedError, PartitionFullError, UnknownPartitionError, UnknownTopicError

if TYPE_CHECKING:
    from kafkalite.client.network.cluster import Cluster

logger = logging.getLogger("kafkalite.producer")


class NetworkProducer:
    """Sends records to a Kafka cluster; the same methods and results as `kafkalite.Producer`."""

    _next_id = 1

    def __init__(
        self,
        cluster: Cluster,
        *,
        partitioner: PartitionerName = "md5",
        acks: Acks = "all",
        retries: int = 3,
        retry_backoff: float = 0.05,
        dead_letter: bool = True,
        name: str | None = None,
        **aiokafka_options: Any,
    ) -> None:
        if acks not in (0, 1, -1, "all"):
            raise ValueError(f"acks must be 0, 1, -1 or 'all', not {acks!r}")
        self._cluster = cluster
        self._partitioner = Partitioner(partitioner)
        self._acks: int | str = "all" if acks in ("all", -1) else int(acks)
        self._retries = retries
        self._retry_backoff = retry_backoff
        self._dead_letter = dead_letter
        self.name = name or f"producer-{NetworkProducer._next_id}"
        NetworkProducer._next_id += 1
        self._options = aiokafka_options
        self._producer: AIOKafkaProducer | None = None
        self._starting = asyncio.Lock()
        self._ordering = asyncio.Lock()
        self._in_flight: set[asyncio.Future[RecordMetadata]] = set()
        self._known_topics: set[str] = set()
        self._closed = False

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def start(self) -> None:
        """Connect (done by the first send otherwise)."""
        await self._client()

    async def _client(self) -> AIOKafkaProducer:
        if self._closed:
            raise ClosedError(f"{self.name} is closed")
        async with self._starting:
            if self._producer is None:
                settings = self._cluster.settings_for(
                    AIOKafkaProducer, client_id=self.name, acks=self._acks, **self._options
                )
                producer = AIOKafkaProducer(**settings)
                try:
                    await producer.start()
                except Exception as exc:
                    await producer.stop()
                    raise translate(exc, f"{self.name} cannot connect to {self._cluster.bootstrap}") from exc
                self._producer = producer
            return self._producer

    async def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        *,
        headers: Sequence[Header] = (),
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> RecordMetadata:
        """Send one record; return where it landed once the cluster acknowledged it (per `acks`)."""
        return await self.send_soon(topic, value, key, headers=headers, partition=partition, timestamp=timestamp)

    def send_soon(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        *,
        headers: Sequence[Header] = (),
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> asyncio.Future[RecordMetadata]:
        """Queue one record and return a future of its metadata: for pipelining many sends without awaiting each."""
        if self._closed:
            raise ClosedError(f"{self.name} is closed")
        checked_value, checked_key = _as_bytes(value, "value"), _as_bytes(key, "key")
        checked_headers = _check_headers(headers)
        task = asyncio.ensure_future(
            self._send(topic, checked_value, checked_key, checked_headers, partition, timestamp)
        )
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)
        return task

    async def send_batch(
        self, topic: str, values: Iterable[bytes | None], *, key: bytes | None = None
    ) -> list[RecordMetadata]:
        """Send many values (one key for all, or none); return their metadata in order."""
        futures = [self.send_soon(topic, value, key) for value in values]
        return list(await asyncio.gather(*futures))

    async def flush(self) -> None:
        """Wait until every record sent so far is acknowledged (or has failed: its own future says how)."""
        while self._in_flight:
            await asyncio.gather(*self._in_flight, return_exceptions=True)

    async def close(self) -> None:
        """Flush, then disconnect."""
        if self._closed:
            return
        await self.flush()
        self._closed = True
        if self._producer is not None:
            producer, self._producer = self._producer, None
            await producer.stop()

    async def _send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None,
        headers: list[Header],
        partition: int | None,
        timestamp: int | None,
    ) -> RecordMetadata:
        producer = await self._client()
        wire_headers = [(name, data or b"") for name, data in headers]  # aiokafka writes no null header values
        stamp = int(time.time() * 1000) if timestamp is None else timestamp
        # Routing awaits metadata: one send at a time through it, so records reach aiokafka's batches (and so the
        # partition) in the order `send`/`send_soon` was called, as with the embedded producer.
        async with self._ordering:
            count = await self._partition_count(producer, topic)
            if partition is None:
                partition = self._partitioner.partition(topic, key, count)
                logger.debug("Routing %s to topic=%s partition=%d", self.name, topic, partition)
            elif not isinstance(partition, int) or not 0 <= partition < count:
                raise UnknownPartitionError(f"topic {topic!r} has no partition {partition!r} (it has {count})")
            pending = await self._enqueue(producer, topic, value, key, partition, stamp, wire_headers)
        delay = self._retry_backoff
        for attempt in range(self._retries + 1):
            try:
                sent = await pending
                return RecordMetadata(topic, partition, sent.offset, stamp)
            except UnknownError as exc:  # KafkaLite's partition full (code 89) among others aiokafka cannot name
                if attempt < self._retries:
                    logger.info(
                        "%s retrying topic=%s partition=%d in %.2fs: %r", self.name, topic, partition, delay, exc
                    )
                    await asyncio.sleep(delay)
                    delay *= 2
                    pending = await self._enqueue(producer, topic, value, key, partition, stamp, wire_headers)
                    continue
                if not self._dead_letter:
                    raise PartitionFullError(
                        f"topic {topic!r} partition {partition} refused the record: {exc}"
                    ) from exc
                full = PartitionFullError(
                    f"partition {partition} of {topic!r} stayed full through {self._retries} retries"
                )
                where = await self._cluster.dead_letters.send(
                    topic, partition, key, value, tuple(headers), full, timestamp=stamp
                )
                return RecordMetadata(where[0], where[1], where[2], stamp, dead_lettered=True)
            except Exception as exc:
                raise translate(exc, f"{self.name} cannot send to {topic!r}") from exc
        raise AssertionError("unreachable")

    async def _enqueue(
        self,
        producer: AIOKafkaProducer,
        topic: str,
        value: bytes | None,
        key: bytes | None,
        partition: int,
        stamp: int,
        headers: list[tuple[str, bytes]],
    ) -> asyncio.Future[Any]:
        """Hand the record to aiokafka's batches; the future resolves when the cluster acknowledges it."""
        try:
            future: asyncio.Future[Any] = await producer.send(
                topic, value, key, partition=partition, timestamp_ms=stamp, headers=headers
            )
        except Exception as exc:
            raise translate(exc, f"{self.name} cannot send to {topic!r}") from exc
        return future

    async def _partition_count(self, producer: AIOKafkaProducer, topic: str) -> int:
        """The topic's partition count; `UnknownTopicError` for a topic that does not exist, as embedded (asking
        aiokafka first would auto-create it on clusters that allow that)."""
        if topic not in self._known_topics:
            if topic not in await self._cluster.partition_counts([topic]):
                raise UnknownTopicError(f"unknown topic {topic!r} on {self._cluster.bootstrap}")
            self._known_topics.add(topic)
        try:
            partitions: set[int] = await producer.partitions_for(topic)
        except Exception as exc:
            raise translate(exc, f"{self.name} cannot send to {topic!r}") from exc
        return len(partitions)
