"""The records inside a batch: building a batch from records, and decoding a batch's records, with fast paths.

Each record: varint length, int8 attributes, varlong timestamp delta, varint offset delta, varint key length + key
(-1 = null), varint value length + value, varint header count, then per header varint key length + UTF-8 key and
varint value length + value (-1 = null). Varints are zigzag-encoded, as in protobuf, at most 10 bytes (int64).

Encoding (`build_batch`) and decoding (`iter_records`, `decode_columns`) each have a fast path for the common record
shape (no headers, small lengths) and a reference implementation (`encode_record`, `_decode_record`) that handles
every shape and gives the precise error: the encoder's fast path is byte-identical to the reference (a table of
precomputed varints built with `encode_varint` itself), and the decoder's reads optimistically and hands anything
it cannot prove well-formed to the strict decoder. Compression of the body is `compression.py`'s.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from itertools import repeat
from typing import NamedTuple, cast

from kafkalite.errors import CorruptRecordError
from kafkalite.protocol.checksum import crc32c
from kafkalite.protocol.records.batch import (
    ATTR_LOG_APPEND_TIME,
    ATTR_TRANSACTIONAL,
    HEADER_SIZE,
    INT64_MAX,
    INT64_MIN,
    LOG_OVERHEAD,
    MAGIC,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    BatchHeader,
    Compression,
    read_header,
)
from kafkalite.protocol.records.compression import compress, decompress

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
    transactional: bool = False,
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
    attributes |= ATTR_TRANSACTIONAL if transactional else 0
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
