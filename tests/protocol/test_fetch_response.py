"""The Fetch answer written field by field (protocol.fetch_response) is byte-for-byte what kio writes."""

from __future__ import annotations

import uuid
from collections.abc import Sized
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkalite.protocol.fetch_response import FetchedPartition, encode_fetch_body
from kafkalite.protocol.messages import ApiSchema, api_schema
from kafkalite.protocol.wire import ApiKey

VERSIONS = range(4, 19)
error_codes = st.sampled_from([int(code) for code in ErrorCode])  # kio writes only the codes it knows
i32 = st.integers(-(2**31), 2**31 - 1)
i64 = st.integers(-(2**63), 2**63 - 1)
aborted = st.one_of(st.none(), st.lists(st.tuples(i64, i64), max_size=4))
records = st.one_of(st.none(), st.binary(max_size=300))  # None: null, as a partition with an error is answered
partitions = st.lists(st.tuples(i32, error_codes, i64, i64, i64, aborted, records), max_size=6)
names = st.text(min_size=1, max_size=300)  # any text: its UTF-8 length is what gets written


class FileRange:
    """A stand-in for a range of a segment file: sized, and not `bytes`."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __len__(self) -> int:
        return len(self.data)


def _kio_body(schema: ApiSchema, topics: list[tuple[Any, list[FetchedPartition]]], throttle_ms: int) -> bytes:
    build = schema.build
    response = build(
        "FetchResponse",
        throttle_time=throttle_ms,
        error_code=0,
        session_id=0,
        responses=[
            build(
                "FetchableTopicResponse",
                topic=topic if isinstance(topic, str) else None,
                topic_id=None if isinstance(topic, str) else topic,
                partitions=[
                    build(
                        "PartitionData",
                        partition_index=index,
                        error_code=code,
                        high_watermark=high_watermark,
                        last_stable_offset=last_stable,
                        log_start_offset=log_start,
                        aborted_transactions=None
                        if entries is None
                        else [build("AbortedTransaction", producer_id=p, first_offset=f) for p, f in entries],
                        preferred_read_replica=-1,
                        records=records.data if isinstance(records, FileRange) else records,
                    )
                    for index, code, high_watermark, last_stable, log_start, entries, records in fetched
                ],
            )
            for topic, fetched in topics
        ],
    )
    return schema.encode_body(response)


def _joined(parts: list[bytes | Sized]) -> bytes:
    return b"".join(part.data if isinstance(part, FileRange) else part for part in parts)  # type: ignore[misc]


@settings(max_examples=400, deadline=None)
@given(
    version=st.sampled_from(VERSIONS),
    topics=st.lists(st.tuples(names, st.one_of(st.none(), st.uuids()), partitions), max_size=4),
    throttle_ms=st.integers(0, 2**31 - 1),
    as_files=st.lists(st.booleans(), min_size=24, max_size=24),
)
def test_any_answer_is_what_kio_writes(
    version: int,
    topics: list[tuple[str, uuid.UUID | None, list[FetchedPartition]]],
    throttle_ms: int,
    as_files: list[bool],
) -> None:
    schema = api_schema(ApiKey.FETCH, version)
    switches = iter(as_files)
    shaped = [
        (
            topic_id if version >= 13 else name,
            [(*p[:6], FileRange(p[6]) if next(switches) and p[6] is not None else p[6]) for p in fetched],  # type: ignore[arg-type]
        )
        for name, topic_id, fetched in topics
    ]
    parts = encode_fetch_body(version, shaped, throttle_ms)  # type: ignore[arg-type]
    assert _joined(parts) == _kio_body(schema, shaped, throttle_ms)  # type: ignore[arg-type]
    # bytes records are copied in; every other records object is a part of its own, between two bytes parts
    files = [r for _, fetched in shaped for *_, r in fetched if isinstance(r, FileRange)]
    assert [part for part in parts if not isinstance(part, bytes)] == files
    assert len(parts) == 2 * len(files) + 1
    assert all(isinstance(part, bytes) for part in parts[::2])


@pytest.mark.parametrize("version", VERSIONS)
def test_one_partition_with_records_and_an_aborted_transaction(version: int) -> None:
    topic: str | uuid.UUID = uuid.uuid4() if version >= 13 else "orders"
    topics: list[tuple[Any, list[FetchedPartition]]] = [(topic, [(3, 0, 42, 40, 7, [(1000, 38)], b"\x01" * 70)])]
    assert _joined(encode_fetch_body(version, topics)) == _kio_body(api_schema(ApiKey.FETCH, version), topics, 0)


@pytest.mark.parametrize("version", VERSIONS)
def test_an_answer_of_no_topics(version: int) -> None:
    assert _joined(encode_fetch_body(version, [], 25)) == _kio_body(api_schema(ApiKey.FETCH, version), [], 25)


def test_a_topic_named_the_wrong_way_for_the_version_is_refused() -> None:
    with pytest.raises(ValueError, match="by its id"):
        encode_fetch_body(13, [("orders", [])])
    with pytest.raises(ValueError, match="by its name"):
        encode_fetch_body(12, [(uuid.uuid4(), [])])


def test_other_buffers_are_copied_in_like_bytes() -> None:
    as_bytes = encode_fetch_body(12, [("orders", [(0, 0, 1, 1, 0, None, b"records")])])
    for buffer in (bytearray(b"records"), memoryview(b"xrecords")[1:]):
        assert encode_fetch_body(12, [("orders", [(0, 0, 1, 1, 0, None, buffer)])]) == as_bytes
