"""The fast paths of `build_batch` and `decode_columns` against the reference encoder and the strict decoder.

`build_batch` must write exactly the bytes of `encode_record` joined over the records, and `decode_columns` must
return exactly what the strict per-record decoder returns, or raise the same error, on any body: valid ones around
every varint size boundary, and mutated ones.
"""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.errors import CorruptRecordError
from kafkalite.protocol.records import (
    HEADER_SIZE,
    Record,
    RecordToWrite,
    build_batch,
    decode_columns,
    encode_record,
    iter_records,
    read_header,
)
from kafkalite.protocol.records.codec import _decode_record

NOW = 1_700_000_000_000

# Sizes on both sides of the 1-, 2- and 3-byte varint boundaries (zigzag: 63/64 and 8191/8192).
boundary_sizes = st.sampled_from([0, 1, 62, 63, 64, 65, 100, 8000, 8100, 8191, 8192, 8193])
payloads = st.none() | st.binary(max_size=80) | boundary_sizes.map(lambda n: b"v" * n)
records_to_write = st.builds(
    RecordToWrite,
    value=payloads,
    key=st.none() | st.binary(max_size=70),
    headers=st.just(()) | st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=5)), max_size=2),
    timestamp=st.none() | st.integers(NOW - 200, NOW + 20_000),
)


def reference_body(records: list[RecordToWrite], now_ms: int) -> bytes:
    stamps = [now_ms if r.timestamp is None else r.timestamp for r in records]
    base = min(stamps)
    return b"".join(encode_record(i, ts - base, r) for i, (ts, r) in enumerate(zip(stamps, records, strict=True)))


def strict_decode(batch: bytes) -> list[Record]:
    header = read_header(batch)
    body = batch[HEADER_SIZE:]
    out, cursor = [], 0
    for index in range(header.record_count):
        try:
            record, cursor = _decode_record(body, cursor, len(body), header)
        except CorruptRecordError as exc:
            raise CorruptRecordError(f"record {index} of the batch at position 0: {exc}") from None
        out.append(record)
    if cursor != len(body):
        raise CorruptRecordError(f"{len(body) - cursor} trailing bytes")
    return out


def outcome(decode: object, batch: bytes) -> object:
    assert callable(decode)
    try:
        return decode(batch)
    except CorruptRecordError as exc:
        return ("error", str(exc).split(" trailing bytes")[0])


@settings(max_examples=300, deadline=None)
@given(st.lists(records_to_write, min_size=1, max_size=12), st.integers(0, 70_000), st.booleans())
def test_fast_encoder_is_byte_identical_and_decodes_back(
    batch_records: list[RecordToWrite], first_delta: int, same_key: bool
) -> None:
    if same_key:  # consecutive records sharing one key object: the encoder reuses that key's bytes
        batch_records = [r._replace(key=batch_records[0].key) for r in batch_records]
    batch = build_batch(batch_records, now_ms=NOW)
    assert batch[HEADER_SIZE:] == reference_body(batch_records, NOW)
    assert list(iter_records(batch)) == strict_decode(batch)


def test_offset_deltas_past_the_table() -> None:
    batch_records = [RecordToWrite(b"x")] * 8300
    batch = build_batch(batch_records, now_ms=NOW, base_offset=5)
    assert batch[HEADER_SIZE:] == reference_body(batch_records, NOW)
    assert decode_columns(batch).offsets == list(range(5, 8305))


@settings(max_examples=500, deadline=None)
@given(st.lists(records_to_write, min_size=1, max_size=6), st.data())
def test_mutated_bodies_decode_as_the_strict_decoder_does(
    batch_records: list[RecordToWrite], data: st.DataObject
) -> None:
    batch = bytearray(build_batch(batch_records, now_ms=NOW))
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(HEADER_SIZE, len(batch) - 1))
        batch[at] = data.draw(st.integers(0, 255))
    expected = outcome(strict_decode, bytes(batch))
    assert outcome(lambda b: list(iter_records(b)), bytes(batch)) == expected


@pytest.mark.parametrize("log_append_time", [False, True])
def test_timestamps_follow_the_timestamp_type(log_append_time: bool) -> None:
    batch = bytearray(
        build_batch([RecordToWrite(b"a", timestamp=NOW), RecordToWrite(b"b", timestamp=NOW + 9)], now_ms=0)
    )
    if log_append_time:
        struct.pack_into(">h", batch, 21, 0x08)
        struct.pack_into(">q", batch, 35, NOW + 1000)
        struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    expected = [NOW + 1000] * 2 if log_append_time else [NOW, NOW + 9]
    assert decode_columns(bytes(batch)).timestamps == expected
