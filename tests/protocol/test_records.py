"""RecordBatch v2 codec: round trips that consume every byte, decoders fed one byte at a time and with trailing
bytes, and every kind of corruption raising `CorruptRecordError` with a reason and without changing a byte."""

from __future__ import annotations

import gzip
import struct

import cramjam
import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.errors import CorruptRecordError
from kafkalite.protocol import records
from kafkalite.protocol.records import (
    HEADER_SIZE,
    INT64_MAX,
    INT64_MIN,
    BatchHeader,
    Compression,
    Record,
    RecordToWrite,
    build_batch,
    compress,
    decode_varint,
    decompress,
    encode_record,
    encode_varint,
    iter_records,
    patch_log_append_time,
    read_batches,
    read_header,
    rebased,
    valid_prefix,
    verify_crc,
)

NOW = 1_700_000_000_000
XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)

# --- helpers ------------------------------------------------------------------------------------------------------


def raw_batch(
    body: bytes,
    *,
    record_count: int,
    last_offset_delta: int | None = None,
    attributes: int = 0,
    base_offset: int = 0,
    base_timestamp: int = NOW,
    max_timestamp: int = NOW,
) -> bytes:
    """A batch around an arbitrary (possibly malformed) body, with a correct CRC, so only the body is at fault."""
    after_crc = (
        struct.pack(
            ">hiqqqhii",
            attributes,
            record_count - 1 if last_offset_delta is None else last_offset_delta,
            base_timestamp,
            max_timestamp,
            -1,
            -1,
            -1,
            record_count,
        )
        + body
    )
    return struct.pack(">qiibI", base_offset, len(after_crc) + 9, -1, 2, crc32c(after_crc)) + after_crc


def with_header_field(batch: bytes, fmt: str, at: int, value: int, *, fix_crc: bool = True) -> bytes:
    """`batch` with one header field overwritten (and the CRC recomputed, unless told not to)."""
    out = bytearray(batch)
    struct.pack_into(fmt, out, at, value)
    if fix_crc:
        struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


def sample_batch(compression: Compression = Compression.NONE, base_offset: int = 0) -> bytes:
    return build_batch(
        [
            RecordToWrite(b"value-1", b"key-1", [("trace", b"abc"), ("empty", None)], NOW),
            RecordToWrite(None, None, (), NOW + 7),
            RecordToWrite(b"x" * 300, b"", (), NOW - 3),
        ],
        now_ms=NOW,
        base_offset=base_offset,
        compression=compression,
    )


def run(fn: object, *args: object) -> None:
    """Call `fn`, draining the result if it is a generator (`iter_records` raises while iterating)."""
    assert callable(fn)
    result = fn(*args)
    if hasattr(result, "__next__"):
        list(result)


def corrupt_message(fn: object, *args: object) -> str:
    with pytest.raises(CorruptRecordError) as info:
        run(fn, *args)
    return str(info.value)


# --- varints ------------------------------------------------------------------------------------------------------


@given(st.integers(INT64_MIN, INT64_MAX))
def test_varint_round_trips_the_whole_int64_range(value: int) -> None:
    encoded = encode_varint(value)
    assert 1 <= len(encoded) <= 10
    assert decode_varint(encoded, 0) == (value, len(encoded))
    assert decode_varint(b"\xff" + encoded + b"\x00", 1) == (value, len(encoded) + 1)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (63, b"\x7e"), (-64, b"\x7f"), (64, b"\x80\x01"), (300, b"\xd8\x04")],
)
def test_varint_known_encodings(value: int, encoded: bytes) -> None:
    assert encode_varint(value) == encoded
    assert decode_varint(encoded, 0) == (value, len(encoded))


@pytest.mark.parametrize("value", [INT64_MIN, INT64_MAX])
def test_varint_extremes_take_ten_bytes(value: int) -> None:
    assert len(encode_varint(value)) == 10


@pytest.mark.parametrize("value", [INT64_MIN - 1, INT64_MAX + 1])
def test_varint_refuses_to_encode_outside_int64(value: int) -> None:
    with pytest.raises(ValueError, match="int64"):
        encode_varint(value)


