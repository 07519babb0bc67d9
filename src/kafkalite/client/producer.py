"""The async producer: partitioning, batching, retries with backoff, and the dead-letter fallback.

`await producer.send(...)` returns once the record is written (and, with `acks="all"`, durable). Sends that are in
flight together are batched: each partition's pending records become one RecordBatch when the event loop next
runs the producer's flush, so 1,000 concurrent `send` coroutines cost a handful of appends, not 1,000.

Retries: a retriable refusal (`RetriableError`, e.g. `PartitionFullError`) is retried `retries` times with
exponential backoff from `retry_backoff`; if the partition is still full, each record goes to `<topic>.DLQ` (same
partition number, Spring-Kafka headers) and its `RecordMetadata.dead_lettered` is True; of a batch too big for the
room left, the records that still fit are appended first, one by one. Other errors reach the caller of `send`
unchanged.

`send_batch` is the bulk path: values are checked and routed in one pass, each partition's share becomes one
RecordBatch written by one task, and the metadata is computed from that batch's base offset, so there is no future,
callback or routing call per record. Retries and the dead-letter fallback are the same code as `send`'s.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Sequence
from itertools import repeat
from types import TracebackType
from typing import Any, Literal, Self, cast

from kafkalite.client.partitioners import Partitioner, PartitionerName
from kafkalite.client.records import RecordMetadata
from kafkalite.client.transport import Transport
from kafkalite.errors import ClosedError, InvalidRecordError, PartitionFullError, RetriableError
from kafkalite.protocol.records import RecordToWrite, build_batch

logger = logging.getLogger("kafkalite.producer")

Acks = Literal[0, 1, -1, "all"]
Header = tuple[str, bytes | None]
_Pending = tuple[RecordToWrite, "asyncio.Future[RecordMetadata]"]
_Outcome = RecordMetadata | BaseException  # per record: where it landed, or why it did not


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
        self._in_flight: set[asyncio.Task[Any]] = set()
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
        """Send many records at once (each routed on its own); return their metadata in order.

        Places records exactly as that many `send` calls would, and ends the same way: if any record failed, the
        first failure is raised (the other records were still written or dead-lettered). Nothing is sent when a
        value is not bytes.
        """
        if self._closed:
            raise ClosedError(f"{self.name} is closed")
        key = _as_bytes(key, "key")
        checked = [value if value.__class__ is bytes else _as_bytes(value, "value") for value in values]
        count = self._transport.partition_count(topic)
        if not checked:
            return []
        # tuple.__new__ is what RecordToWrite's own __new__ calls, minus a Python frame per record.
        records = cast(
            list[RecordToWrite],
            list(map(tuple.__new__, repeat(RecordToWrite), zip(checked, repeat(key), repeat(()), repeat(None)))),
        )
        if self._partitioner.hashes_key(key):
            shares = {self._partitioner.partition(topic, key, count): slice(None)}
        else:  # record i goes to (first + i) % count: partition p's share is every count-th record from its first
            first = self._partitioner.round_robin_run(topic, len(records))
            shares = {(first + i) % count: slice(i, None, count) for i in range(min(count, len(records)))}
        if self._pending:  # records queued by earlier sends go first, as they would have shared a batch with these
            self._start_flush()
        tasks = []
        for partition, share in shares.items():
            logger.debug("Routing %s to topic=%s partition=%d (batch)", self.name, topic, partition)
            task = asyncio.create_task(self._write(topic, partition, records[share]))
            self._in_flight.add(task)
            task.add_done_callback(self._in_flight.discard)
            tasks.append(task)
        # Shielded: a caller that gives up does not stop records already handed over, as with `send_soon`.
        results = await asyncio.shield(asyncio.gather(*tasks))
        metadata: list[Any] = [None] * len(records)
        for share, (outcomes, failed) in zip(shares.values(), results, strict=True):
            if failed:
                raise next(outcome for outcome in outcomes if isinstance(outcome, BaseException))
            metadata[share] = outcomes
        return cast(list[RecordMetadata], metadata)

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
        outcomes, _ = await self._write(topic, partition, [record for record, _ in entries])
        for (_, future), outcome in zip(entries, outcomes, strict=True):
            if future.done():  # cancelled by its caller: the record was written all the same
                continue
            if isinstance(outcome, BaseException):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)

    async def _write(self, topic: str, partition: int, records: list[RecordToWrite]) -> tuple[list[_Outcome], bool]:
        """Write `records` to one partition as one batch, with retries and the dead-letter fallback; return each
        record's outcome, in order, and whether any of them is an exception."""
        now = int(time.time() * 1000)
        try:
            batch = build_batch(records, now_ms=now)
            base_offset = await self._produce_with_retries(topic, partition, batch, len(records))
        except PartitionFullError as full:
            outcomes: list[_Outcome] = [full] * len(records)
            refused = await self._keep_what_fits(topic, partition, records, now, outcomes) if len(records) > 1 else 0
            if self._dead_letter:
                await self._dead_letter_all(topic, partition, records, refused, full, now, outcomes)
            return outcomes, any(isinstance(outcome, BaseException) for outcome in outcomes)
        except Exception as exc:
            return [exc] * len(records), True
        stamps = [record.timestamp for record in records]
        if stamps.count(None) == len(stamps):
            timestamps: Iterable[int] = repeat(now)
        else:
            timestamps = [now if stamp is None else stamp for stamp in stamps]
        offsets = range(base_offset, base_offset + len(records))
        fields = zip(repeat(topic), repeat(partition), offsets, timestamps, repeat(False))
        # tuple.__new__ is what RecordMetadata's own __new__ calls, minus a Python frame per record.
        return cast(list[_Outcome], list(map(tuple.__new__, repeat(RecordMetadata), fields))), False

    async def _keep_what_fits(
        self, topic: str, partition: int, records: list[RecordToWrite], now: int, outcomes: list[_Outcome]
    ) -> int:
        """The batch stayed too big for the room left: append its records one by one, in order, so those that fit
        are kept (their outcomes set); return the index of the first refused record (those from there on were
        already retried with the batch)."""
        for index, record in enumerate(records):
            try:
                single = build_batch([record], now_ms=now)
                offset = await self._transport.produce(topic, partition, single, acks=self._acks)
            except PartitionFullError:
                return index
            except Exception as exc:
                outcomes[index] = exc
                continue
            outcomes[index] = RecordMetadata(topic, partition, offset, _stamp(record, now))
        return len(records)

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
        self,
        topic: str,
        partition: int,
        records: list[RecordToWrite],
        first: int,
        error: PartitionFullError,
        now: int,
        outcomes: list[_Outcome],
    ) -> None:
        """Send `records[first:]` to the dead-letter topic, setting their outcomes."""
        for index in range(first, len(records)):
            record = records[index]
            stamp = _stamp(record, now)
            try:
                where = await self._transport.dead_letter(
                    topic, partition, record.key, record.value, tuple(record.headers), error, timestamp=stamp
                )
            except Exception as exc:
                outcomes[index] = exc
                continue
            outcomes[index] = RecordMetadata(where[0], where[1], where[2], stamp, dead_lettered=True)


def _stamp(record: RecordToWrite, now: int) -> int:
    return now if record.timestamp is None else record.timestamp
