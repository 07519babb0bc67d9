"""Re-encoding a stored RecordBatch v2 with some of its records removed: what log compaction writes.

Kafka's cleaner (`MemoryRecords.filterTo`) keeps a batch whose records all survive byte for byte, and rebuilds one
that loses some, keeping what identifies it: the base offset (so the surviving records keep their offsets through
their offset deltas), the attributes (compression, timestamp type, transactional, control), the partition leader
epoch, the producer id, epoch and base sequence, and the last offset delta ("used by the broker to ensure correct
behavior even when records within a batch are compacted out", as Kafka's format documents it: readers move past the
batch's last offset, and the producer's last sequence stays base sequence + last offset delta). `rebuild_batch`
writes that batch: the max timestamp becomes the largest surviving timestamp (the stored one, for LogAppendTime
batches, whose records all carry it), and the body is compressed again with the batch's own codec.

Delete horizon (KIP-534): the first cleaning that keeps a tombstone or a control batch stamps the batch with the
time after which the next cleaning may drop them. The stamp is attribute bit 6 and the base timestamp field; record
timestamp deltas are then relative to it (negative deltas are valid varints), so every reader still computes each
record's own timestamp as base timestamp + delta.

`empty_batch` is the header-only batch Kafka writes when every record of a producer's last batch is gone: no
records, the original base and last offset, producer id, epoch and sequence, so the producer's idempotence state can
still be rebuilt from the log. Readers skip it and move past its last offset.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from kafkalite.protocol.checksum import crc32c
from kafkalite.protocol.records import (
    ATTR_COMPRESSION_MASK,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    BatchHeader,
    Record,
    RecordToWrite,
    compress,
    encode_record,
)

ATTR_DELETE_HORIZON = 0x40  # KIP-534: the base timestamp is the batch's delete horizon

_AFTER_CRC = struct.Struct(">hiqqqhii")
_BEFORE_CRC = struct.Struct(">qiibI")


def delete_horizon(header: BatchHeader) -> int | None:
    """The delete horizon stamped on a batch by an earlier cleaning, or None."""
    return header.base_timestamp if header.attributes & ATTR_DELETE_HORIZON else None


def rebuild_batch(header: BatchHeader, records: Sequence[Record], *, horizon_ms: int | None) -> bytes:
    """A valid v2 batch holding `records` (a non-empty, ordered subset of the batch `header` describes).

    `horizon_ms`, when given, is stamped as the batch's delete horizon (see the module docstring).
    """
    if not records:
        raise ValueError("a rebuilt batch keeps at least one record (see empty_batch)")
    base_offset = header.base_offset
    attributes = header.attributes & ~ATTR_DELETE_HORIZON
    if header.log_append_time:
        max_timestamp = header.max_timestamp
        base_timestamp = records[0].timestamp if horizon_ms is None else horizon_ms
    else:
        max_timestamp = max(record.timestamp for record in records)
        base_timestamp = min(record.timestamp for record in records) if horizon_ms is None else horizon_ms
    if horizon_ms is not None:
        attributes |= ATTR_DELETE_HORIZON
    body = b"".join(
        encode_record(
            record.offset - base_offset,
            record.timestamp - base_timestamp,
            RecordToWrite(record.value, record.key, record.headers),
        )
        for record in records
    )
    return _assemble(header, attributes, header.last_offset_delta, base_timestamp, max_timestamp, len(records), body)


def empty_batch(header: BatchHeader) -> bytes:
    """The header-only batch that keeps a producer's last batch's identity (see the module docstring)."""
    attributes = header.attributes & ~ATTR_DELETE_HORIZON & ~ATTR_COMPRESSION_MASK
    return _assemble(header, attributes, header.last_offset_delta, header.max_timestamp, header.max_timestamp, 0, b"")


def _assemble(
    header: BatchHeader,
    attributes: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    record_count: int,
    body: bytes,
) -> bytes:
    if record_count and attributes & ATTR_COMPRESSION_MASK:
        body = compress(header.compression, body)
    after_crc = (
        _AFTER_CRC.pack(
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            header.producer_id,
            header.producer_epoch,
            header.base_sequence,
            record_count,
        )
        + body
    )
    batch_length = HEADER_SIZE - LOG_OVERHEAD + len(body)
    head = _BEFORE_CRC.pack(header.base_offset, batch_length, header.partition_leader_epoch, MAGIC, crc32c(after_crc))
    return head + after_crc
