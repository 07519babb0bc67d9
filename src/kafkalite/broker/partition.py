"""One partition: the append path's checks, its lock, and the long-poll waiters of its readers.

Append, in order, all before the first byte is written: every batch's header, length and CRC (`read_batches`);
no control batch (only a broker writes those, with `write_marker`: Kafka refuses them from clients too);
max.message.bytes; on a compacted topic, a key on every record (Kafka's LogValidator: INVALID_RECORD, the only
produce that decodes records); a transactional batch only with the coordinator's consent (`txn_check`: the partition
is in the producer's ongoing transaction and its epoch is current); a producer id the broker handed out, and
idempotent-producer sequences; the capacity caps (`max.partition.messages`, `max.partition.bytes`). Then, under the
partition's `asyncio.Lock`, base offsets are assigned and the batches written. Nothing awaits between the checks and
the write, so a refused produce changes nothing.

The lock is per partition, so writers to different partitions never wait for each other; writers to one
partition keep their order. With one broker the high watermark is the log end offset: a record is readable as
soon as it is written (a reader may therefore see data an `acks=all` producer is still waiting to have synced,
as on a single-replica Kafka with acks=1 readers).

Transactions: `transactions` tracks the open transactions (`partition_transactions`), hence the last stable offset;
a read_committed read stops before it and carries the aborted transactions overlapping what it returns (from the
log's `.txnindex`). `write_marker` appends a commit or abort marker and, for an abort, indexes the aborted range.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from kafkalite.broker.fetch_data import FetchData, RecordsT
from kafkalite.broker.log_reader import scan_batches
from kafkalite.broker.partition_transactions import OpenTransactions
from kafkalite.broker.producer_state import ProducerStateTable
from kafkalite.config import TopicConfig
from kafkalite.errors import (
    CorruptRecordError,
    DuplicateSequenceError,
    InvalidProducerEpochError,
    InvalidRecordError,
    PartitionFullError,
    RecordTooLargeError,
    TransactionError,
    UnknownProducerIdError,
)
from kafkalite.protocol.control_records import ControlType, build_marker, control_type, marker_coordinator_epoch
from kafkalite.protocol.records import (
    NO_PRODUCER_ID,
    BatchHeader,
    decode_columns,
    patch_log_append_time,
    read_batches,
    read_header,
)
from kafkalite.storage import AbortedTxn, FileRecords, Log

if TYPE_CHECKING:
    from kafkalite.broker.topic import Topic

logger = logging.getLogger("kafkalite.partition")

PRODUCER_STATE_WINDOW = 100_000  # records scanned back from the log end to rebuild idempotence state on start


class ProduceResult(NamedTuple):
    """Where a produce landed: the first and last offsets assigned, and the stamp for LogAppendTime topics.

    A named tuple: one is built per append, and the `__init__` of a frozen dataclass stays interpreted in the compiled
    form of this module (about 6,000 instructions a request; see "The request path compiled" in docs/benchmarks.md)."""

    base_offset: int
    last_offset: int
    log_append_time_ms: int  # -1 for CreateTime topics
    log_start_offset: int


def _produce_result(
    base_offset: int, last_offset: int, log_append_time_ms: int, log_start_offset: int
) -> ProduceResult:
    """`ProduceResult(...)` without a call to the named tuple's `__new__`, which is Python code even in the compiled
    form of this module (about a thousand instructions an append)."""
    return tuple.__new__(ProduceResult, (base_offset, last_offset, log_append_time_ms, log_start_offset))


def _fetch_data(
    records: RecordsT, high_watermark: int, log_start_offset: int, stable: int, aborted: list[AbortedTxn] | None
) -> FetchData[RecordsT]:
    """`FetchData(...)` made as `_produce_result` makes its tuple, without the named tuple's Python `__new__`."""
    return tuple.__new__(FetchData, (records, high_watermark, log_start_offset, stable, aborted))


class _AppendLimits(NamedTuple):
    """The topic configs every append checks, read from `TopicConfig` once per change of it (`generation`)."""

    generation: int
    max_message_bytes: int
    max_messages: int  # 0: no cap
    max_bytes: int  # 0: no cap
    compacted: bool
    log_append_time: bool


