"""The transaction coordinator's durable state: one record per change, in the internal topic `__transaction_state`.

Records use Kafka's own schemas (TransactionLogKey v0, TransactionLogValue v0), so Kafka tooling can read the topic:

    key   int16 version = 0, string transactional_id
    value int16 version = 0, int64 producer_id, int16 producer_epoch, int32 transaction_timeout_ms,
          int8 state (TxnState.code), [string topic, [int32 partition]] partitions (int32 counts, -1 = null),
          int64 last_update_timestamp_ms, int64 start_timestamp_ms
    (strings are int16 length + UTF-8)

The coordinator's table in memory is the source of answers; this log is its durable copy, replayed on start (the last
record of a transactional id wins). A change is written and, when the broker fsyncs, synced before the client hears
of it, so a restart never forgets a bump it answered. Compaction is `OffsetManager`'s simple scheme: once the log holds
`COMPACT_RATIO` times more records than live ids, the live table is appended as one batch and everything before it
deleted. One partition holds every transactional id (a single broker coordinates them all).
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Callable

from kafkalite.broker.log_reader import scan_records
from kafkalite.broker.partition import Partition
from kafkalite.errors import CorruptRecordError
from kafkalite.protocol.records import RecordToWrite, build_batch
from kafkalite.transactions import TxnMetadata, TxnState

logger = logging.getLogger("kafkalite.transactions")

TRANSACTION_STATE_TOPIC = "__transaction_state"
COMPACT_RATIO = 4
COMPACT_MIN_RECORDS = 10_000
_VERSION = 0


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def unpack(self, fmt: str) -> tuple[int, ...]:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise CorruptRecordError(f"transaction state record ends at byte {len(self.data)}, reading {fmt}")
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return values

    def string(self) -> str:
        (length,) = self.unpack(">h")
        if length < 0 or self.pos + length > len(self.data):
            raise CorruptRecordError(f"transaction state string of length {length} overruns its record")
        self.pos += length
        return self.data[self.pos - length : self.pos].decode()


def _pack_string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def encode_key(transactional_id: str) -> bytes:
    return struct.pack(">h", _VERSION) + _pack_string(transactional_id)


def decode_key(data: bytes) -> str:
    reader = _Reader(data)
    (version,) = reader.unpack(">h")
    if version != _VERSION:
        raise CorruptRecordError(f"transaction log key version {version} is not supported")
    return reader.string()


def encode_value(txn: TxnMetadata) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(txn.partitions):
        by_topic.setdefault(topic, []).append(partition)
    parts = [
        struct.pack(">hqhib", _VERSION, txn.producer_id, txn.producer_epoch, txn.timeout_ms, txn.state.code),
        struct.pack(">i", len(by_topic)),
    ]
    for topic, partitions in by_topic.items():
        parts += [_pack_string(topic), struct.pack(f">i{len(partitions)}i", len(partitions), *partitions)]
    parts.append(struct.pack(">qq", txn.last_update_ms, txn.start_ms))
    return b"".join(parts)


def decode_value(transactional_id: str, data: bytes) -> TxnMetadata:
    reader = _Reader(data)
    version, producer_id, epoch, timeout_ms, state = reader.unpack(">hqhib")
    if version != _VERSION:
        raise CorruptRecordError(f"transaction log value version {version} is not supported")
    partitions: set[tuple[str, int]] = set()
    (topics,) = reader.unpack(">i")
    for _ in range(max(topics, 0)):
        topic = reader.string()
        (count,) = reader.unpack(">i")
        partitions.update((topic, index) for index in reader.unpack(f">{max(count, 0)}i"))
    last_update, start = reader.unpack(">qq")
    return TxnMetadata(
        transactional_id, producer_id, epoch, timeout_ms, TxnState.from_code(state), partitions, start, last_update
    )


class TransactionLog:
    """The durable copy of the coordinator's table, in one partition of `__transaction_state`."""

    def __init__(self, partition: Partition, *, fsync: bool) -> None:
        self._partition = partition
        self._fsync = fsync
        self._live: set[str] = set()
        self._records_in_log = 0

    def load(self) -> list[TxnMetadata]:
        """Every transactional id's last recorded state."""
        latest: dict[str, TxnMetadata] = {}
        for record in scan_records(self._partition.log, 0):
            if record.key is None or record.value is None:
                continue
            try:
                transactional_id = decode_key(record.key)
                latest[transactional_id] = decode_value(transactional_id, record.value)
            except (CorruptRecordError, ValueError, UnicodeDecodeError) as exc:
                logger.error(
                    "Skipping unreadable %s record at offset %d: %s", TRANSACTION_STATE_TOPIC, record.offset, exc
                )
                continue
            self._records_in_log += 1
        self._live = set(latest)
        if latest:
            logger.info("Loaded %d transactional ids from %s", len(latest), TRANSACTION_STATE_TOPIC)
        return list(latest.values())

    async def write(self, *states: TxnMetadata, sync: bool = True) -> None:
        """Append the states as one batch; with `sync`, return once it is durable (when the broker fsyncs)."""
        records = [RecordToWrite(encode_value(txn), encode_key(txn.transactional_id)) for txn in states]
        await self._partition.append(build_batch(records, now_ms=int(time.time() * 1000)))
        self._live.update(txn.transactional_id for txn in states)
        self._records_in_log += len(records)
        if self._fsync and sync:
            await self._partition.log.sync()

    async def compact_if_due(self, live_count: int, snapshot: Callable[[], list[TxnMetadata]]) -> None:
        """Rewrite the live table (`snapshot()`, taken only when due) and drop what came before, once the log is
        mostly superseded records."""
        if self._records_in_log <= max(COMPACT_MIN_RECORDS, COMPACT_RATIO * live_count):
            return
        live = snapshot()
        snapshot_offset = self._partition.high_watermark
        self._records_in_log = 0
        if live:
            await self.write(*live)
        self._partition.log.delete_records_before(snapshot_offset)
        logger.info("Compacted %s to %d transactional ids", TRANSACTION_STATE_TOPIC, len(live))
