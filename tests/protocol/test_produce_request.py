"""Large Produce requests read with their records left in the frame (protocol.produce_request), held equal to kio."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import io
import struct
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import SerialError

from kafkalite.errors import ProtocolError
from kafkalite.protocol.messages import api_schema
from kafkalite.protocol.produce_request import (
    RECORDS_VIEW_MIN_BYTES,
    RECORDS_VIEW_MIN_BYTES_PER_PARTITION,
    partition_budget,
    read_with_record_views,
)
from kafkalite.protocol.request_guard import check_body, request_walker

VERSIONS = range(3, 14)
PREFIX = b"\xab" * 7  # stands in for the request header: the body starts at an offset inside the frame
ANY_COUNT = 1 << 20  # a partition budget no test request reaches


def _request(version: int, topics: list[tuple[str, list[tuple[int, bytes | None]]]], txn: str | None) -> Any:
    request_type = load_request_schema(0, version)
    module = __import__(request_type.__module__, fromlist=["TopicProduceData"])
    topic_data = []
    for name, partitions in topics:
        data = tuple(module.PartitionProduceData(index=index, records=records) for index, records in partitions)
        if version >= 13:
            topic_id = uuid.uuid5(uuid.NAMESPACE_DNS, name)
            topic_data.append(module.TopicProduceData(topic_id=topic_id, partition_data=data))
        else:
            topic_data.append(module.TopicProduceData(name=name, partition_data=data))
    return request_type(
        transactional_id=txn, acks=-1, timeout=datetime.timedelta(milliseconds=1500), topic_data=tuple(topic_data)
    )


def _frame(request: Any) -> bytes:
    buffer = io.BytesIO()
    buffer.write(PREFIX)
    entity_writer(type(request))(buffer, request)
    return buffer.getvalue()


def _as_bytes(request: Any) -> Any:
    """`request` with every records view turned into `bytes`, for comparing with kio's reading."""
    topics = tuple(
        dataclasses.replace(
            topic,
            partition_data=tuple(
                dataclasses.replace(p, records=None if p.records is None else bytes(p.records))
                for p in topic.partition_data
            ),
        )
        for topic in request.topic_data
    )
    return dataclasses.replace(request, topic_data=topics)


def _views(request: Any) -> list[memoryview | None]:
    return [p.records for topic in request.topic_data for p in topic.partition_data]


@pytest.mark.parametrize("version", VERSIONS)
def test_reads_what_kio_reads_with_the_records_as_views_of_the_frame(version: int) -> None:
    request = _request(
        version,
        [("orders", [(0, b"a" * 300), (3, None), (7, b"")]), ("événements", [(1, bytes(range(256)) * 3)])],
        "txn-1",
    )
    frame = _frame(request)
    read = read_with_record_views(frame, len(PREFIX), type(request), ANY_COUNT)
    kio_read, _ = entity_reader(type(request))(frame, len(PREFIX))
    assert _as_bytes(read) == kio_read == request
    views = _views(read)
    assert all(isinstance(v, memoryview) and v.obj is frame for v in views if v is not None)
    assert views[1] is None


@settings(max_examples=60, deadline=None)
@given(
    version=st.sampled_from(list(VERSIONS)),
    txn=st.none() | st.text(max_size=20),
    topics=st.lists(
        st.tuples(
            st.text(min_size=1, max_size=12),
            st.lists(st.tuples(st.integers(0, 2**31 - 1), st.none() | st.binary(max_size=200)), max_size=4),
        ),
        max_size=4,
    ),
)
def test_any_request_reads_as_kio_reads_it(
    version: int, txn: str | None, topics: list[tuple[str, list[tuple[int, bytes | None]]]]
) -> None:
    request = _request(version, topics, txn)
    frame = _frame(request)
    read = read_with_record_views(frame, len(PREFIX), type(request), ANY_COUNT)
    assert _as_bytes(read) == entity_reader(type(request))(frame, len(PREFIX))[0]


@pytest.mark.parametrize("version", [9, 12, 13])
@pytest.mark.parametrize(("where", "at"), [("partition", -3), ("topic", -2), ("request", -1)])
def test_a_request_with_tagged_fields_is_left_to_kio(version: int, where: str, at: int) -> None:
    """kio refuses tagged fields it does not know; this reader hands such a request back (None) rather than guess.
    With one topic of one partition the body ends in three tagged-field counts: the partition's, the topic's and
    the request's."""
    request = _request(version, [("t", [(0, b"x" * 10)])], None)
    frame = bytearray(_frame(request))
    assert frame[-3:] == b"\x00\x00\x00"
    frame[len(frame) + at : len(frame) + at + 1] = b"\x01\x05\x01\x00"  # one tagged field: tag 5, one byte
    assert read_with_record_views(bytes(frame), len(PREFIX), type(request), ANY_COUNT) is None, where
    with pytest.raises(KeyError):  # and kio, which the caller then asks, refuses it
        entity_reader(type(request))(bytes(frame), len(PREFIX))


@pytest.mark.parametrize("version", [3, 8, 9, 12])
def test_decode_leaves_the_records_of_a_large_request_in_the_frame(version: int) -> None:
    schema = api_schema(0, version)
    request = _request(version, [("big", [(0, b"r" * RECORDS_VIEW_MIN_BYTES), (1, b"s" * 100)])], None)
    frame = _frame(request)
    decoded = schema.decode(frame, len(PREFIX))
    views = _views(decoded)
    assert all(isinstance(v, memoryview) and v.obj is frame for v in views)
    assert _as_bytes(decoded) == request


