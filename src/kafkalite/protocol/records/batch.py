"""The RecordBatch v2 header: reading it, checking its CRC, and the two patches the broker makes.

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

Invariants: the broker reads only the 61-byte header (`read_header`) and checks the CRC; it rewrites only the
base offset and, for LogAppendTime topics, the timestamp type and max timestamp (then the CRC). Everything that fails
a check raises `CorruptRecordError` with the reason, before any byte is changed; a patch never recomputes the CRC of
a batch whose stored CRC is already wrong, so corruption is never laundered into a "valid" batch.

Everything here reads or writes the 61-byte header and nothing past it, except the CRC, which covers the whole
batch from byte 21: this is what the produce path and the storage engines use, and it costs no per-record work.
"""

from __future__ import annotations

import struct
from enum import IntEnum
from typing import NamedTuple

from kafkalite.errors import CorruptRecordError
from kafkalite.protocol.checksum import crc32c

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

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

_HEADER = struct.Struct(">qiibIhiqqqhii")
_BASE_OFFSET = struct.Struct(">q")
_CRC = struct.Struct(">I")
_ATTRIBUTES = struct.Struct(">h")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_MAGIC_AT = 16
_CRC_AT = 17
_ATTRIBUTES_AT = 21
_LAST_OFFSET_DELTA_AT = 23
_MAX_TIMESTAMP_AT = 35


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


def unpack_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """The 61 bytes at `pos` as a header, unchecked (`read_header` checks them). Made with `tuple.__new__`: the named
    tuple's own `_make` and `__new__` are Python calls even where this module is compiled."""
    return tuple.__new__(BatchHeader, _HEADER.unpack_from(buf, pos))


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Parse the header of the batch at `pos`; check it is whole in `buf` and that its magic is 2.

    The CRC is not checked here (see `verify_crc`): a caller that only needs offsets pays for 61 bytes, not the batch.
    This is on the produce path, so it is one `unpack_from` and a few integer comparisons, no per-record work.
    """
    available = len(buf) - pos
    if available < HEADER_SIZE:
        raise CorruptRecordError(f"truncated batch header: {available} of {HEADER_SIZE} bytes at position {pos}")
    header = unpack_header(buf, pos)
    if header.magic != MAGIC:
        raise CorruptRecordError(f"unsupported magic {header.magic} at position {pos} (only RecordBatch v2)")
    if header.batch_length < MIN_BATCH_LENGTH:
        raise CorruptRecordError(f"batch length {header.batch_length} at position {pos} is below {MIN_BATCH_LENGTH}")
    if header.batch_length + LOG_OVERHEAD > available:
        raise CorruptRecordError(
            f"truncated batch: {available} of {header.batch_length + LOG_OVERHEAD} bytes at position {pos}"
            f" (batch length {header.batch_length})"
        )
    if header.last_offset_delta < 0 or header.record_count < 0:
        raise CorruptRecordError(
            f"negative last offset delta {header.last_offset_delta} or record count {header.record_count}"
            f" at position {pos}"
        )
    # Masked integer, not `header.compression`: Compression(5..7) would raise ValueError, not CorruptRecordError.
    if (header.attributes & ATTR_COMPRESSION_MASK) > Compression.ZSTD:
        raise CorruptRecordError(
            f"unknown compression codec {header.attributes & ATTR_COMPRESSION_MASK} at position {pos}"
        )
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


def rebased(batch: bytes | bytearray | memoryview, base_offset: int) -> tuple[bytes, memoryview]:
    """The batch at the start of `batch` with the broker-assigned `base_offset` (a field the CRC does not cover), as
    two parts to write (`os.pwritev`) or join back to back: the new 8-byte field and a view of everything after it.

    `batch` itself is not modified, so it may be the bytes a request arrived in. Checked first: a whole v2 header is
    there, and the batch's last offset (base offset + last offset delta) fits in an int64.
    """
    available = len(batch)
    if available < HEADER_SIZE:
        raise CorruptRecordError(f"truncated batch header: {available} of {HEADER_SIZE} bytes")
    if batch[_MAGIC_AT] != MAGIC:
        raise CorruptRecordError(f"unsupported magic {batch[_MAGIC_AT]} (only RecordBatch v2)")
    (last_offset_delta,) = _INT32.unpack_from(batch, _LAST_OFFSET_DELTA_AT)
    if not 0 <= base_offset <= INT64_MAX - max(last_offset_delta, 0):
        raise ValueError(f"base offset {base_offset} (+ last offset delta {last_offset_delta}) is not a valid offset")
    return _BASE_OFFSET.pack(base_offset), memoryview(batch)[_BASE_OFFSET.size :]


def patch_log_append_time(buf: bytearray | memoryview, pos: int, header: BatchHeader, timestamp_ms: int) -> BatchHeader:
    """Stamp the batch at `pos` with the broker's clock, as Kafka does for `message.timestamp.type=LogAppendTime`.

    Sets the timestamp-type attribute bit and the max timestamp (readers then report it for every record), then
    recomputes the CRC; returns the updated header. Before writing anything it checks that `header` still describes
    the bytes at `pos` (its base offset may differ: the CRC does not cover it) and that the stored CRC is correct;
    recomputing the CRC of a corrupt batch would make the corruption look valid.
    """
    if not INT64_MIN <= timestamp_ms <= INT64_MAX:
        raise ValueError(f"timestamp {timestamp_ms} does not fit in an int64")
    current = read_header(buf, pos)
    if current[1:] != header[1:]:
        raise ValueError(f"the header passed does not describe the batch at position {pos}")
    verify_crc(buf, pos, current)
    attributes = current.attributes | ATTR_LOG_APPEND_TIME
    _ATTRIBUTES.pack_into(buf, pos + _ATTRIBUTES_AT, attributes)
    _INT64.pack_into(buf, pos + _MAX_TIMESTAMP_AT, timestamp_ms)
    crc = crc32c(memoryview(buf)[pos + CRC_START : pos + current.size])
    _CRC.pack_into(buf, pos + _CRC_AT, crc)
    return current._replace(attributes=attributes, max_timestamp=timestamp_ms, crc=crc)
