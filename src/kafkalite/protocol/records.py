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
varint value length + value (-1 = null). Varints are zigzag-encoded, as in protobuf, at most 10 bytes (int64).

Compression (attribute bits 0-2) covers everything after byte 61, as one stream, in the format Kafka clients use:

- gzip (1): an RFC 1952 gzip stream; concatenated members are accepted.
- snappy (2): Java clients write snappy-java's "xerial" framing: the 16-byte header ``\\x82SNAPPY\\x00`` + int32
  version + int32 compatible version, then blocks of int32 big-endian length + one raw snappy block (each at most
  32 KiB uncompressed). librdkafka writes one raw snappy block, no framing. Java's reader accepts both, and so does
  `decompress`; `compress` writes the xerial framing, as Java clients do.
- lz4 (3): the LZ4 *frame* format with independent blocks (KIP-57: Java's reader refuses linked blocks).
- zstd (4): standard zstd frames. librdkafka's frames may omit the content size; those decode too.

Invariants: the broker reads only the 61-byte header (`read_header`) and checks the CRC; it rewrites only the
base offset and, for LogAppendTime topics, the timestamp type and max timestamp (then the CRC). Everything that fails
a check raises `CorruptRecordError` with the reason, before any byte is changed; a patch never recomputes the CRC of
a batch whose stored CRC is already wrong, so corruption is never laundered into a "valid" batch.

Decompression bombs: a snappy body declares its uncompressed size, so it is refused above `MAX_DECOMPRESSED_BYTES`
before anything is allocated. cramjam has no bounded-output API for gzip, lz4 and zstd (`output_len` preallocates,
it does not limit; its streaming decompressors want the whole input at once), so those are bounded only by their
format: about 1032x the input for gzip, about 255x for lz4, tens of thousands x for zstd. The broker never
decompresses (batches stay opaque), so only a consumer that decodes a hostile batch is exposed.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from enum import IntEnum
from itertools import repeat
from typing import NamedTuple, cast

import cramjam
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

MAX_DECOMPRESSED_BYTES = 1 << 30

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


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Parse the header of the batch at `pos`; check it is whole in `buf` and that its magic is 2.

    The CRC is not checked here (see `verify_crc`): a caller that only needs offsets pays for 61 bytes, not the batch.
    This is on the produce path, so it is one `unpack_from` and a few integer comparisons, no per-record work.
    """
    available = len(buf) - pos
    if available < HEADER_SIZE:
        raise CorruptRecordError(f"truncated batch header: {available} of {HEADER_SIZE} bytes at position {pos}")
    header = BatchHeader._make(_HEADER.unpack_from(buf, pos))
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


def patch_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    """Write the broker-assigned base offset into the batch at `pos` (the CRC does not cover it).

    Checked first, so a refusal writes nothing: a whole v2 header is at `pos`, and the batch's last offset
    (base offset + last offset delta) fits in an int64.
    """
    available = len(buf) - pos
    if pos < 0 or available < HEADER_SIZE:
        raise CorruptRecordError(f"truncated batch header: {available} of {HEADER_SIZE} bytes at position {pos}")
    if buf[pos + _MAGIC_AT] != MAGIC:
        raise CorruptRecordError(f"unsupported magic {buf[pos + _MAGIC_AT]} at position {pos} (only RecordBatch v2)")
    (last_offset_delta,) = _INT32.unpack_from(buf, pos + _LAST_OFFSET_DELTA_AT)
    if not 0 <= base_offset <= INT64_MAX - max(last_offset_delta, 0):
        raise ValueError(f"base offset {base_offset} (+ last offset delta {last_offset_delta}) is not a valid offset")
    _BASE_OFFSET.pack_into(buf, pos, base_offset)


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


# --- records inside a batch -------------------------------------------------------------------------------------


# Record and RecordToWrite are NamedTuples, not dataclasses: one is made per record on the hot paths, and a frozen
# dataclass costs several times more to create (each field goes through object.__setattr__). They stay immutable
# and keep their field names; `build_batch` unpacks RecordToWrite positionally.


class Record(NamedTuple):
    """One record as a consumer sees it: absolute offset and timestamp, key, value and headers."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


class RecordToWrite(NamedTuple):
    """One record a producer hands to `build_batch`; timestamp None means 'now' as the caller defines it."""

    value: bytes | None
    key: bytes | None = None
    headers: Sequence[tuple[str, bytes | None]] = ()
    timestamp: int | None = None


def encode_varint(value: int) -> bytes:
    """Zigzag varint of a signed 64-bit value, as Kafka's record fields use: 1 to 10 bytes."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"varint value {value} does not fit in an int64")
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while zigzag > 0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def decode_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Decode a zigzag varint at `pos`; return (value, next position). At most 10 bytes, value within int64."""
    return _read_varint(buf, pos, len(buf))


def _read_varint(buf: bytes | bytearray | memoryview, pos: int, limit: int) -> tuple[int, int]:
    """`decode_varint` that may not read at or past `limit` (the end of the enclosing record)."""
    result = 0
    shift = 0
    while True:
        if pos >= limit:
            raise CorruptRecordError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
        if shift >= 70:
            raise CorruptRecordError("varint longer than 10 bytes")
    if result >> 64:
        raise CorruptRecordError("varint overflows 64 bits")
    return (result >> 1) ^ -(result & 1), pos


# Every varint of a value in [0, _SMALL) is one or two bytes, precomputed: offset deltas, timestamp deltas of 0, and
# the lengths of records, keys and values below 8 KiB are all table lookups on the encode path. The table is built
# with `encode_varint` itself, so a lookup is byte-identical to encoding (about 300 KB, once per process).
_SMALL = 1 << 13
_SMALL_VARINTS: tuple[bytes, ...] = tuple(encode_varint(value) for value in range(_SMALL))
_SMALL_VARINT_SIZES: tuple[int, ...] = tuple(map(len, _SMALL_VARINTS))
_NULL = encode_varint(-1)


def _encode_bytes(data: bytes | None) -> bytes:
    if data is None:
        return encode_varint(-1)
    return encode_varint(len(data)) + data


def encode_record(offset_delta: int, timestamp_delta: int, record: RecordToWrite) -> bytes:
    """Encode one record (length prefix included) as it appears in a batch body."""
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
    stamps = [record[3] for record in records]
    if stamps.count(None) == len(stamps):  # the usual case: every record is stamped `now_ms`
        base_timestamp = max_timestamp = now_ms
    else:
        timestamps = [now_ms if ts is None else ts for ts in stamps]
        base_timestamp, max_timestamp = min(timestamps), max(timestamps)
    body = compress(compression, _encode_records(records, now_ms, base_timestamp))
    attributes = int(compression) | (ATTR_LOG_APPEND_TIME if log_append_time else 0)
    after_crc = (
        struct.pack(
            ">hiqqqhii",
            attributes,
            len(records) - 1,
            base_timestamp,
            max_timestamp,
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


def _encode_records(records: Sequence[RecordToWrite], now_ms: int, base_timestamp: int) -> bytes:
    """The batch body: every record, length-prefixed, byte-identical to joining `encode_record` over them.

    Fast path, per record: no headers, a non-null value, and offset delta, timestamp delta, value length and record
    length all in [0, _SMALL), so each varint is a table lookup and the record is appended as pieces to one list
    joined once (no intermediate bytearray or bytes per record). The key's encoding is reused while consecutive
    records share the same key object. Anything else goes through `encode_record`, the reference encoder.
    """
    small, sizes = _SMALL_VARINTS, _SMALL_VARINT_SIZES
    parts: list[bytes] = []
    append = parts.append
    last_key: object = parts  # a sentinel no record's key can be
    key_piece = _NULL
    for delta, record in enumerate(records):
        value, key, headers, timestamp = record
        ts_delta = (now_ms if timestamp is None else timestamp) - base_timestamp
        if key is not last_key:
            last_key, key_piece = key, _encode_bytes(key)
        if value is not None and not headers and delta < _SMALL and 0 <= ts_delta < _SMALL:
            size = len(value)
            if size < _SMALL:
                # attributes byte + timestamp delta + offset delta + key + value length + value + header count 0
                length = 2 + sizes[ts_delta] + sizes[delta] + len(key_piece) + sizes[size] + size
                if length < _SMALL:
                    parts += (
                        small[length],
                        b"\x00",
                        small[ts_delta],
                        small[delta],
                        key_piece,
                        small[size],
                        value,
                        b"\x00",
                    )
                    continue
        append(encode_record(delta, ts_delta, record))
    return b"".join(parts)


class RecordColumns(NamedTuple):
    """The records of one batch as parallel lists (record i is offsets[i], timestamps[i], ...).

    Columns let a caller build its own per-record objects in one C-level pass (`map` over `zip`) instead of
    converting `Record`s: the consumer makes `Message`s straight from them.
    """

    offsets: list[int]
    timestamps: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    headers: list[tuple[tuple[str, bytes | None], ...]]


def iter_records(batch: bytes | bytearray | memoryview, pos: int = 0) -> Iterator[Record]:
    """Decode the records of the batch at `pos` (decompressing as needed); validate every length on the way.

    The CRC is not checked here (the broker checked it on append; see `verify_crc`). Every byte of the
    (decompressed) body must belong to exactly `record_count` records: anything left over raises. The whole batch
    is decoded before the first record is yielded, so a corrupt batch yields nothing.
    """
    columns = decode_columns(batch, pos)
    # tuple.__new__ is what a NamedTuple's own __new__ calls, minus the Python-level frame: each zip item holds
    # exactly the five fields in Record's order.
    yield from cast(Iterator[Record], map(tuple.__new__, repeat(Record), zip(*columns, strict=True)))


def decode_columns(batch: bytes | bytearray | memoryview, pos: int = 0) -> RecordColumns:
    """`iter_records` as columns: the same records, the same validation, the same errors."""
    header = read_header(batch, pos)
    body = bytes(memoryview(batch)[pos + HEADER_SIZE : pos + header.size])
    body = decompress(header.compression, body)
    offsets: list[int] = []
    timestamps: list[int] = []
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    with_headers: list[tuple[int, tuple[tuple[str, bytes | None], ...]]] = []  # (index, headers), if not ()
    add_offset, add_timestamp, add_key, add_value = offsets.append, timestamps.append, keys.append, values.append
    base_offset = header.base_offset
    base_timestamp = header.base_timestamp
    cursor, end = 0, len(body)
    for index in range(header.record_count):
        # Fast path: a record whose lengths and offset delta are 1- or 2-byte varints, whose timestamp delta is a
        # 1-byte varint, whose deltas are not negative, whose key is null or under 64 bytes and which has no
        # headers. It reads optimistically and accepts the record only if its fields end exactly at the length
        # prefix's end with a header count of 0, which proves every byte read was inside the record. Any other
        # shape, and anything malformed, is decoded again from `start` by `_decode_record`, the strict decoder,
        # which decodes it or raises the precise error. Zigzag: an even varint is the value times 2.
        start = cursor
        try:
            byte = body[cursor]
            if byte < 0x80:
                length = byte
                cursor += 1
            else:
                length = (byte & 0x7F) | (body[cursor + 1] << 7)
                cursor += 2
            record_end = cursor + (length >> 1)
            ts_delta = body[cursor + 1]  # after the attributes byte, unused by magic 2
            byte = body[cursor + 2]
            if byte < 0x80:
                offset_delta = byte
                cursor += 3
            else:
                offset_delta = (byte & 0x7F) | (body[cursor + 3] << 7)
                cursor += 4
            byte = body[cursor]
            if byte == 1:
                key = None
                cursor += 1
            else:
                key_end = cursor + 1 + (byte >> 1)
                key = body[cursor + 1 : key_end]
                cursor = key_end
                if byte & 0x81:  # 0x80: a key of 64 bytes or more; 0x01: negative, not null
                    raise IndexError
            byte = body[cursor]
            if byte < 0x80:
                cursor += 1
            else:
                byte = (byte & 0x7F) | (body[cursor + 1] << 7)
                cursor += 2
            value_end = cursor + (byte >> 1)
            if (
                (length | byte | offset_delta | ts_delta) & 1  # negative (a null value's -1 included)
                or length >= 0x4000  # the second byte had its continuation bit: a third byte follows
                or byte >= 0x4000
                or ts_delta >= 0x80
                or offset_delta >= 0x4000
                or value_end + 1 != record_end
                or record_end > end
                or body[value_end]
            ):
                raise IndexError
            add_value(body[cursor:value_end])
            add_key(key)
            add_offset(base_offset + (offset_delta >> 1))
            add_timestamp(base_timestamp + (ts_delta >> 1))
            cursor = record_end
        except IndexError:
            try:
                record, cursor = _decode_record(body, start, end, header)
            except CorruptRecordError as exc:
                raise CorruptRecordError(f"record {index} of the batch at position {pos}: {exc}") from None
            add_offset(record.offset)
            add_timestamp(record.timestamp)
            add_key(record.key)
            add_value(record.value)
            if record.headers:
                with_headers.append((index, record.headers))
    if cursor != end:
        raise CorruptRecordError(
            f"{end - cursor} trailing bytes after the last of {header.record_count} records of the batch at"
            f" position {pos}"
        )
    if header.log_append_time:  # every record carries the broker's stamp, whatever its delta says
        timestamps = [header.max_timestamp] * len(offsets)
    headers: list[tuple[tuple[str, bytes | None], ...]] = [()] * len(offsets)
    for index, record_headers in with_headers:
        headers[index] = record_headers
    return RecordColumns(offsets, timestamps, keys, values, headers)


def _decode_record(body: bytes, cursor: int, end: int, header: BatchHeader) -> tuple[Record, int]:
    length, cursor = _read_varint(body, cursor, end)
    record_end = cursor + length
    if length < 0 or record_end > end:
        raise CorruptRecordError(f"record length {length} overruns its batch ({end - cursor} bytes left)")
    start = cursor
    if cursor >= record_end:
        raise CorruptRecordError("record too short for its attributes byte")
    cursor += 1  # attributes: unused by magic 2
    ts_delta, cursor = _read_varint(body, cursor, record_end)
    offset_delta, cursor = _read_varint(body, cursor, record_end)
    key, cursor = _decode_bytes(body, cursor, record_end)
    value, cursor = _decode_bytes(body, cursor, record_end)
    header_count, cursor = _read_varint(body, cursor, record_end)
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
        raise CorruptRecordError(f"record declares {length} bytes but its fields use {cursor - start}")
    timestamp = header.max_timestamp if header.log_append_time else header.base_timestamp + ts_delta
    return Record(header.base_offset + offset_delta, timestamp, key, value, tuple(headers)), cursor


def _decode_bytes(buf: bytes, pos: int, limit: int) -> tuple[bytes | None, int]:
    length, pos = _read_varint(buf, pos, limit)
    if length == -1:
        return None, pos
    if length < 0 or pos + length > limit:
        raise CorruptRecordError(f"field length {length} overruns its record")
    return buf[pos : pos + length], pos + length


# --- compression ------------------------------------------------------------------------------------------------

# snappy-java's stream header: marker byte, "SNAPPY", NUL, then int32 version 1 and int32 minimum compatible version 1.
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK_SIZE = 32 * 1024  # snappy-java's default: uncompressed bytes per block

# gzip's and zstd's own default levels, which are also Kafka's producer defaults. lz4 uses its fast (non-HC)
# compressor: Kafka's default lz4 level 9 means LZ4HC, which trades much more CPU for a little size.
_GZIP_LEVEL = 6
_ZSTD_LEVEL = 3


def compress(codec: Compression, data: bytes) -> bytes:
    """Compress a batch body with `codec` (identity for NONE), in the framing Java Kafka clients write."""
    if codec == Compression.NONE:
        return data
    if codec == Compression.GZIP:
        return bytes(cramjam.gzip.compress(data, level=_GZIP_LEVEL))
    if codec == Compression.SNAPPY:
        return _xerial_compress(data)
    if codec == Compression.LZ4:
        # Independent blocks and no content checksum, as Java's KafkaLZ4BlockOutputStream writes (KIP-57).
        compressor = cramjam.lz4.Compressor(content_checksum=False, block_linked=False)
        compressor.compress(data)
        return bytes(compressor.finish())
    if codec == Compression.ZSTD:
        return bytes(cramjam.zstd.compress(data, level=_ZSTD_LEVEL))
    raise ValueError(f"unknown compression codec {codec}")


def decompress(codec: Compression, data: bytes) -> bytes:
    """Decompress a batch body written with `codec`; malformed input raises `CorruptRecordError`.

    Accepts what any Kafka client writes: xerial-framed or raw snappy, LZ4 frames with linked or independent
    blocks, zstd frames with or without a content size, multi-member gzip.
    """
    if codec == Compression.NONE:
        return data
    try:
        if codec == Compression.GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == Compression.SNAPPY:
            return _snappy_decompress(data)
        if codec == Compression.LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == Compression.ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except (cramjam.DecompressionError, OSError, ValueError) as exc:
        raise CorruptRecordError(f"{Compression(codec).name} decompression failed: {exc}") from None
    raise CorruptRecordError(f"unknown compression codec {codec}")


def _xerial_compress(data: bytes) -> bytes:
    view = memoryview(data)
    out = [_XERIAL_HEADER]
    for start in range(0, len(data), _XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK_SIZE]))
        out.append(_INT32.pack(len(block)))
        out.append(block)
    return b"".join(out)


def _snappy_decompress(data: bytes) -> bytes:
    """Xerial-framed or raw snappy; each block's declared size is checked before anything is decompressed.

    Raises ValueError (or cramjam's error), which `decompress` turns into `CorruptRecordError`.
    """
    if not data.startswith(_XERIAL_MAGIC):
        _check_decompressed_size(cramjam.snappy.decompress_raw_len(data))
        return bytes(cramjam.snappy.decompress_raw(data))
    view = memoryview(data)
    blocks: list[memoryview] = []
    total = 0
    pos, end = 0, len(data)
    while pos < end:
        # The header again: a concatenation of streams, which snappy-java reads too. No block length can look like
        # it (0x82 as the first byte would be a negative int32). Version fields are ignored, as Java and
        # kafka-python do: some writers put them little-endian.
        if data.startswith(_XERIAL_MAGIC, pos):
            if end - pos < len(_XERIAL_HEADER):
                raise ValueError(f"truncated xerial snappy header at byte {pos}")
            pos += len(_XERIAL_HEADER)
            continue
        if end - pos < 4:
            raise ValueError(f"truncated xerial snappy block length at byte {pos}")
        (length,) = _INT32.unpack_from(data, pos)
        pos += 4
        if length < 0 or length > end - pos:
            raise ValueError(f"xerial snappy block of {length} bytes at byte {pos} overruns the stream")
        block = view[pos : pos + length]
        total += cramjam.snappy.decompress_raw_len(block)
        _check_decompressed_size(total)
        blocks.append(block)
        pos += length
    return b"".join([bytes(cramjam.snappy.decompress_raw(block)) for block in blocks])


def _check_decompressed_size(size: int) -> None:
    if size > MAX_DECOMPRESSED_BYTES:
        raise ValueError(f"decompressed size {size} exceeds the limit of {MAX_DECOMPRESSED_BYTES} bytes")
