"""RecordBatch v2 (magic 2): the unit KafkaLite stores, ships and never re-encodes on the hot path.

Layout of one batch, all integers big-endian (Kafka's `DefaultRecordBatch`)::

    offset  size  field
         0     8  base_offset             patched by the broker on append (not covered by the CRC)
         8     4  batch_length            bytes after this field: total size = batch_length + 12
        12     4  partition_leader_epoch  (not covered by the CRC)
        16     1  magic                   always 2 here
        17     4  crc                     CRC-32C (Castagnoli) of bytes [21, end)
        21     2  attributes              bits 0-2 compression, 3 timestamp type, 4 transactional, 5 control
        23     4  last_offset_delta       record count - 1 for a producer's batch
        27     8  base_timestamp
        35     8  max_timestamp
        43     8  producer_id
        51     2  producer_epoch
        53     4  base_sequence
        57     4  record_count
        61        records (compressed as a whole when attributes say so)

Each record: varint length, int8 attributes, varlong timestamp delta, varint offset delta, varint key length + key
(-1 = null), varint value length + value, varint header count, then per header varint key length + UTF-8 key and
varint value length + value (-1 = null). Varints are zigzag-encoded, as in protobuf.

Invariants: the broker reads only the 61-byte header (`read_header`) and checks the CRC; it rewrites only the
base offset and, for LogAppendTime topics, the max timestamp (then the CRC). Everything that fails a check raises
`CorruptRecordError` with the reason, before any byte is changed.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple

from crc32c import crc32c

from kafkalite.errors import CorruptRecordError

MAGIC = 2
HEADER_SIZE = 61
LOG_OVERHEAD = 12  # base_offset + batch_length: the bytes batch_length does not count
CRC_START = 21
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1

ATTR_COMPRESSION_MASK = 0x07
ATTR_LOG_APPEND_TIME = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20

_HEADER = struct.Struct(">qiibIhiqqqhii")
_BASE_OFFSET = struct.Struct(">q")
_CRC = struct.Struct(">I")
_MAX_TIMESTAMP_AT = 35
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")


class Compression(IntEnum):
    """Attribute bits 0-2 of a batch."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class BatchHeader(NamedTuple):
    """A read-only view of the 61-byte header of one batch."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size(self) -> int:
        """Total bytes of the batch, header included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression(self) -> Compression:
        return Compression(self.attributes & ATTR_COMPRESSION_MASK)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def log_append_time(self) -> bool:
        return bool(self.attributes & ATTR_LOG_APPEND_TIME)


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Parse the header of the batch at `pos`; check it is whole in `buf` and that its magic is 2.

    The CRC is not checked here (see `verify_crc`): a caller that only needs offsets pays for 61 bytes, not the batch.
    """
    available = len(buf) - pos
    if available < HEADER_SIZE:
        raise CorruptRecordError(f"truncated batch header: {available} of {HEADER_SIZE} bytes at position {pos}")
    header = BatchHeader._make(_HEADER.unpack_from(buf, pos))
    if header.magic != MAGIC:
        raise CorruptRecordError(f"unsupported magic {header.magic} at position {pos} (only RecordBatch v2)")
    if header.batch_length < MIN_BATCH_LENGTH:
        raise CorruptRecordError(f"batch length {header.batch_length} at position {pos} is below {MIN_BATCH_LENGTH}")
    if header.size > available:
        raise CorruptRecordError(f"truncated batch: {available} of {header.size} bytes at position {pos}")
    if header.last_offset_delta < 0 or header.record_count < 0:
        raise CorruptRecordError(f"negative last offset delta or record count at position {pos}")
    if header.compression > Compression.ZSTD:
        raise CorruptRecordError(f"unknown compression codec {header.compression} at position {pos}")
    return header


def verify_crc(buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader) -> None:
    """Raise `CorruptRecordError` unless the stored CRC-32C matches bytes [pos + 21, pos + size)."""
    actual = crc32c(memoryview(buf)[pos + CRC_START : pos + header.size])
    if actual != header.crc:
        raise CorruptRecordError(f"CRC mismatch at position {pos}: stored {header.crc:#010x}, computed {actual:#010x}")


def read_batches(buf: bytes | bytearray | memoryview, *, check_crc: bool = True) -> list[tuple[int, BatchHeader]]:
    """Split `buf` into whole batches, returning (position, header) pairs; every byte must belong to a batch."""
    batches: list[tuple[int, BatchHeader]] = []
    pos, end = 0, len(buf)
    while pos < end:
        header = read_header(buf, pos)
        if check_crc:
            verify_crc(buf, pos, header)
        batches.append((pos, header))
        pos += header.size
    return batches


def valid_prefix(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[int, list[BatchHeader], str | None]:
    """Walk batches from `pos`; stop at the first partial or corrupt one (log recovery).

    Returns (end position of the last good batch, headers of the good batches, reason the walk stopped or None).
    """
    headers: list[BatchHeader] = []
    end = len(buf)
    while pos < end:
        try:
            header = read_header(buf, pos)
            verify_crc(buf, pos, header)
        except CorruptRecordError as exc:
            return pos, headers, str(exc)
        headers.append(header)
        pos += header.size
    return pos, headers, None


def patch_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    """Write the broker-assigned base offset into the batch at `pos` (the CRC does not cover it)."""
    _BASE_OFFSET.pack_into(buf, pos, base_offset)


def patch_log_append_time(buf: bytearray | memoryview, pos: int, header: BatchHeader, timestamp_ms: int) -> None:
    """Set the max timestamp of a LogAppendTime batch to the broker's clock and recompute the CRC."""
    _INT64.pack_into(buf, pos + _MAX_TIMESTAMP_AT, timestamp_ms)
    _CRC.pack_into(buf, pos + 17, crc32c(memoryview(buf)[pos + CRC_START : pos + header.size]))