@pytest.mark.parametrize(
    ("encoded", "reason"),
    [
        (b"", "truncated varint"),
        (b"\x80", "truncated varint"),
        (b"\xff" * 9, "truncated varint"),
        (b"\xff" * 10 + b"\x01", "longer than 10 bytes"),
        (b"\xff" * 9 + b"\x7f", "overflows 64 bits"),
        (b"\x80" * 9 + b"\x02", "overflows 64 bits"),
    ],
)
def test_bad_varints_raise(encoded: bytes, reason: str) -> None:
    with pytest.raises(CorruptRecordError, match=reason):
        decode_varint(encoded, 0)


# --- round trips --------------------------------------------------------------------------------------------------

optional_bytes = st.none() | st.binary(max_size=64)
header_names = st.text(max_size=12)
records_to_write = st.builds(
    RecordToWrite,
    value=optional_bytes | st.binary(min_size=1000, max_size=3000),
    key=optional_bytes,
    headers=st.lists(st.tuples(header_names, optional_bytes), max_size=4),
    timestamp=st.none() | st.integers(0, 1 << 42),
)
codecs = st.sampled_from(list(Compression))


@settings(max_examples=200, deadline=None)
@given(
    batch_records=st.lists(records_to_write, min_size=1, max_size=20),
    compression=codecs,
    base_offset=st.integers(0, 1 << 40),
    producer=st.tuples(st.integers(-1, 1 << 40), st.integers(-1, 32767), st.integers(-1, 1 << 30)),
)
def test_batches_round_trip_and_consume_every_byte(
    batch_records: list[RecordToWrite], compression: Compression, base_offset: int, producer: tuple[int, int, int]
) -> None:
    producer_id, producer_epoch, base_sequence = producer
    batch = build_batch(
        batch_records,
        now_ms=NOW,
        base_offset=base_offset,
        compression=compression,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )
    timestamps = [NOW if r.timestamp is None else r.timestamp for r in batch_records]

    [(pos, header)] = read_batches(batch)
    assert pos == 0
    assert header.size == len(batch)
    assert header.compression is compression
    assert header.record_count == len(batch_records)
    assert header.last_offset == base_offset + len(batch_records) - 1
    assert (header.base_timestamp, header.max_timestamp) == (min(timestamps), max(timestamps))
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == producer
    assert valid_prefix(batch) == (len(batch), [header], None)

    expected = [
        Record(base_offset + i, ts, r.key, r.value, tuple(r.headers))
        for i, (ts, r) in enumerate(zip(timestamps, batch_records, strict=True))
    ]
    assert list(iter_records(batch)) == expected


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(records_to_write, min_size=1, max_size=3), min_size=1, max_size=5), codecs)
def test_concatenated_batches_split_at_their_boundaries(batches: list[list[RecordToWrite]], codec: Compression) -> None:
    encoded = [build_batch(b, now_ms=NOW, base_offset=10 * i, compression=codec) for i, b in enumerate(batches)]
    buf = b"".join(encoded)
    found = read_batches(buf)
    positions = [sum(len(e) for e in encoded[:i]) for i in range(len(encoded))]
    assert [pos for pos, _ in found] == positions
    assert [h.size for _, h in found] == [len(e) for e in encoded]
    for (pos, _), records_in in zip(found, batches, strict=True):
        assert len(list(iter_records(buf, pos))) == len(records_in)


@settings(deadline=None)
@given(codecs, st.binary(max_size=100_000) | st.binary(max_size=50).map(lambda b: b * 2000))
def test_compress_round_trips(codec: Compression, data: bytes) -> None:
    assert decompress(codec, compress(codec, data)) == data


def test_build_batch_needs_a_record() -> None:
    with pytest.raises(ValueError, match="at least one record"):
        build_batch([], now_ms=NOW)


def test_records_without_a_timestamp_get_now() -> None:
    batch = build_batch([RecordToWrite(b"a"), RecordToWrite(b"b", timestamp=NOW + 5)], now_ms=NOW)
    assert [r.timestamp for r in iter_records(batch)] == [NOW, NOW + 5]


# --- decoders fed one byte at a time, and with trailing bytes -----------------------------------------------------