def test_decode_reads_a_small_request_with_kio() -> None:
    request = _request(9, [("small", [(0, b"r" * 100)])], None)
    decoded = api_schema(0, 9).decode(_frame(request), len(PREFIX))
    assert type(decoded.topic_data[0].partition_data[0].records) is bytes
    assert decoded == request


def test_decode_refuses_a_large_request_with_an_unknown_tagged_field_as_kio_does() -> None:
    request = _request(9, [("big", [(0, b"r" * RECORDS_VIEW_MIN_BYTES)])], None)
    frame = bytearray(_frame(request))
    frame[-1:] = b"\x01\x05\x01\x00"
    with pytest.raises(ProtocolError, match="undecodable api_key=0 v9"):
        api_schema(0, 9).decode(bytes(frame), len(PREFIX))


def test_decode_refuses_a_large_request_whose_topic_name_is_not_utf8() -> None:
    request = _request(3, [("ab", [(0, b"r" * RECORDS_VIEW_MIN_BYTES)])], None)
    frame = bytearray(_frame(request))
    name_at = frame.index(b"\x00\x02ab")
    frame[name_at + 2 : name_at + 4] = b"\xff\xfe"
    with pytest.raises(ProtocolError, match="undecodable"):
        api_schema(0, 3).decode(bytes(frame), len(PREFIX))


def test_the_guard_refuses_a_negative_records_length_before_this_reader_runs() -> None:
    """The guard, which runs first, refuses a length below -1 (this reader would read it as null records)."""
    records = b"r" * RECORDS_VIEW_MIN_BYTES
    frame = bytearray(_frame(_request(3, [("t", [(0, records)])], None)))
    length_at = frame.index(struct.pack(">i", len(records)) + records[:8])
    frame[length_at : length_at + 4] = struct.pack(">i", -5)
    with pytest.raises(ProtocolError, match="negative length -5"):
        api_schema(0, 3).decode(bytes(frame), len(PREFIX))


@pytest.mark.parametrize("version", [3, 9])
def test_a_large_request_over_many_small_partitions_is_left_to_kio(version: int) -> None:
    """Building kio's classes costs about a microsecond a partition, more than kio's copy of a small records field:
    a request averaging under `RECORDS_VIEW_MIN_BYTES_PER_PARTITION` a partition is read by kio."""
    per_partition = RECORDS_VIEW_MIN_BYTES_PER_PARTITION // 2
    count = RECORDS_VIEW_MIN_BYTES // per_partition + 1
    topics = [("one", [(0, b"r" * per_partition)]), ("many", [(i, b"r" * per_partition) for i in range(count)])]
    request = _request(version, topics, None)
    frame = _frame(request)
    budget = partition_budget(len(frame) - len(PREFIX))
    assert 0 < budget < count + 1
    assert read_with_record_views(frame, len(PREFIX), type(request), budget) is None
    assert read_with_record_views(frame, len(PREFIX), type(request), count + 1) is not None
    decoded = api_schema(0, version).decode(frame, len(PREFIX))
    assert all(type(p.records) is bytes for t in decoded.topic_data for p in t.partition_data)
    assert decoded == request


def test_the_partition_budget() -> None:
    assert partition_budget(RECORDS_VIEW_MIN_BYTES - 1) == 0
    assert partition_budget(RECORDS_VIEW_MIN_BYTES) == RECORDS_VIEW_MIN_BYTES // RECORDS_VIEW_MIN_BYTES_PER_PARTITION
    assert partition_budget(1 << 20) == (1 << 20) // RECORDS_VIEW_MIN_BYTES_PER_PARTITION


@settings(max_examples=300, deadline=None)
@given(
    version=st.sampled_from(list(VERSIONS)),
    flips=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), min_size=1, max_size=4),
)
def test_a_damaged_request_reads_as_kio_reads_it_or_fails_as_kio_does(
    version: int, flips: list[tuple[int, int]]
) -> None:
    """Differential: bytes of a valid request overwritten at random; whatever the guard lets through, this reader
    gives what kio gives, hands it to kio (None), or raises where kio raises."""
    request = _request(version, [("a", [(0, b"x" * 40), (1, None)]), ("bb", [(2, b"y" * 30)])], "tx")
    frame = bytearray(_frame(request))
    for position, value in flips:
        frame[len(PREFIX) + position % (len(frame) - len(PREFIX))] = value
    body = bytes(frame)
    try:
        check_body(request_walker(0, version), body, len(PREFIX))
    except ProtocolError:
        return
    try:
        expected: Any = entity_reader(type(request))(body, len(PREFIX))[0]
    except (SerialError, ValueError, OverflowError, KeyError) as e:
        expected = type(e)
    if isinstance(expected, type):  # kio refused it: so must this reader, or hand it to kio
        with contextlib.suppress(SerialError, ValueError, OverflowError, KeyError):
            assert read_with_record_views(body, len(PREFIX), type(request), ANY_COUNT) is None, f"kio raised {expected}"
        return
    read = read_with_record_views(body, len(PREFIX), type(request), ANY_COUNT)
    if read is not None:
        assert _as_bytes(read) == expected