# --- records inside a batch -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Record:
    """One record as a consumer sees it: absolute offset and timestamp, key, value and headers."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(frozen=True, slots=True)
class RecordToWrite:
    """One record a producer hands to `build_batch`; timestamp None means 'now' as the caller defines it."""

    value: bytes | None
    key: bytes | None = None
    headers: Sequence[tuple[str, bytes | None]] = ()
    timestamp: int | None = None


def encode_varint(value: int) -> bytes:
    """Zigzag varint (signed 64-bit), as Kafka's record fields use."""
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while zigzag > 0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def decode_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Decode a zigzag varint at `pos`; return (value, next position). At most 10 bytes (a 64-bit value)."""
    result = 0
    shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise CorruptRecordError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
        if shift >= 70:
            raise CorruptRecordError("varint longer than 10 bytes")
    return (result >> 1) ^ -(result & 1), pos


def _encode_bytes(data: bytes | None) -> bytes:
    if data is None:
        return encode_varint(-1)
    return encode_varint(len(data)) + data


def encode_record(offset_delta: int, timestamp_delta: int, record: RecordToWrite) -> bytes:
    body = bytearray(b"\x00")  # record attributes: unused, always 0
    body += encode_varint(timestamp_delta)
    body += encode_varint(offset_delta)
    body += _encode_bytes(record.key)
    body += _encode_bytes(record.value)
    body += encode_varint(len(record.headers))
    for name, value in record.headers:
        body += _encode_bytes(name.encode())
        body += _encode_bytes(value)
    return encode_varint(len(body)) + bytes(body)


def build_batch(
    records: Sequence[RecordToWrite],
    *,
    now_ms: int,
    base_offset: int = 0,
    compression: Compression = Compression.NONE,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    log_append_time: bool = False,
) -> bytes:
    """Encode `records` as one RecordBatch v2, with the CRC computed; records without a timestamp get `now_ms`."""
    if not records:
        raise ValueError("a batch holds at least one record")
    timestamps = [now_ms if r.timestamp is None else r.timestamp for r in records]
    base_timestamp = min(timestamps)
    body = b"".join(
        encode_record(delta, ts - base_timestamp, record)
        for delta, (ts, record) in enumerate(zip(timestamps, records, strict=True))
    )
    body = compress(compression, body)
    attributes = int(compression) | (ATTR_LOG_APPEND_TIME if log_append_time else 0)
    after_crc = (
        struct.pack(
            ">hiqqqhii",
            attributes,
            len(records) - 1,
            base_timestamp,
            max(timestamps),
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        )
        + body
    )
    batch_length = HEADER_SIZE - LOG_OVERHEAD + len(body)
    head = struct.pack(">qiibI", base_offset, batch_length, -1, MAGIC, crc32c(after_crc))
    return head + after_crc


def iter_records(batch: bytes | bytearray | memoryview, pos: int = 0) -> Iterator[Record]:
    """Decode the records of the batch at `pos` (decompressing as needed); validate every length on the way."""
    header = read_header(batch, pos)
    body = bytes(memoryview(batch)[pos + HEADER_SIZE : pos + header.size])
    body = decompress(header.compression, body)
    cursor, end = 0, len(body)
    for _ in range(header.record_count):
        length, cursor = decode_varint(body, cursor)
        record_end = cursor + length
        if length < 0 or record_end > end:
            raise CorruptRecordError(f"record length {length} overruns its batch")
        cursor += 1  # attributes
        ts_delta, cursor = decode_varint(body, cursor)
        offset_delta, cursor = decode_varint(body, cursor)
        key, cursor = _decode_bytes(body, cursor, record_end)
        value, cursor = _decode_bytes(body, cursor, record_end)
        header_count, cursor = decode_varint(body, cursor)
        if header_count < 0:
            raise CorruptRecordError(f"negative header count {header_count}")
        headers: list[tuple[str, bytes | None]] = []
        for _ in range(header_count):
            name, cursor = _decode_bytes(body, cursor, record_end)
            if name is None:
                raise CorruptRecordError("record header with a null key")
            header_value, cursor = _decode_bytes(body, cursor, record_end)
            try:
                headers.append((name.decode(), header_value))
            except UnicodeDecodeError as exc:
                raise CorruptRecordError(f"record header key is not UTF-8: {exc}") from None
        if cursor != record_end:
            raise CorruptRecordError(f"record declares {length} bytes but its fields use {length - record_end + cursor}")
        timestamp = header.max_timestamp if header.log_append_time else header.base_timestamp + ts_delta
        yield Record(header.base_offset + offset_delta, timestamp, key, value, tuple(headers))
    if cursor != end:
        raise CorruptRecordError(f"{end - cursor} trailing bytes after the last record of the batch")


def _decode_bytes(buf: bytes, pos: int, limit: int) -> tuple[bytes | None, int]:
    length, pos = decode_varint(buf, pos)
    if length == -1:
        return None, pos
    if length < 0 or pos + length > limit:
        raise CorruptRecordError(f"field length {length} overruns its record")
    return buf[pos : pos + length], pos + length


# --- compression ------------------------------------------------------------------------------------------------


def compress(codec: Compression, data: bytes) -> bytes:
    """Compress a batch body with `codec` (identity for NONE)."""
    if codec is Compression.NONE:
        return data
    raise NotImplementedError(f"compression {codec.name}")


def decompress(codec: Compression, data: bytes) -> bytes:
    """Decompress a batch body written with `codec`; malformed input raises `CorruptRecordError`."""
    if codec is Compression.NONE:
        return data
    raise NotImplementedError(f"compression {codec.name}")
