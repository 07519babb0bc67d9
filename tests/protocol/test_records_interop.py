"""Our RecordBatch v2 bytes against other Python Kafka clients' record codecs, in both directions, every codec.

aiokafka (pure-Python and Cython readers and builders) compresses with cramjam, so it covers every codec. kafka-python
needs python-snappy, lz4 and zstandard for those codecs; the ones whose library is not installed are skipped with a
reason naming it (see `pytest -rs`), never silently. Its gzip and uncompressed paths always run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aiokafka.record.default_records as aiokafka_records
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kafka_codec
from kafka.record.default_records import DefaultRecordBatch as KafkaPythonBatch
from kafka.record.default_records import DefaultRecordBatchBuilder as KafkaPythonBuilder

from kafkalite.protocol.records import (
    Compression,
    Record,
    RecordToWrite,
    build_batch,
    iter_records,
    patch_log_append_time,
    read_batches,
    read_header,
    rebased,
)

NOW = 1_700_000_000_000

_KAFKA_PYTHON_SUPPORT = {
    Compression.NONE: (True, ""),
    Compression.GZIP: (kafka_codec.has_gzip(), "gzip"),
    Compression.SNAPPY: (kafka_codec.has_snappy(), "python-snappy"),
    Compression.LZ4: (kafka_codec.has_lz4(), "lz4"),
    Compression.ZSTD: (kafka_codec.has_zstd(), "zstandard"),
}
KAFKA_PYTHON_CODECS = [
    pytest.param(
        codec,
        marks=pytest.mark.skipif(not ok, reason=f"kafka-python cannot do {codec.name}: {lib} is not installed"),
    )
    for codec, (ok, lib) in _KAFKA_PYTHON_SUPPORT.items()
]

AIOKAFKA_READERS = [aiokafka_records._DefaultRecordBatchPy, aiokafka_records._DefaultRecordBatchCython]
AIOKAFKA_BUILDERS = [aiokafka_records._DefaultRecordBatchBuilderPy, aiokafka_records._DefaultRecordBatchBuilderCython]

optional_bytes = st.none() | st.binary(max_size=40)
records_to_write = st.lists(
    st.builds(
        RecordToWrite,
        value=optional_bytes | st.binary(min_size=2000, max_size=5000),
        key=optional_bytes,
        headers=st.lists(st.tuples(st.text(max_size=8), st.binary(max_size=16)), max_size=3),
        timestamp=st.integers(0, 1 << 42),
    ),
    min_size=1,
    max_size=10,
)

Seen = tuple[int, int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]


def seen_by_peer(batch: Any) -> list[Seen]:
    return [(r.offset, r.timestamp, r.key, r.value, tuple((k, v) for k, v in r.headers)) for r in batch]


def expected(records: list[RecordToWrite], base_offset: int) -> list[Seen]:
    return [
        (base_offset + i, NOW if r.timestamp is None else r.timestamp, r.key, r.value, tuple(r.headers))
        for i, r in enumerate(records)
    ]


def build_with_peer(builder_cls: Callable[..., Any], codec: Compression, records: list[RecordToWrite]) -> bytes:
    builder = builder_cls(2, int(codec), 0, 1234, 5, 17, 1 << 24)
    for i, r in enumerate(records):
        builder.append(i, r.timestamp, r.key, r.value, list(r.headers))
    return bytes(builder.build())


# --- our batches, their readers -----------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", KAFKA_PYTHON_CODECS)
@settings(max_examples=40, deadline=None)
@given(records=records_to_write, base_offset=st.integers(0, 1 << 40))
def test_kafka_python_reads_our_batches(codec: Compression, records: list[RecordToWrite], base_offset: int) -> None:
    batch = KafkaPythonBatch(bytearray(build_batch(records, now_ms=NOW, base_offset=base_offset, compression=codec)))
    assert batch.validate_crc()
    assert batch.compression_type == codec
    assert seen_by_peer(batch) == expected(records, base_offset)


@pytest.mark.parametrize("reader", AIOKAFKA_READERS)
@pytest.mark.parametrize("codec", list(Compression))
@settings(max_examples=40, deadline=None)
@given(records=records_to_write, base_offset=st.integers(0, 1 << 40))
def test_aiokafka_reads_our_batches(
    reader: Callable[..., Any], codec: Compression, records: list[RecordToWrite], base_offset: int
) -> None:
    batch = reader(bytearray(build_batch(records, now_ms=NOW, base_offset=base_offset, compression=codec)))
    assert batch.validate_crc()
    assert seen_by_peer(batch) == expected(records, base_offset)


@pytest.mark.parametrize("reader", AIOKAFKA_READERS)
@pytest.mark.parametrize("codec", list(Compression))
def test_aiokafka_sees_our_broker_patches(reader: Callable[..., Any], codec: Compression) -> None:
    built = build_batch([RecordToWrite(b"a"), RecordToWrite(b"b")], now_ms=NOW, compression=codec)
    header = read_header(built)
    buf = bytearray(b"".join(rebased(built, 500)))
    patch_log_append_time(buf, 0, header, NOW + 999)
    batch = reader(buf)
    assert batch.validate_crc()
    assert batch.timestamp_type == 1  # LogAppendTime
    assert [(r.offset, r.timestamp) for r in batch] == [(500, NOW + 999), (501, NOW + 999)]


# --- their batches, our reader ------------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", KAFKA_PYTHON_CODECS)
@settings(max_examples=40, deadline=None)
@given(records=records_to_write)
def test_we_read_kafka_python_batches(codec: Compression, records: list[RecordToWrite]) -> None:
    batch = build_with_peer(KafkaPythonBuilder, codec, records)
    [(_, header)] = read_batches(batch)  # whole, CRC valid, nothing left over
    assert header.compression in (codec, Compression.NONE)  # these builders skip compression that would not shrink
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (1234, 5, 17)
    assert list(iter_records(batch)) == [Record(*seen) for seen in expected(records, 0)]


@pytest.mark.parametrize("builder", AIOKAFKA_BUILDERS)
@pytest.mark.parametrize("codec", list(Compression))
@settings(max_examples=40, deadline=None)
@given(records=records_to_write)
def test_we_read_aiokafka_batches(
    builder: Callable[..., Any], codec: Compression, records: list[RecordToWrite]
) -> None:
    batch = build_with_peer(builder, codec, records)
    [(_, header)] = read_batches(batch)
    assert header.compression in (codec, Compression.NONE)
    assert list(iter_records(batch)) == [Record(*seen) for seen in expected(records, 0)]


COMPRESSIBLE = [RecordToWrite(b"value %d " % i * 200, b"key %d" % i, [("h", b"v")], NOW + i) for i in range(50)]


@pytest.mark.parametrize(
    "builder",
    [*AIOKAFKA_BUILDERS, pytest.param(KafkaPythonBuilder, id="kafka-python")],
)
@pytest.mark.parametrize("codec", list(Compression))
def test_we_read_compressed_peer_batches(builder: Callable[..., Any], codec: Compression) -> None:
    ok, lib = _KAFKA_PYTHON_SUPPORT[codec]
    if builder is KafkaPythonBuilder and not ok:
        pytest.skip(f"kafka-python cannot do {codec.name}: {lib} is not installed")
    batch = build_with_peer(builder, codec, COMPRESSIBLE)
    [(_, header)] = read_batches(batch)
    assert header.compression is codec  # the data compresses well, so the builder really used the codec
    assert header.size < 50 * 1500 or codec is Compression.NONE
    assert list(iter_records(batch)) == [Record(*seen) for seen in expected(COMPRESSIBLE, 0)]
