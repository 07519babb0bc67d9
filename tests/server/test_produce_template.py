"""The templated Produce answer is byte-for-byte what kio writes for the same answer, at every served version."""

from __future__ import annotations

import uuid
from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.broker import Broker
from kafkalite.protocol.messages import api_schema
from kafkalite.protocol.wire import ApiKey, RequestHeader
from kafkalite.server.dispatch import RequestContext, ServerInfo
from kafkalite.server.handlers import produce

VERSIONS = range(3, 14)
i32 = st.integers(-(2**31), 2**31 - 1)
i64 = st.integers(-(2**63), 2**63 - 1)


class _Topic:
    """Stands in for a request's TopicProduceData: the answer reads only `name` (v3-12) or `topic_id` (v13)."""

    def __init__(self, version: int, name: str, topic_id: uuid.UUID) -> None:
        if version >= 13:
            self.topic_id = topic_id
        else:
            self.name = name


def _context(version: int) -> RequestContext:
    header = RequestHeader(ApiKey.PRODUCE, version, 7, "test")
    return RequestContext(cast(Broker, None), ServerInfo(0, "h", 1), header, api_schema(ApiKey.PRODUCE, version))


@settings(max_examples=400, deadline=None)
@given(
    version=st.sampled_from(VERSIONS),
    name=st.text(min_size=1, max_size=300),
    topic_id=st.uuids(),
    index=i32,
    base_offset=i64,
    start_offset=i64,
)
def test_templated_answer_is_what_kio_writes(
    version: int, name: str, topic_id: uuid.UUID, index: int, base_offset: int, start_offset: int
) -> None:
    ctx = _context(version)
    appended: list[tuple[Any, str | None, list[Any]]] = [
        (_Topic(version, name, topic_id), name, [(index, 0, None, base_offset, -1, start_offset, ())])
    ]
    templated = produce._answer(ctx, appended)
    assert type(templated) is bytes
    assert templated == ctx.schema.encode_body(produce._response(ctx, appended))
    # the same template again (now cached) with other values is still kio's answer
    other = [(appended[0][0], name, [(index ^ 1, 0, None, ~base_offset, -1, ~start_offset, ())])]
    assert produce._answer(ctx, other) == ctx.schema.encode_body(produce._response(ctx, other))


def test_answers_of_other_shapes_are_built_by_kio() -> None:
    ctx = _context(9)
    topic = _Topic(9, "t", uuid.uuid4())
    for outcomes in (
        [(0, 3, "unknown", -1, -1, -1, ())],  # an error
        [(0, 87, "keyless", -1, -1, -1, ((1, "no key"),))],  # an error naming records
        [(0, 0, None, 5, 1_700_000_000_000, 0, ())],  # LogAppendTime
        [(0, 0, None, 5, -1, 0, ()), (1, 0, None, 9, -1, 0, ())],  # two partitions
    ):
        answer = produce._answer(ctx, [(topic, "t", outcomes)])
        assert type(answer) is not bytes
        assert ctx.schema.encode_body(answer) == ctx.schema.encode_body(
            produce._response(ctx, [(topic, "t", outcomes)])
        )