@pytest.mark.parametrize("codec", list(Compression))
def test_every_strict_prefix_is_refused_and_valid_prefix_keeps_whole_batches(codec: Compression) -> None:
    first, second = sample_batch(codec), sample_batch(codec, base_offset=3)
    buf = first + second
    whole = [read_header(buf, 0), read_header(buf, len(first))]
    for cut in range(len(buf)):
        prefix = buf[:cut]
        if cut < len(first):
            with pytest.raises(CorruptRecordError, match="truncated"):
                read_header(prefix)
        if cut not in (0, len(first)):
            with pytest.raises(CorruptRecordError, match="truncated"):
                read_batches(prefix)
        end, headers, reason = valid_prefix(prefix)
        if cut < len(first):
            assert (end, headers) == (0, [])
        else:
            assert (end, headers) == (len(first), whole[:1])
        assert (reason is None) == (cut in (0, len(first)))
        if reason is not None:
            assert "truncated" in reason
    assert valid_prefix(buf) == (len(buf), whole, None)


@given(st.binary(min_size=1, max_size=200))
def test_trailing_garbage_is_refused_and_valid_prefix_stops_at_the_boundary(garbage: bytes) -> None:
    batch = sample_batch()
    with pytest.raises(CorruptRecordError):
        read_batches(batch + garbage)
    end, headers, reason = valid_prefix(batch + garbage)
    assert (end, headers) == (len(batch), [read_header(batch)])
    assert reason


def test_valid_prefix_from_a_position() -> None:
    batch = sample_batch()
    assert valid_prefix(batch + batch, len(batch)) == (2 * len(batch), [read_header(batch)], None)


# --- header corruption --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("magic", [0, 1, 3, 255])
def test_wrong_magic(magic: int) -> None:
    batch = with_header_field(sample_batch(), ">B", 16, magic, fix_crc=False)
    assert "unsupported magic" in corrupt_message(read_header, batch)
    assert "unsupported magic" in corrupt_message(read_batches, batch)


@pytest.mark.parametrize("length", [0x7FFFFFFF, 1 << 30])
def test_batch_length_beyond_the_buffer(length: int) -> None:
    message = corrupt_message(read_header, with_header_field(sample_batch(), ">i", 8, length, fix_crc=False))
    assert "truncated batch" in message
    assert str(length) in message


@pytest.mark.parametrize("length", [-(1 << 31), -1, 0, 48])
def test_batch_length_below_the_header(length: int) -> None:
    batch = with_header_field(sample_batch(), ">i", 8, length, fix_crc=False)
    assert "below" in corrupt_message(read_header, batch)


@pytest.mark.parametrize(("at", "value"), [(23, -1), (57, -1), (57, -(1 << 31)), (23, -(1 << 31))])
def test_negative_counts(at: int, value: int) -> None:
    assert "negative" in corrupt_message(read_header, with_header_field(sample_batch(), ">i", at, value))


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codec_is_corruption_not_a_value_error(codec: int) -> None:
    batch = with_header_field(sample_batch(), ">h", 21, codec)
    assert "unknown compression codec" in corrupt_message(read_header, batch)
    assert "unknown compression codec" in corrupt_message(iter_records, batch)