_NOT_READ = _AppendLimits(-1, 0, 0, 0, False, False)  # no TopicConfig has this generation


@dataclass(frozen=True, slots=True)
class ProducerDescription:
    """One producer as DescribeProducers reports it."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    current_txn_start_offset: int
    coordinator_epoch: int = -1  # of the last marker written for it; -1 before any


TxnCheck = Callable[[BatchHeader], None]
"""Raises unless the transactional batch may be appended (the coordinator's verdict on its producer and partition)."""


class Partition:
    """Partition `index` of topic `topic`, over a `Log` engine."""

    def __init__(
        self, topic: str, index: int, log: Log, config: TopicConfig, producer_id_limit: Callable[[], int]
    ) -> None:
        """`producer_id_limit()` is the broker's bound on the producer ids it handed out (`ProducerIds.limit`)."""
        self.topic = topic
        self.index = index
        self.log = log
        self.config = config
        self._limits = _NOT_READ
        self.lock = asyncio.Lock()
        self.producers = ProducerStateTable()
        self.transactions = OpenTransactions()
        self._producer_id_limit = producer_id_limit
        self._waiters: set[asyncio.Future[bool]] = set()  # Fetch long polls: set to True by the next append
        self._max_timestamp = -1
        # `/metrics` counters (kafka.server:type=BrokerTopicMetrics), bumped once per produce and per fetch read
        self.bytes_in = 0
        self.messages_in = 0
        self.bytes_out = 0
        self._rebuild_producer_state()

    def __repr__(self) -> str:
        return f"Partition({self.topic}-{self.index}, end={self.log.log_end_offset})"

    @property
    def high_watermark(self) -> int:
        return self.log.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def last_stable_offset(self) -> int:
        return self.transactions.last_stable_offset(self.log.log_end_offset)

    @property
    def message_count(self) -> int:
        return self.log.log_end_offset - self.log.log_start_offset

    async def append(self, records: bytes | bytearray | memoryview, txn_check: TxnCheck | None = None) -> ProduceResult:
        """Validate and append the batches in `records`; raise a `KafkaLiteError` and change nothing on refusal."""
        # Checking and writing never await, so no other task runs between them. The partition's lock is waited for
        # first only while another holder has it; every holder's section is as synchronous as this one, so an append
        # never finds it taken, and skips the four interpreted calls an uncontended `async with` costs.
        if self.lock.locked():
            async with self.lock:
                return self._append(records, txn_check)
        return self._append(records, txn_check)

    def _append(self, records: bytes | bytearray | memoryview, txn_check: TxnCheck | None) -> ProduceResult:
        """`append`'s checks and writes, in one synchronous step."""
        batches = read_batches(records)
        if not batches:
            raise CorruptRecordError("produce carried no record batch")
        limits = self._append_limits()
        self._check_limits(batches, records, limits)
        to_append: list[tuple[int, BatchHeader]] = []
        duplicate_of: int | None = None
        for _, header in batches:
            if header.is_transactional:
                if txn_check is None:
                    raise TransactionError(
                        f"transactional batch of producer {header.producer_id} to {self.topic}-{self.index} "
                        "without a transactional id",
                        48,  # INVALID_TXN_STATE
                    )
                txn_check(header)
        for pos, header in batches:
            if header.producer_id != NO_PRODUCER_ID and not 0 <= header.producer_id < self._producer_id_limit():
                raise UnknownProducerIdError(
                    f"producer id {header.producer_id} was never handed out by this broker (InitProducerId)"
                )
            if header.producer_id >= 0 and header.base_sequence >= 0:
                try:
                    self.producers.check(header)
                except DuplicateSequenceError as dup:
                    duplicate_of = dup.base_offset if duplicate_of is None else duplicate_of
                    continue
            to_append.append((pos, header))
        append_time = int(time.time() * 1000) if limits.log_append_time else -1
        if not to_append:
            assert duplicate_of is not None
            logger.debug("duplicate batch for %s-%d acknowledged at offset %d", self.topic, self.index, duplicate_of)
            return ProduceResult(duplicate_of, duplicate_of, append_time, self.log.log_start_offset)
        first_offset, last_offset = self._write(records, to_append, append_time)
        self.bytes_in += len(records)
        self._wake_readers()
        if logger.isEnabledFor(logging.DEBUG):  # one Python call where `logger.debug` makes two, on every append
            logger.debug("appended offsets %d..%d to %s-%d", first_offset, last_offset, self.topic, self.index)
        return _produce_result(first_offset, last_offset, append_time, self.log.log_start_offset)

    def _write(
        self, records: bytes | bytearray | memoryview, to_append: list[tuple[int, BatchHeader]], append_time: int
    ) -> tuple[int, int]:
        """Write the checked batches of `records` to the log; (first offset, last offset) they were given."""
        first_offset = -1
        last_offset = -1
        for pos, header in to_append:
            # The log writes the batch with its new base offset and leaves `records` as it is, so the request's
            # bytes go to the log without a copy; only a LogAppendTime stamp, which changes the CRC, needs one.
            batch: bytes | bytearray | memoryview = records
            if pos != 0 or header.size != len(records):
                batch = memoryview(records)[pos : pos + header.size]
            if append_time >= 0:
                stamped = bytearray(batch)
                header = patch_log_append_time(stamped, 0, header, append_time)
                batch = stamped
            base, last = self.log.append(batch, header)
            self._max_timestamp = max(self._max_timestamp, header.max_timestamp)
            if header.producer_id >= 0:
                if header.base_sequence >= 0:  # broker-written batches (transactional offsets) carry none
                    self.producers.observe(header._replace(base_offset=base))
                if header.is_transactional:
                    self.transactions.observe(header._replace(base_offset=base))
            first_offset = base if first_offset < 0 else first_offset
            last_offset = last
            self.messages_in += header.last_offset_delta + 1
        return first_offset, last_offset

    def _append_limits(self) -> _AppendLimits:
        config = self.config
        limits = self._limits
        if limits.generation != config.generation:
            limits = self._limits = _AppendLimits(
                config.generation,
                config.get_int("max.message.bytes"),
                config.get_int("max.partition.messages"),
                config.get_int("max.partition.bytes"),
                config.compacted,
                config.log_append_time,
            )
        return limits

    def _check_keys(self, batches: list[tuple[int, BatchHeader]], records: bytes | bytearray | memoryview) -> None:
        for pos, _ in batches:
            keyless = [index for index, key in enumerate(decode_columns(records, pos).keys) if key is None]
            if keyless:
                reason = (
                    f"Compacted topic cannot accept message without key in topic partition {self.topic}-{self.index}."
                )
                shown = ", ".join(f"RecordError(batchIndex={index}, message='{reason}')" for index in keyless[:3])
                logger.info("refused %d keyless records for %s-%d", len(keyless), self.topic, self.index)
                raise InvalidRecordError(
                    f"One or more records have been rejected due to {len(keyless)} record errors in total, and only "
                    f"showing the first three errors at most: [{shown}]",
                    record_errors=tuple((index, reason) for index in keyless),
                )

    def _check_limits(
        self, batches: list[tuple[int, BatchHeader]], records: bytes | bytearray | memoryview, limits: _AppendLimits
    ) -> None:
        size = len(records)
        max_batch = limits.max_message_bytes
        for _, header in batches:
            if header.is_control:
                raise InvalidRecordError(f"clients may not write control batches (to {self.topic}-{self.index})")
            if header.size > max_batch:
                raise RecordTooLargeError(
                    f"batch of {header.size} bytes exceeds max.message.bytes={max_batch} on {self.topic}"
                )
        if limits.compacted:
            self._check_keys(batches, records)
        max_messages = limits.max_messages
        incoming = sum(header.last_offset_delta + 1 for _, header in batches)
        if max_messages > 0 and self.message_count + incoming > max_messages:
            raise PartitionFullError(f"partition {self.topic}-{self.index} is full ({max_messages} messages)")
        max_bytes = limits.max_bytes
        if max_bytes > 0 and self.log.size_bytes + size > max_bytes:
            raise PartitionFullError(f"partition {self.topic}-{self.index} is full ({max_bytes} bytes)")

    async def write_marker(
        self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int, *, strict_epoch: bool = False
    ) -> int:
        """Append the commit or abort marker of `producer_id`'s transaction; return its offset. A marker older than
        the producer's epoch here, or than its last marker's coordinator epoch, is refused (`ProducerStateTable.
        check_marker`; `strict_epoch` for transaction version 2 markers, which must be above the producer's epoch)."""
        if not 0 <= producer_id < self._producer_id_limit():
            raise UnknownProducerIdError(f"producer id {producer_id} was never handed out by this broker")
        if producer_epoch < 0:
            raise InvalidProducerEpochError(f"marker of producer {producer_id} carries epoch {producer_epoch}")
        kind = ControlType.COMMIT if commit else ControlType.ABORT
        now = _now_ms()
        batch = build_marker(producer_id, producer_epoch, kind, coordinator_epoch, now_ms=now)
        async with self.lock:
            self.producers.check_marker(producer_id, producer_epoch, coordinator_epoch, strict=strict_epoch)
            offset, _ = self.log.append(batch, read_header(batch))
            self.producers.observe_marker(producer_id, producer_epoch, coordinator_epoch, now, offset)
            self._close_transaction(producer_id, offset, commit)
        self._wake_readers()
        logger.debug(
            "wrote %s marker of producer %d at %s-%d offset %d", kind.name, producer_id, self.topic, self.index, offset
        )
        return offset

    def _close_transaction(self, producer_id: int, marker_offset: int, commit: bool) -> None:
        first = self.transactions.close(producer_id)
        if first is not None and not commit:
            lso = self.transactions.last_stable_offset(marker_offset + 1)
            self.log.append_aborted_transaction(AbortedTxn(producer_id, first, marker_offset, lso))

    def read(self, offset: int, max_bytes: int, *, read_committed: bool = False) -> FetchData[bytes]:
        records = self.log.read(offset, max_bytes)
        self.bytes_out += len(records)
        end = self.log.log_end_offset
        if not read_committed:
            return _fetch_data(records, end, self.log.log_start_offset, end, None)
        stable = self.transactions.last_stable_offset(end)
        aborted = self.log.aborted_transactions(offset, end)
        if stable == end and not aborted:  # the common case: nothing open, nothing aborted ahead: no walk
            return _fetch_data(records, end, self.log.log_start_offset, stable, aborted)
        records, aborted = _committed_part(records, stable, aborted)
        return _fetch_data(records, end, self.log.log_start_offset, stable, aborted)

    def read_for_send(
        self, offset: int, max_bytes: int, *, read_committed: bool = False
    ) -> FetchData[bytes | FileRecords]:
        """`read` for a Fetch answer: a large read of the file engine is `FileRecords`, sent without copying. A
        read_committed read that must stop at the last stable offset walks the batches, so it reads `bytes`."""
        end = self.log.log_end_offset
        stable, aborted = end, None
        if read_committed:
            stable = self.transactions.last_stable_offset(end)
            aborted = self.log.aborted_transactions(offset, end)
            if stable != end or aborted:
                records = self.log.read(offset, max_bytes)
                self.bytes_out += len(records)
                committed, aborted = _committed_part(records, stable, aborted)
                return _fetch_data(committed, end, self.log.log_start_offset, stable, aborted)
        sendable = self.log.read_file_records(offset, max_bytes)
        self.bytes_out += len(sendable)
        return _fetch_data(sendable, end, self.log.log_start_offset, stable, aborted)

    def describe_producers(self) -> list[ProducerDescription]:
        """Every producer with idempotence state here or an open transaction, by producer id."""
        entries = self.producers.entries()
        ids = sorted(set(entries) | set(self.transactions.producer_ids()))
        described = []
        for producer_id in ids:
            entry = entries.get(producer_id)
            first = self.transactions.first_offset(producer_id)
            described.append(
                ProducerDescription(
                    producer_id,
                    entry.epoch if entry else -1,
                    entry.last_sequence if entry else -1,
                    entry.last_timestamp if entry else -1,
                    -1 if first is None else first,
                    entry.coordinator_epoch if entry else -1,
                )
            )
        return described

    def max_timestamp_offset(self) -> tuple[int, int]:
        """(offset, timestamp) of the record with the largest timestamp seen (ListOffsets MAX_TIMESTAMP)."""
        if self._max_timestamp < 0:
            return -1, -1
        return self.log.offset_for_timestamp(self._max_timestamp) or (-1, -1)

    def add_waiter(self, waiter: asyncio.Future[bool]) -> None:
        self._waiters.add(waiter)

    def remove_waiter(self, waiter: asyncio.Future[bool]) -> None:
        self._waiters.discard(waiter)

    def _wake_readers(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(True)
        self._waiters.clear()

    def _rebuild_producer_state(self) -> None:
        """Replay the batch headers of the log's tail (idempotence table, max timestamp): headers only, no records."""
        start = self.log.log_end_offset - PRODUCER_STATE_WINDOW
        for chunk, pos, header in scan_batches(self.log, start):
            self._max_timestamp = max(self._max_timestamp, header.max_timestamp)
            if header.is_control:
                self._replay_marker(chunk, pos, header)
            elif header.producer_id >= 0:
                if header.base_sequence >= 0:
                    self.producers.observe(header)
                if header.is_transactional:
                    self.transactions.observe(header)

    def find_open_transaction(self, producer_id: int) -> int | None:
        """Where `producer_id`'s still-open transaction began, by a scan of every batch header of the log; None
        when the start-up tail (`PRODUCER_STATE_WINDOW`) already covered the whole log. Blocking: run it off the loop,
        on start, only for transactions the coordinator knows to be open."""
        if self.log.log_end_offset - PRODUCER_STATE_WINDOW <= self.log.log_start_offset:
            return None
        first: int | None = None
        for _chunk, _pos, header in scan_batches(self.log, self.log.log_start_offset):
            if header.producer_id != producer_id:
                continue
            if header.is_control:
                first = None
            elif header.is_transactional and first is None:
                first = header.base_offset
        return first

    def _replay_marker(self, chunk: bytes, pos: int, header: BatchHeader) -> None:
        """A marker met on start: close its transaction, and index an abort the `.txnindex` lost (it lags the log)."""
        kind = control_type(chunk, pos, header)
        if kind is None:
            return
        try:
            coordinator_epoch = marker_coordinator_epoch(chunk, pos)
        except CorruptRecordError:
            coordinator_epoch = -1
        self.producers.observe_marker(
            header.producer_id, header.producer_epoch, coordinator_epoch, header.max_timestamp, header.base_offset
        )
        first = self.transactions.close(header.producer_id)
        if kind is ControlType.ABORT and first is not None and not self.log.has_aborted_transaction(header.base_offset):
            lso = self.transactions.last_stable_offset(header.base_offset + 1)
            try:
                self.log.append_aborted_transaction(AbortedTxn(header.producer_id, first, header.base_offset, lso))
            except ValueError as exc:
                logger.warning("cannot re-index the abort at %s-%d: %s", self.topic, self.index, exc)
            else:
                logger.info(
                    "re-indexed the aborted transaction ending at %s-%d offset %d",
                    self.topic,
                    self.index,
                    header.base_offset,
                )


def _now_ms() -> int:
    return int(time.time() * 1000)


def _committed_part(records: bytes, stable: int, aborted: list[AbortedTxn]) -> tuple[bytes, list[AbortedTxn]]:
    """The whole batches of `records` below `stable`, and the aborted transactions among them."""
    cut, upper = _batches_below(records, stable)
    return records[:cut], [entry for entry in aborted if entry.first_offset < upper]


def _batches_below(records: bytes, stable: int) -> tuple[int, int]:
    """(bytes of the whole batches of `records` that start below `stable`, the offset after the last of them)."""
    pos, upper = 0, -1
    while pos < len(records):
        base = int.from_bytes(records[pos : pos + 8], "big", signed=True)
        if base >= stable:
            break
        upper = base + int.from_bytes(records[pos + 23 : pos + 27], "big", signed=True) + 1
        pos += 12 + int.from_bytes(records[pos + 8 : pos + 12], "big", signed=True)
    return pos, upper


def partition_of(topics: dict[str, Topic], name: str, index: int) -> Partition | None:
    """Partition `index` of topic `name` in `topics` (`Broker.topics`), or None where there is none: the served
    handlers' lookup, compiled, where `Broker.partition` is an interpreted frame that raises for a missing one (the
    handlers then go through the broker's own method, which raises that error)."""
    topic = topics.get(name)
    if topic is None or not 0 <= index < len(topic.partitions):
        return None
    return topic.partitions[index]
