"""The transaction coordinator's durable state: one record per change, in the internal topic `__transaction_state`.

Records use Kafka's own schemas (TransactionLogKey v0, TransactionLogValue v0 and v1), so Kafka tooling can read the
topic:

    key   int16 version = 0, string transactional_id
    value int16 version = 0, int64 producer_id, int16 producer_epoch, int32 transaction_timeout_ms,
          int8 state (TxnState.code), [string topic, [int32 partition]] partitions (int32 counts, -1 = null),
          int64 last_update_timestamp_ms, int64 start_timestamp_ms
          (strings are int16 length + UTF-8)
    value int16 version = 1 (flexible, what this broker writes, as Kafka does from transaction version 1 on): the same
          fields, with compact strings and arrays (unsigned varint length + 1, 0 = null) and an empty tag buffer
          after each partitions entry, then the tagged fields: 0 previous_producer_id (int64, -1 when absent),
          1 next_producer_id (int64, -1), 2 client_transaction_version (int16, 0); a field at its default is left out
    tombstone: the key with a null value, written when a transactional id expires (rule 7); it forgets the id

The coordinator's table in memory is the source of answers; this log is its durable copy, replayed on start (the last
record of a transactional id wins, a tombstone removes it). A change is written and, when the broker fsyncs, synced
before the client hears of it, so a restart never forgets a bump it answered. Compaction is `OffsetManager`'s simple
scheme: once the log holds `COMPACT_RATIO` times more records than live ids, the live table is appended as one batch
and everything before it deleted (tombstones with it: the ids they forgot are not in the table). One partition holds
every transactional id (a single broker coordinates them all).
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Callable

from kafkalite.broker.log_reader import scan_records
from kafkalite.broker.partition import Partition
from kafkalite.broker.schema_reader import SchemaReader
from kafkalite.errors import CorruptRecordError
from kafkalite.protocol.records import RecordToWrite, build_batch
from kafkalite.protocol.wire import encode_unsigned_varint
from kafkalite.transactions import TxnMetadata, TxnState

logger = logging.getLogger("kafkalite.transactions")

TRANSACTION_STATE_TOPIC = "__transaction_state"
COMPACT_RATIO = 4
COMPACT_MIN_RECORDS = 10_000
_VERSION = 0
_FLEXIBLE_VERSION = 1


def _pack_string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def encode_key(transactional_id: str) -> bytes:
    return struct.pack(">h", _VERSION) + _pack_string(transactional_id)


def decode_key(data: bytes) -> str:
    reader = SchemaReader(data, "transaction state")
    (version,) = reader.unpack(">h")
    if version != _VERSION:
        raise CorruptRecordError(f"transaction log key version {version} is not supported")
    return reader.string()


def _compact_string(text: str) -> bytes:
    data = text.encode()
    return encode_unsigned_varint(len(data) + 1) + data


_TAG_PREVIOUS_PRODUCER_ID, _TAG_NEXT_PRODUCER_ID, _TAG_CLIENT_TRANSACTION_VERSION = 0, 1, 2


def encode_value(txn: TxnMetadata) -> bytes:
    """TransactionLogValue v1 (flexible)."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(txn.partitions):
        by_topic.setdefault(topic, []).append(partition)
    parts = [
        struct.pack(">hqhib", _FLEXIBLE_VERSION, txn.producer_id, txn.producer_epoch, txn.timeout_ms, txn.state.code),
        encode_unsigned_varint(len(by_topic) + 1),
    ]
    for topic, partitions in by_topic.items():
        parts += [
            _compact_string(topic),
            encode_unsigned_varint(len(partitions) + 1),
            struct.pack(f">{len(partitions)}i", *partitions),
            b"\x00",
        ]
    parts.append(struct.pack(">qq", txn.last_update_ms, txn.start_ms))
    tags = []
    if txn.previous_producer_id != -1:
        tags.append((_TAG_PREVIOUS_PRODUCER_ID, struct.pack(">q", txn.previous_producer_id)))
    if txn.next_producer_id != -1:
        tags.append((_TAG_NEXT_PRODUCER_ID, struct.pack(">q", txn.next_producer_id)))
    if txn.client_transaction_version != 0:
        tags.append((_TAG_CLIENT_TRANSACTION_VERSION, struct.pack(">h", txn.client_transaction_version)))
    parts.append(encode_unsigned_varint(len(tags)))
    for tag, data in tags:
        parts += [encode_unsigned_varint(tag), encode_unsigned_varint(len(data)), data]
    return b"".join(parts)


def encode_value_v0(txn: TxnMetadata) -> bytes:
    """TransactionLogValue v0 (what this broker wrote before v1; kept for tests of the replay of old logs)."""
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
    """TransactionLogValue v0 or v1; unknown tagged fields are skipped, as Kafka's readers do."""
    reader = SchemaReader(data, "transaction state")
    version, producer_id, epoch, timeout_ms, state = reader.unpack(">hqhib")
    if version not in (_VERSION, _FLEXIBLE_VERSION):
        raise CorruptRecordError(f"transaction log value version {version} is not supported")
    flexible = version == _FLEXIBLE_VERSION
    partitions: set[tuple[str, int]] = set()
    topics = reader.uvarint() - 1 if flexible else reader.unpack(">i")[0]
    for _ in range(max(topics, 0)):
        topic = reader.compact_string() if flexible else reader.string()
        count = reader.uvarint() - 1 if flexible else reader.unpack(">i")[0]
        partitions.update((topic, index) for index in reader.unpack(f">{max(count, 0)}i"))
        if flexible:
            reader.tags()
    last_update, start = reader.unpack(">qq")
    txn = TxnMetadata(
        transactional_id, producer_id, epoch, timeout_ms, TxnState.from_code(state), partitions, start, last_update
    )
    if flexible:
        for tag, field in reader.tags():
            if tag == _TAG_PREVIOUS_PRODUCER_ID:
                (txn.previous_producer_id,) = field.unpack(">q")
            elif tag == _TAG_NEXT_PRODUCER_ID:
                (txn.next_producer_id,) = field.unpack(">q")
            elif tag == _TAG_CLIENT_TRANSACTION_VERSION:
                (txn.client_transaction_version,) = field.unpack(">h")
    return txn


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
            if record.key is None:
                continue
            try:
                transactional_id = decode_key(record.key)
                if record.value is None:  # a tombstone: the id expired
                    latest.pop(transactional_id, None)
                    continue
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

    async def write_tombstones(self, transactional_ids: list[str]) -> None:
        """Append a tombstone (the key, a null value) per expired id, as one batch; synced with the broker's fsync."""
        records = [RecordToWrite(None, encode_key(tid)) for tid in transactional_ids]
        await self._partition.append(build_batch(records, now_ms=int(time.time() * 1000)))
        self._live.difference_update(transactional_ids)
        self._records_in_log += len(records)
        if self._fsync:
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