@pytest.mark.parametrize("codec", list(Compression))
def test_any_single_bit_flip_in_the_crc_region_is_caught(codec: Compression) -> None:
    batch = sample_batch(codec)
    header = read_header(batch)
    for bit in range(17 * 8, len(batch) * 8):  # the CRC field itself and everything it covers
        flipped = bytearray(batch)
        flipped[bit // 8] ^= 1 << (bit % 8)
        if bit >= 21 * 8:
            with pytest.raises(CorruptRecordError, match="CRC mismatch"):
                verify_crc(flipped, 0, header)
        with pytest.raises(CorruptRecordError):
            read_batches(flipped)
        assert valid_prefix(flipped)[:2] == (0, [])


def test_crc_mismatch_message_names_both_values() -> None:
    batch = with_header_field(sample_batch(), ">I", 17, 0xDEADBEEF, fix_crc=False)
    message = corrupt_message(read_batches, batch)
    assert "0xdeadbeef" in message
    assert f"{crc32c(batch[21:]):#010x}" in message


def test_read_batches_can_skip_the_crc() -> None:
    batch = with_header_field(sample_batch(), ">I", 17, 0, fix_crc=False)
    assert len(read_batches(batch, check_crc=False)) == 1


# --- record corruption (the batch CRC is correct: only the body is at fault) --------------------------------------

GOOD_RECORD = encode_record(0, 0, RecordToWrite(b"v", b"k", [("h", b"x")]))


@pytest.mark.parametrize(
    ("body", "count", "reason"),
    [
        (b"\xff" * 10 + b"\x01", 1, "longer than 10 bytes"),
        (encode_varint(500) + GOOD_RECORD[1:], 1, "overruns its batch"),
        (encode_varint(-2) + GOOD_RECORD[1:], 1, "record length -2"),
        (encode_varint(0), 1, "too short"),
        (GOOD_RECORD, 2, "truncated varint"),
        (GOOD_RECORD + GOOD_RECORD, 1, "trailing bytes"),
        (GOOD_RECORD + b"\x00", 1, "trailing bytes"),
        (b"\x00", 0, "trailing bytes"),
        # a record whose fields end before its declared length
        (encode_varint(len(GOOD_RECORD)) + GOOD_RECORD[1:] + b"\x00", 1, "declares"),
        # key length running past the record
        (encode_varint(5) + b"\x00\x00\x00" + encode_varint(100) + b"k", 1, "overruns its record"),
        (encode_varint(4) + b"\x00\x00\x00" + encode_varint(-5), 1, "field length -5"),
        # a varint that would read into the next record is cut at the record's end
        (encode_varint(3) + b"\x00\x00\x80" + GOOD_RECORD, 2, "truncated varint"),
        (encode_varint(6) + b"\x00\x00\x00\x01\x01" + encode_varint(-1), 1, "negative header count"),
        (encode_varint(8) + b"\x00\x00\x00\x01\x01\x02\x01\x01", 1, "null key"),
        (encode_varint(9) + b"\x00\x00\x00\x01\x01\x02\x02\xff\x01", 1, "not UTF-8"),
    ],
)
def test_malformed_records(body: bytes, count: int, reason: str) -> None:
    message = corrupt_message(iter_records, raw_batch(body, record_count=count, last_offset_delta=max(count - 1, 0)))
    assert reason in message


def test_record_errors_name_the_record() -> None:
    body = GOOD_RECORD + encode_varint(500)
    assert "record 1 of the batch at position 0" in corrupt_message(iter_records, raw_batch(body, record_count=2))


def test_an_empty_batch_is_valid() -> None:
    assert list(iter_records(raw_batch(b"", record_count=0, last_offset_delta=0))) == []


# --- compression --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", [c for c in Compression if c is not Compression.NONE])
@pytest.mark.parametrize("body", [b"", b"definitely not compressed data", b"\x00" * 64])
def test_garbage_does_not_decompress(codec: Compression, body: bytes) -> None:
    message = corrupt_message(iter_records, raw_batch(body, record_count=1, attributes=codec))
    assert f"{codec.name} decompression failed" in message


@pytest.mark.parametrize("codec", [c for c in Compression if c is not Compression.NONE])
def test_truncated_compressed_bodies_do_not_decompress(codec: Compression) -> None:
    compressed = compress(codec, GOOD_RECORD * 5000)
    for cut in (1, len(compressed) // 2, len(compressed) - 1):
        with pytest.raises(CorruptRecordError, match="decompression failed"):
            decompress(codec, compressed[:cut])


def test_snappy_is_written_with_xerial_framing_in_32k_blocks() -> None:
    data = bytes(range(256)) * 300  # 76800 bytes: three blocks
    framed = compress(Compression.SNAPPY, data)
    assert framed.startswith(XERIAL_HEADER)
    pos, blocks = 16, []
    while pos < len(framed):
        (length,) = struct.unpack_from(">i", framed, pos)
        blocks.append(bytes(cramjam.snappy.decompress_raw(framed[pos + 4 : pos + 4 + length])))
        pos += 4 + length
    assert pos == len(framed)
    assert [len(b) for b in blocks] == [32768, 32768, 11264]
    assert b"".join(blocks) == data


def test_raw_snappy_as_librdkafka_writes_it_is_accepted() -> None:
    body = GOOD_RECORD * 3
    batch = raw_batch(bytes(cramjam.snappy.compress_raw(body)), record_count=3, attributes=Compression.SNAPPY)
    assert [r.value for r in iter_records(batch)] == [b"v"] * 3


def test_xerial_variants_are_accepted() -> None:
    data = b"hello xerial " * 100
    block = bytes(cramjam.snappy.compress_raw(data))
    framed = struct.pack(">i", len(block)) + block
    little_endian_versions = b"\x82SNAPPY\x00" + struct.pack("<ii", 1, 1)  # seen from some non-Java writers
    assert decompress(Compression.SNAPPY, little_endian_versions + framed) == data
    assert decompress(Compression.SNAPPY, XERIAL_HEADER + framed + XERIAL_HEADER + framed) == data * 2
    assert decompress(Compression.SNAPPY, XERIAL_HEADER) == b""


@pytest.mark.parametrize(
    ("stream", "reason"),
    [
        (XERIAL_HEADER[:12], "truncated xerial snappy header"),
        (XERIAL_HEADER + b"\x00\x00", "truncated xerial snappy block length"),
        (XERIAL_HEADER + struct.pack(">i", 100) + b"abc", "overruns"),
        (XERIAL_HEADER + struct.pack(">i", -4) + b"abcd", "overruns"),
        (XERIAL_HEADER + struct.pack(">i", 0), "SNAPPY decompression failed"),
        (XERIAL_HEADER + struct.pack(">i", 3) + b"\xff\xff\xff", "SNAPPY decompression failed"),
    ],
)
def test_bad_xerial_streams(stream: bytes, reason: str) -> None:
    with pytest.raises(CorruptRecordError, match=reason) as info:
        decompress(Compression.SNAPPY, stream)
    assert "SNAPPY decompression failed" in str(info.value)


def test_snappy_declared_size_is_capped_before_decompressing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(records.compression, "MAX_DECOMPRESSED_BYTES", 1000)
    raw = bytes(cramjam.snappy.compress_raw(b"a" * 1001))
    for body in (raw, XERIAL_HEADER + struct.pack(">i", len(raw)) + raw):
        with pytest.raises(CorruptRecordError, match="exceeds the limit of 1000"):
            decompress(Compression.SNAPPY, body)
    assert decompress(Compression.SNAPPY, bytes(cramjam.snappy.compress_raw(b"a" * 1000))) == b"a" * 1000


def test_zstd_frames_without_a_content_size_decode() -> None:
    data = GOOD_RECORD * 1000
    streaming = cramjam.zstd.Compressor(level=3)  # streaming: the size is unknown up front, as with librdkafka
    streaming.compress(data)
    frame = bytes(streaming.finish())
    frame_header_descriptor = frame[4]
    assert frame_header_descriptor >> 6 == 0  # Frame_Content_Size_flag 0 ...
    assert not frame_header_descriptor & 0x20  # ... and not single-segment: no Frame_Content_Size field
    assert decompress(Compression.ZSTD, frame) == data
    assert decompress(Compression.ZSTD, frame + frame) == data * 2


def test_zstd_is_written_with_its_content_size() -> None:
    frame = compress(Compression.ZSTD, b"some data" * 50)
    assert frame[:4] == b"\x28\xb5\x2f\xfd"
    assert frame[4] >> 6 != 0 or frame[4] & 0x20


def test_lz4_is_written_as_a_frame_with_independent_blocks() -> None:
    frame = compress(Compression.LZ4, GOOD_RECORD * 10_000)
    assert frame[:4] == b"\x04\x22\x4d\x18"  # LZ4 frame magic (little-endian 0x184D2204)
    assert frame[4] >> 6 == 1  # frame version 01
    assert frame[4] & 0x20  # block independence (KIP-57)


def test_lz4_frames_with_linked_blocks_decode() -> None:
    data = bytes(range(256)) * 2000
    linked = cramjam.lz4.Compressor(block_linked=True)
    linked.compress(data)
    frame = bytes(linked.finish())
    assert not frame[4] & 0x20
    assert decompress(Compression.LZ4, frame) == data


def test_gzip_members_concatenated_decode() -> None:
    assert decompress(Compression.GZIP, gzip.compress(b"one") + gzip.compress(b"two")) == b"onetwo"


# --- patches ------------------------------------------------------------------------------------------------------


@given(st.integers(0, INT64_MAX - 2), codecs)
def test_rebased_keeps_the_crc_valid_and_leaves_the_batch_unchanged(base_offset: int, codec: Compression) -> None:
    batch = bytearray(sample_batch(codec))
    head, rest = rebased(batch, base_offset)
    assert rest.obj is batch  # a view of the caller's bytes, not a copy
    assert batch == sample_batch(codec)
    rewritten = head + bytes(rest)
    [(_, header)] = read_batches(rewritten)
    assert header.base_offset == base_offset
    assert [r.offset for r in iter_records(rewritten)] == [base_offset, base_offset + 1, base_offset + 2]


def test_rebased_takes_a_view_of_a_batch_inside_a_larger_buffer() -> None:
    batch = sample_batch()
    head, rest = rebased(memoryview(batch + batch)[len(batch) :], 42)
    assert [h.base_offset for _, h in read_batches(head + bytes(rest))] == [42]


@pytest.mark.parametrize(
    ("buf", "offset", "error", "reason"),
    [
        (sample_batch()[:60], 5, CorruptRecordError, "truncated batch header"),
        (sample_batch()[1:], 5, CorruptRecordError, "magic"),  # not at a batch boundary
        (with_header_field(sample_batch(), ">B", 16, 1, fix_crc=False), 5, CorruptRecordError, "magic"),
        (sample_batch(), -1, ValueError, "not a valid offset"),
        (sample_batch(), INT64_MAX - 1, ValueError, "not a valid offset"),  # last offset would overflow
        (sample_batch(), INT64_MAX + 1, ValueError, "not a valid offset"),
    ],
)
def test_rebased_refuses_a_bad_header_or_offset(buf: bytes, offset: int, error: type[Exception], reason: str) -> None:
    with pytest.raises(error, match=reason):
        rebased(buf, offset)


@given(st.integers(INT64_MIN, INT64_MAX), codecs)
def test_patch_log_append_time_stamps_every_record(timestamp: int, codec: Compression) -> None:
    batch = sample_batch(codec)
    buf = bytearray(batch + batch)
    second = read_header(buf, len(batch))
    patched = patch_log_append_time(buf, len(batch), second, timestamp)
    assert buf[: len(batch)] == batch  # the first batch is untouched
    assert patched == read_header(buf, len(batch))
    assert patched.log_append_time
    assert patched.max_timestamp == timestamp
    assert patched.base_timestamp == second.base_timestamp
    assert patched.compression is codec
    read_batches(buf)  # both CRCs valid
    assert [r.timestamp for r in iter_records(buf, len(batch))] == [timestamp] * 3


def test_patch_log_append_time_accepts_a_header_read_before_the_base_offset_was_patched() -> None:
    batch = sample_batch()
    header = read_header(batch)
    buf = bytearray(b"".join(rebased(batch, 100)))
    assert patch_log_append_time(buf, 0, header, NOW).base_offset == 100


def test_patch_log_append_time_refuses_a_corrupt_batch_instead_of_laundering_it() -> None:
    buf = bytearray(sample_batch())
    header = read_header(buf)
    buf[-1] ^= 0x01
    before = bytes(buf)
    with pytest.raises(CorruptRecordError, match="CRC mismatch"):
        patch_log_append_time(buf, 0, header, NOW)
    assert buf == before


@pytest.mark.parametrize(
    ("mutate", "timestamp", "error", "reason"),
    [
        (lambda b: b[:-1], NOW, CorruptRecordError, "truncated batch"),
        (lambda b: b[:30], NOW, CorruptRecordError, "truncated batch header"),
        (lambda b: with_header_field(b, ">q", 27, 5), NOW, ValueError, "does not describe"),  # stale header
        (lambda b: b, INT64_MAX + 1, ValueError, "int64"),
        (lambda b: b, INT64_MIN - 1, ValueError, "int64"),
    ],
)
def test_patch_log_append_time_refusals_change_nothing(
    mutate: object, timestamp: int, error: type[Exception], reason: str
) -> None:
    batch = sample_batch()
    header = read_header(batch)
    assert callable(mutate)
    before = mutate(batch)
    buf = bytearray(before)
    with pytest.raises(error, match=reason):
        patch_log_append_time(buf, 0, header, timestamp)
    assert buf == before


# --- the header view ----------------------------------------------------------------------------------------------


def test_header_view_properties() -> None:
    batch = build_batch(
        [RecordToWrite(b"a")], now_ms=NOW, base_offset=7, compression=Compression.ZSTD, log_append_time=True
    )
    header = read_header(batch)
    assert isinstance(header, BatchHeader)
    assert header.size == len(batch)
    assert header.size == header.batch_length + 12
    assert header.last_offset == 7
    assert header.compression is Compression.ZSTD
    assert header.log_append_time
    assert not header.is_transactional
    assert not header.is_control
    assert read_header(b"\x00" * 5 + batch, 5) == header
    assert len(batch) > HEADER_SIZE
