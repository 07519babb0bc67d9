"""Committed offsets (group + topic + partition → offset) and the classic groups' membership, kept in the internal
topic `__consumer_offsets`.

Records use Kafka's own schemas, so Kafka tooling can read the topic. Offset commits:

    key   (OffsetCommitKey v1):   int16 version=1, string group, string topic, int32 partition
    value (OffsetCommitValue v3): int16 version=3, int64 offset, int32 leader_epoch, string metadata,
                                  int64 commit_timestamp
    (strings are int16 length + UTF-8; a null value is a tombstone: the offset was deleted)

Group metadata records (key version 2, `group_records.py`) sit beside them: the last record of each group is kept in
`stored_groups()` for the group service to restore at start, and `store_groups()` writes new ones. So do the KIP-848
consumer groups' records (key versions 3 to 8, `consumer_group_records.py`): `consumer_group_records()` at start,
`store_records()` after.

The in-memory table is the source of answers; the log is its durable copy, replayed on start (last record per key
wins). The table changes when a record is appended, in log order; a commit returns once its record is written and,
when the broker fsyncs, synced. The topic is a compacted one (`OFFSETS_TOPIC_CONFIG`, Kafka's defaults for it): the
log cleaner keeps the latest record per key and drops deleted offsets' tombstones after `delete.retention.ms`, so
start-up replay stays proportional to the live offsets plus what is not yet cleaned.

Transactional commits (TxnOffsetCommit, KIP-98/447) are written as they arrive, in a transactional batch carrying the
producer's id and epoch, but held apart (`_pending`, per producer id) until the transaction's marker reaches this
partition: a commit marker moves them into the table, an abort marker drops them (`complete_transaction`). Replay
does the same with the markers it meets, so offsets of a transaction that never completed stay invisible.
The log cleaner keeps such records until their marker decides them (it is given the partition's first unstable
offset and aborted transactions).
"""

from __future__ import annotations

import contextlib
import logging
import struct
import time
from collections.abc import Iterable
from dataclasses import dataclass

from kafkalite.broker.consumer_group_records import record_type
from kafkalite.broker.group_records import decode_group_key, decode_group_value, encode_group_key, encode_group_value
from kafkalite.broker.log_reader import scan_batches
from kafkalite.broker.partition import Partition
from kafkalite.errors import CorruptRecordError, KafkaLiteError
from kafkalite.groups import StoredGroup
from kafkalite.protocol.control_records import ControlType, control_type
from kafkalite.protocol.records import BatchHeader, RecordToWrite, build_batch, iter_records

logger = logging.getLogger("kafkalite.offsets")

OFFSETS_TOPIC = "__consumer_offsets"
OFFSETS_SEGMENT_BYTES = 100 * 1024 * 1024  # offsets.topic.segment.bytes
_KEY_VERSION = 1
_VALUE_VERSION = 3


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    metadata: str = ""
    leader_epoch: int = -1
    commit_timestamp: int = -1


OffsetKey = tuple[str, str, int]  # group, topic, partition


def _pack_string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def _unpack_string(buf: bytes, pos: int) -> tuple[str, int]:
    (length,) = struct.unpack_from(">h", buf, pos)
    pos += 2
    if length < 0 or pos + length > len(buf):
        raise CorruptRecordError(f"offset record string of length {length} overruns its record")
    return buf[pos : pos + length].decode(), pos + length


def encode_key(key: OffsetKey) -> bytes:
    group, topic, partition = key
    return struct.pack(">h", _KEY_VERSION) + _pack_string(group) + _pack_string(topic) + struct.pack(">i", partition)


def decode_key(data: bytes) -> OffsetKey | None:
    """The (group, topic, partition) of an offset-commit key; None for other record kinds (group metadata)."""
    (version,) = struct.unpack_from(">h", data, 0)
    if version not in (0, 1):
        return None
    group, pos = _unpack_string(data, 2)
    topic, pos = _unpack_string(data, pos)
    (partition,) = struct.unpack_from(">i", data, pos)
    return group, topic, partition


def encode_value(committed: CommittedOffset) -> bytes:
    return (
        struct.pack(">hqi", _VALUE_VERSION, committed.offset, committed.leader_epoch)
        + _pack_string(committed.metadata)
        + struct.pack(">q", committed.commit_timestamp)
    )


def decode_value(data: bytes) -> CommittedOffset:
    (version,) = struct.unpack_from(">h", data, 0)
    if version != _VALUE_VERSION:
        raise CorruptRecordError(f"offset commit value version {version} is not supported")
    offset, leader_epoch = struct.unpack_from(">qi", data, 2)
    metadata, pos = _unpack_string(data, 14)
    (timestamp,) = struct.unpack_from(">q", data, pos)
    return CommittedOffset(offset, metadata, leader_epoch, timestamp)


