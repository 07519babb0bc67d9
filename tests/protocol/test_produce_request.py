"""Large Produce requests read with their records left in the frame (protocol.produce_request), held equal to kio."""

from __future__ import annotations

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

from kafkalite.errors import ProtocolError
from kafkalite.protocol.messages import api_schema
from kafkalite.protocol.produce_request import RECORDS_VIEW_MIN_BYTES, read_with_record_views

VERSIONS = range(3, 14)
PREFIX = b"\xab" * 7  # stands in for the request header: the body starts at an offset inside the frame


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
    read = read_with_record_views(frame, len(PREFIX), type(request))
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
    read = read_with_record_views(frame, len(PREFIX), type(request))
    assert _as_bytes(read) == entity_reader(type(request))(frame, len(PREFIX))[0]


@pytest.mark.parametrize("version", [9, 12, 13])
def test_a_request_with_tagged_fields_is_left_to_kio(version: int) -> None:
    """kio refuses tagged fields it does not know; this reader hands such a request back (None) rather than guess."""
    request = _request(version, [("t", [(0, b"x" * 10)])], None)
    frame = bytearray(_frame(request))
    assert frame[-1] == 0  # the request's own tagged-field count
    frame[-1:] = b"\x01\x05\x01\x00"  # one tagged field: tag 5, one byte
    assert read_with_record_views(bytes(frame), len(PREFIX), type(request)) is None


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


def test_decode_refuses_a_large_request_with_a_negative_records_length() -> None:
    """The guard, which runs first, refuses a length below -1: this reader never sees one."""
    records = b"r" * RECORDS_VIEW_MIN_BYTES
    frame = bytearray(_frame(_request(3, [("t", [(0, records)])], None)))
    length_at = frame.index(struct.pack(">i", len(records)) + records[:8])
    frame[length_at : length_at + 4] = struct.pack(">i", -5)
    with pytest.raises(ProtocolError, match="negative length -5"):
        api_schema(0, 3).decode(bytes(frame), len(PREFIX))
