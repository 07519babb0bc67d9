"""The async producer: partitioning, batching, retries with backoff, and the dead-letter fallback.

`await producer.send(...)` returns once the record is written (and, with `acks="all"`, durable). Sends that are in
flight together are batched: each partition's pending records become one RecordBatch when the event loop next
runs the producer's flush, so 1,000 concurrent `send` coroutines cost a handful of appends, not 1,000.

Retries: a retriable refusal (`RetriableError`, e.g. `PartitionFullError`) is retried `retries` times with
exponential backoff from `retry_backoff`; if the partition is still full, each record goes to `<topic>.DLQ` (same
partition number, Spring-Kafka headers) and its `RecordMetadata.dead_lettered` is True; of a batch too big for the
room left, the records that still fit are appended first, one by one. Other errors reach the caller of `send`
unchanged.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Literal, Self

from kafkalite.client.partitioners import Partitioner, PartitionerName
from kafkalite.client.records import RecordMetadata
from kafkalite.client.transport import Transport
from kafkalite.errors import ClosedError, InvalidRecordError, PartitionFullError, RetriableError
from kafkalite.protocol.records import RecordToWrite, build_batch

logger = logging.getLogger("kafkalite.producer")

Acks = Literal[0, 1, -1, "all"]
Header = tuple[str, bytes | None]
_Pending = tuple[RecordToWrite, "asyncio.Future[RecordMetadata]"]


def _as_bytes(value: object, what: str) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    raise InvalidRecordError(f"{what} must be bytes or None, not {type(value).__name__} (encode it first)")


def _check_headers(headers: Iterable[Header]) -> list[Header]:
    checked = []
    for header in headers:
        if not (isinstance(header, tuple) and len(header) == 2 and isinstance(header[0], str)):
            raise InvalidRecordError(f"a header must be a (str, bytes | None) pair, not {header!r}")
        checked.append((header[0], _as_bytes(header[1], f"header {header[0]!r}")))
    return checked


class Producer:
    """Sends records to topics through a `Transport` (the embedded broker, or later a Kafka cluster)."""

    _next_id = 1

    def __init__(
        self,
        transport: Transport,
        *,
        partitioner: PartitionerName = "md5",
        acks: Acks = "all",
        retries: int = 3,
        retry_backoff: float = 0.05,
        dead_letter: bool = True,
        name: str | None = None,
    ) -> None:
        if acks not in (0, 1, -1, "all"):
            raise ValueError(f"acks must be 0, 1, -1 or 'all', not {acks!r}")
        self._transport = transport
        self._partitioner = Partitioner(partitioner)
        self._acks = -1 if acks == "all" else int(acks)
        self._retries = retries
        self._retry_backoff = retry_backoff
        self._dead_letter = dead_letter
        self.name = name or f"producer-{Producer._next_id}"
        Producer._next_id += 1
        self._pending: dict[tuple[str, int], list[_Pending]] = {}
        self._flush_scheduled = False
        self._in_flight: set[asyncio.Task[None]] = set()
        self._closed = False

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

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
        """Send one record; return where it landed once it is written (durable with acks='all')."""
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
        record = RecordToWrite(_as_bytes(value, "value"), _as_bytes(key, "key"), _check_headers(headers), timestamp)
        count = self._transport.partition_count(topic)
        if partition is None:
            partition = self._partitioner.partition(topic, record.key, count)
            logger.debug("Routing %s to topic=%s partition=%d", self.name, topic, partition)
        else:
            self._transport.check_partition(topic, partition)
        future: asyncio.Future[RecordMetadata] = asyncio.get_running_loop().create_future()
        self._pending.setdefault((topic, partition), []).append((record, future))
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._start_flush)
        return future

    async def send_batch(
        self, topic: str, values: Iterable[bytes | None], *, key: bytes | None = None
    ) -> list[RecordMetadata]:
        """Send many records at once (each routed on its own); return their metadata in order."""
        futures = [self.send_soon(topic, value, key) for value in values]
        return list(await asyncio.gather(*futures))

    async def flush(self) -> None:
        """Wait until every queued record has been written or failed."""
        while self._pending or self._in_flight or self._flush_scheduled:
            if self._flush_scheduled or self._pending:
                await asyncio.sleep(0)
            if self._in_flight:
                await asyncio.gather(*self._in_flight, return_exceptions=True)

    async def close(self) -> None:
        if self._closed:
            return
        await self.flush()
        self._closed = True

    def _start_flush(self) -> None:
        self._flush_scheduled = False
        pending, self._pending = self._pending, {}
        for (topic, partition), entries in pending.items():
            task = asyncio.create_task(self._send_partition(topic, partition, entries))
            self._in_flight.add(task)
            task.add_done_callback(self._in_flight.discard)

    async def _send_partition(self, topic: str, partition: int, entries: list[_Pending]) -> None:
        now = int(time.time() * 1000)
        records = [record for record, _ in entries]
        try:
            batch = build_batch(records, now_ms=now)
            base_offset = await self._produce_with_retries(topic, partition, batch, len(records))
        except PartitionFullError as full:
            refused = await self._keep_what_fits(topic, partition, entries, now) if len(entries) > 1 else entries
            if not self._dead_letter:
                _fail(refused, full)
                return
            await self._dead_letter_all(topic, partition, refused, full, now)
            return
        except Exception as exc:
            _fail(entries, exc)
            return
        for index, (record, future) in enumerate(entries):
            if not future.done():
                stamp = now if record.timestamp is None else record.timestamp
                future.set_result(RecordMetadata(topic, partition, base_offset + index, stamp))

    async def _keep_what_fits(self, topic: str, partition: int, entries: list[_Pending], now: int) -> list[_Pending]:
        """The batch stayed too big for the room left: append its records one by one, in order, so those that fit
        are kept; return the first refused record and those after it (already retried with the batch)."""
        for index, (record, future) in enumerate(entries):
            try:
                single = build_batch([record], now_ms=now)
                offset = await self._transport.produce(topic, partition, single, acks=self._acks)
            except PartitionFullError:
                return entries[index:]
            except Exception as exc:
                _fail([(record, future)], exc)
                continue
            if not future.done():
                stamp = now if record.timestamp is None else record.timestamp
                future.set_result(RecordMetadata(topic, partition, offset, stamp))
        return []

    async def _produce_with_retries(self, topic: str, partition: int, batch: bytes, count: int) -> int:
        delay = self._retry_backoff
        for attempt in range(self._retries + 1):
            try:
                return await self._transport.produce(topic, partition, batch, acks=self._acks)
            except RetriableError as exc:
                if attempt == self._retries:
                    raise
                logger.info(
                    "%s retrying %d records to topic=%s partition=%d in %.2fs (%d/%d): %s",
                    self.name,
                    count,
                    topic,
                    partition,
                    delay,
                    attempt + 1,
                    self._retries,
                    exc,
                )
                await asyncio.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")

    async def _dead_letter_all(
        self, topic: str, partition: int, entries: list[_Pending], error: PartitionFullError, now: int
    ) -> None:
        for record, future in entries:
            stamp = now if record.timestamp is None else record.timestamp
            try:
                where = await self._transport.dead_letter(
                    topic, partition, record.key, record.value, tuple(record.headers), error, timestamp=stamp
                )
            except Exception as exc:
                if not future.done():
                    future.set_exception(exc)
                continue
            if not future.done():
                future.set_result(RecordMetadata(where[0], where[1], where[2], stamp, dead_lettered=True))


def _fail(entries: list[_Pending], error: BaseException) -> None:
    for _, future in entries:
        if not future.done():
            future.set_exception(error)
