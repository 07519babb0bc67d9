"""The Produce answer written field by field (protocol.produce_response) is byte-for-byte what kio writes."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.protocol.messages import ApiSchema, api_schema
from kafkalite.protocol.produce_response import Accepted, encode_accepted
from kafkalite.protocol.wire import ApiKey

VERSIONS = range(3, 14)
i32 = st.integers(-(2**31), 2**31 - 1)
i64 = st.integers(-(2**63), 2**63 - 1)
append_times = st.one_of(st.just(-1), st.integers(0, 2**45))  # CreateTime (-1), or LogAppendTime's epoch ms
partitions = st.lists(st.tuples(i32, i64, append_times, i64), max_size=12)
names = st.text(min_size=1, max_size=300)  # any text: its UTF-8 length is what gets written


def _kio_body(schema: ApiSchema, topics: list[tuple[str | uuid.UUID, list[Accepted]]]) -> bytes:
    build = schema.build
    response = build(
        "ProduceResponse",
        responses=[
            build(
                "TopicProduceResponse",
                name=topic if isinstance(topic, str) else None,
                topic_id=topic if isinstance(topic, uuid.UUID) else None,
                partition_responses=[
                    build(
                        "PartitionProduceResponse",
                        index=index,
                        error_code=0,
                        base_offset=base_offset,
                        log_append_time=append_time,
                        log_start_offset=start_offset,
                        record_errors=[],
                        error_message=None,
                    )
                    for index, base_offset, append_time, start_offset in accepted
                ],
            )
            for topic, accepted in topics
        ],
        throttle_time=0,
    )
    return schema.encode_body(response)


@settings(max_examples=500, deadline=None)
@given(
    version=st.sampled_from(VERSIONS),
    topics=st.lists(st.tuples(names, st.uuids(), partitions), max_size=5),
)
def test_any_answer_is_what_kio_writes(version: int, topics: list[tuple[str, uuid.UUID, list[Accepted]]]) -> None:
    schema = api_schema(ApiKey.PRODUCE, version)
    by_id = version >= 13
    ours = encode_accepted(version, [(topic_id.bytes if by_id else name, done) for name, topic_id, done in topics])
    assert ours == _kio_body(schema, [(topic_id if by_id else name, done) for name, topic_id, done in topics])


@pytest.mark.parametrize("version", VERSIONS)
def test_counts_and_names_past_one_varint_byte(version: int) -> None:
    """200 partitions and a 200-byte name: the flexible versions' counts and lengths take two varint bytes."""
    topic = "é" * 100
    accepted: list[Accepted] = [(i, i * 1000, -1, 0) for i in range(200)]
    topic_id = uuid.uuid4()
    key: str | bytes = topic_id.bytes if version >= 13 else topic
    expected = _kio_body(api_schema(ApiKey.PRODUCE, version), [(topic_id if version >= 13 else topic, accepted)])
    assert encode_accepted(version, [(key, accepted)]) == expected


def test_a_topic_named_the_wrong_way_for_the_version_is_refused() -> None:
    with pytest.raises(ValueError, match="16-byte id"):
        encode_accepted(13, [("orders", [])])
    with pytest.raises(ValueError, match="16-byte id"):
        encode_accepted(13, [(b"short", [])])
    with pytest.raises(ValueError, match="by its name"):
        encode_accepted(12, [(uuid.uuid4().bytes, [])])


def test_the_answer_decodes_to_what_was_accepted() -> None:
    """Read back with kio's reader of the response: the values a client sees."""
    schema = api_schema(ApiKey.PRODUCE, 9)
    body = encode_accepted(9, [("a", [(0, 10, -1, 0), (7, 2**40, 1_700_000_000_000, 5)]), ("b", [(3, 0, -1, 0)])])
    response: Any = schema.decode_response_body(body)
    seen = [
        (t.name, [(p.index, p.error_code, p.base_offset, p.log_start_offset) for p in t.partition_responses])
        for t in response.responses
    ]
    assert seen == [("a", [(0, 0, 10, 0), (7, 0, 2**40, 5)]), ("b", [(3, 0, 0, 0)])]