class OffsetManager:
    """The committed-offset table of every group, persisted in one partition of `__consumer_offsets`."""

    def __init__(self, partition: Partition, *, fsync: bool) -> None:
        self._partition = partition
        self._fsync = fsync
        self._table: dict[OffsetKey, CommittedOffset] = {}
        self._pending: dict[int, dict[OffsetKey, CommittedOffset | None]] = {}  # producer id → uncommitted offsets
        self._stored_groups: dict[str, StoredGroup] = {}
        self._consumer_group_records: dict[bytes, bytes] = {}  # KIP-848 groups' records: key -> latest value
        self._load()

    def _load(self) -> None:
        for chunk, pos, header in scan_batches(self._partition.log, 0):
            if header.is_control:
                kind = control_type(chunk, pos, header)
                if kind is not None:
                    self.complete_transaction(header.producer_id, kind is ControlType.COMMIT)
                continue
            target = self._pending.setdefault(header.producer_id, {}) if header.is_transactional else None
            for record in iter_records(chunk, pos):
                if record.key is not None and not header.is_transactional and record_type(record.key) is not None:
                    if record.value is None:
                        self._consumer_group_records.pop(record.key, None)
                    else:
                        self._consumer_group_records[record.key] = record.value
                    continue
                if record.key is not None and self._load_group(record.key, record.value, header.is_transactional):
                    continue
                self._apply(record.key, record.value, target)
        if self._table:
            logger.info("Loaded %d committed offsets from %s", len(self._table), OFFSETS_TOPIC)
        if self._stored_groups:
            logger.info("Loaded %d classic groups from %s", len(self._stored_groups), OFFSETS_TOPIC)

    def _load_group(self, key: bytes, value: bytes | None, transactional: bool) -> bool:
        """Replay a group metadata record (False for another kind). One that cannot be read is skipped with a
        warning: the group then starts over (its members rejoin) instead of the broker refusing to start."""
        try:
            group_id = decode_group_key(key)
        except CorruptRecordError:
            return False  # not a group key: the offset-commit path reports it
        if group_id is None:
            return False
        if transactional:
            return True  # this broker never writes one there, and Kafka does not either
        if value is None:
            self._stored_groups.pop(group_id, None)
            return True
        try:
            self._stored_groups[group_id] = decode_group_value(value)
        except CorruptRecordError as exc:
            logger.warning("Group %s: its stored metadata cannot be read (%s); it is not restored", group_id, exc)
            self._stored_groups.pop(group_id, None)
        return True

    def _apply(
        self, key_bytes: bytes | None, value: bytes | None, pending: dict[OffsetKey, CommittedOffset | None] | None
    ) -> None:
        if key_bytes is None:
            return
        key = decode_key(key_bytes)
        if key is None:
            return
        decoded = None if value is None else decode_value(value)
        if pending is not None:
            pending[key] = decoded
        elif decoded is None:
            self._table.pop(key, None)
        else:
            self._table[key] = decoded

    async def commit_transactional(
        self, group: str, producer_id: int, producer_epoch: int, commits: Iterable[tuple[str, int, int, str, int]]
    ) -> None:
        """Write a transaction's offsets (TxnOffsetCommit); they count once its commit marker is written here."""
        now = int(time.time() * 1000)
        updates = _updates(group, commits, now)
        if not updates:
            return
        records = [RecordToWrite(encode_value(value), encode_key(key)) for key, value in updates.items()]
        batch = build_batch(
            records, now_ms=now, producer_id=producer_id, producer_epoch=producer_epoch, transactional=True
        )
        await self._partition.append(batch, txn_check=_coordinator_checked)
        self._pending.setdefault(producer_id, {}).update(updates)
        if self._fsync:
            await self._partition.log.sync()

    def complete_transaction(self, producer_id: int, commit: bool) -> None:
        """The marker of `producer_id`'s transaction was written here: its offsets become committed, or vanish."""
        pending = self._pending.pop(producer_id, None)
        if not commit or not pending:
            return
        for key, value in pending.items():
            if value is None:
                self._table.pop(key, None)
            else:
                self._table[key] = value

    def has_pending(self, group: str, topic: str, partition: int) -> bool:
        """Whether an open transaction holds an offset for this group and partition (OffsetFetch require_stable)."""
        key = (group, topic, partition)
        return any(key in pending for pending in self._pending.values())

    def fetch(self, group: str, topic: str, partition: int) -> CommittedOffset | None:
        return self._table.get((group, topic, partition))

    def committed(self, group: str) -> dict[tuple[str, int], CommittedOffset]:
        return {(topic, partition): c for (g, topic, partition), c in self._table.items() if g == group}

    def groups(self) -> set[str]:
        return {group for group, _, _ in self._table}

    def entries(self) -> list[tuple[OffsetKey, CommittedOffset]]:
        """Every committed offset of every group, in one pass (lag at scrape time)."""
        return list(self._table.items())

    def stored_groups(self) -> dict[str, StoredGroup]:
        """The classic groups as last stored (read at start; `store_groups` keeps it current)."""
        return dict(self._stored_groups)

    async def store_groups(self, entries: Iterable[tuple[str, StoredGroup | None]]) -> dict[str, Exception]:
        """Write classic groups' metadata (None: a tombstone, the group was deleted) with `store_records`: a group that
        cannot be written (too large for the topic's `max.message.bytes`, a string Kafka's schema cannot hold) fails
        alone. Returns the groups not written, with why."""
        now = int(time.time() * 1000)
        failed: dict[str, Exception] = {}
        encoded: list[tuple[str, list[tuple[bytes, bytes | None]]]] = []
        groups: dict[str, StoredGroup | None] = {}
        for group_id, group in entries:
            try:
                value = None if group is None else encode_group_value(group, now_ms=now)
                encoded.append((group_id, [(encode_group_key(group_id), value)]))
            except (struct.error, ValueError) as exc:  # ValueError: text UTF-8 cannot encode
                failed[group_id] = exc
                continue
            groups[group_id] = group
        failed.update(await self.store_records(encoded))
        for group_id, group in groups.items():
            if group_id in failed:
                continue
            if group is None:
                self._stored_groups.pop(group_id, None)
            else:
                self._stored_groups[group_id] = group
        return failed

    def has_groups(self) -> bool:
        """Whether any group is stored, classic or KIP-848: what the group service would restore if built now."""
        return bool(self._stored_groups) or bool(self._consumer_group_records)

    def consumer_group_records(self) -> dict[bytes, bytes]:
        """The KIP-848 groups' records as loaded at start: each key's latest value (tombstoned keys left out)."""
        return dict(self._consumer_group_records)

    async def store_records(
        self, batches: Iterable[tuple[str, list[tuple[bytes, bytes | None]]]]
    ) -> dict[str, Exception]:
        """Write records (key, value or None for a tombstone) as one batch per group, then one sync when the broker
        fsyncs. Returns the groups whose batch was not written, with why. A failed sync is not one of them: the
        records are in the log (a restart reads them back), and the partition stops taking writes, as any partition
        whose fsync fails (its ERROR is logged there)."""
        now = int(time.time() * 1000)
        failed: dict[str, Exception] = {}
        wrote = False
        for group_id, records in batches:
            if not records:
                continue
            try:
                batch = build_batch([RecordToWrite(value, key) for key, value in records], now_ms=now)
                await self._partition.append(batch)
            except KafkaLiteError as exc:
                failed[group_id] = exc
                continue
            wrote = True
        if wrote and self._fsync:
            with contextlib.suppress(KafkaLiteError):
                await self._partition.log.sync()
        return failed

    def groups_with_pending(self) -> set[str]:
        """Groups with offsets in a transaction not yet decided (TxnOffsetCommit before its marker)."""
        return {group for pending in self._pending.values() for group, _, _ in pending}

    async def commit(
        self, group: str, topic: str, partition: int, offset: int, metadata: str = "", leader_epoch: int = -1
    ) -> None:
        await self.commit_many(group, [(topic, partition, offset, metadata, leader_epoch)])

    async def commit_many(self, group: str, commits: Iterable[tuple[str, int, int, str, int]]) -> None:
        """Commit several offsets of one group as one batch: all become durable together."""
        updates = _updates(group, commits, int(time.time() * 1000))
        if not updates:
            return
        await self._write({key: value for key, value in updates.items()})

    async def delete(self, group: str, keys: Iterable[tuple[str, int]] | None = None) -> None:
        """Remove a group's offsets (all, or the given topic-partitions) with tombstones."""
        wanted = None if keys is None else set(keys)
        doomed = [k for k in self._table if k[0] == group and (wanted is None or (k[1], k[2]) in wanted)]
        if not doomed:
            return
        await self._write(dict.fromkeys(doomed))

    async def _write(self, entries: dict[OffsetKey, CommittedOffset | None]) -> None:
        now = int(time.time() * 1000)
        records = [
            RecordToWrite(None if value is None else encode_value(value), encode_key(key))
            for key, value in entries.items()
        ]
        await self._partition.append(build_batch(records, now_ms=now))
        # The table follows the log in append order, before the sync's await: concurrent commits then land in the
        # table in the order a replay will apply them.
        for key, value in entries.items():
            if value is None:
                self._table.pop(key, None)
            else:
                self._table[key] = value
        if self._fsync:
            await self._partition.log.sync()


def _updates(
    group: str, commits: Iterable[tuple[str, int, int, str, int]], now_ms: int
) -> dict[OffsetKey, CommittedOffset]:
    """(topic, partition, offset, metadata, leader epoch) entries of one group as table entries stamped `now_ms`."""
    return {
        (group, topic, partition): CommittedOffset(offset, metadata, leader_epoch, now_ms)
        for topic, partition, offset, metadata, leader_epoch in commits
    }


def _coordinator_checked(header: BatchHeader) -> None:
    """The transaction service checked the producer and the transaction before `commit_transactional` was called."""
