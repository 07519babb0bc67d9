"""The Produce handler's answer is byte-for-byte what kio writes for the same answer, at every served version."""

from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import RawClient
from kafkalite.broker import Broker
from kafkalite.protocol.messages import api_schema
from kafkalite.protocol.wire import ApiKey, RequestHeader
from kafkalite.server.dispatch import RequestContext, ServerInfo, dispatch
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


@settings(max_examples=300, deadline=None)
@given(
    version=st.sampled_from(VERSIONS),
    name=st.text(min_size=1, max_size=300),
    topic_id=st.uuids(),
    outcomes=st.lists(st.tuples(i32, i64, st.one_of(st.just(-1), st.integers(0, 2**45)), i64), max_size=10),
)
def test_an_answer_with_every_partition_appended_is_what_kio_writes(
    version: int, name: str, topic_id: uuid.UUID, outcomes: list[tuple[int, int, int, int]]
) -> None:
    ctx = _context(version)
    appended: list[tuple[Any, str | None, list[Any]]] = [
        (
            _Topic(version, name, topic_id),
            name,
            [(index, 0, None, base, append_time, start, ()) for index, base, append_time, start in outcomes],
        )
    ]
    answer = produce._answer(ctx, appended)
    assert type(answer) is bytes
    assert answer == ctx.schema.encode_body(produce._response(ctx, appended))


def test_answers_with_an_error_are_built_by_kio() -> None:
    """So that the error metrics, which count the codes of kio answers, see them."""
    ctx = _context(9)
    topic = _Topic(9, "t", uuid.uuid4())
    for outcomes in (
        [(0, 3, "unknown", -1, -1, -1, ())],  # an error
        [(0, 87, "keyless", -1, -1, -1, ((1, "no key"),))],  # an error naming records
        [(0, 0, None, 5, -1, 0, ()), (1, 6, "not the leader", -1, -1, -1, ())],  # one partition of two refused
    ):
        answer = produce._answer(ctx, [(topic, "t", outcomes)])
        assert type(answer) is not bytes
        assert ctx.schema.encode_body(answer) == ctx.schema.encode_body(
            produce._response(ctx, [(topic, "t", outcomes)])
        )


def test_a_topic_that_was_not_resolved_is_answered_by_kio_even_without_partitions() -> None:
    """A v13 request may name the null topic id (kio reads it as None) with no partitions: nothing failed, but the
    topic is unknown, so the answer is kio's echo of it, not one written from an id it does not have."""
    ctx = _context(13)
    unknown = _Topic(13, "", uuid.UUID(int=0))
    unknown.topic_id = None  # type: ignore[assignment]
    answer = produce._answer(ctx, [(unknown, None, [])])
    assert type(answer) is not bytes
    assert ctx.schema.encode_body(answer) == ctx.schema.encode_body(produce._response(ctx, [(unknown, None, [])]))


async def test_a_v13_request_naming_the_null_topic_id_with_no_partitions_is_answered() -> None:
    """Through `dispatch`, as a client's bytes arrive: the request is answered (it used to close the connection)."""
    raw = RawClient(cast(Any, None), cast(Any, None))  # used to encode and decode only
    topic = raw.nested(0, 13, "TopicProduceData", topic_id=uuid.UUID(int=0), partition_data=[])
    frame = raw.encode(0, 13, transactional_id=None, acks=1, timeout=1000, topic_data=[topic])
    async with Broker() as broker:
        answer = await dispatch(broker, ServerInfo(0, "127.0.0.1", 9092), frame[4:], "127.0.0.1")
    assert type(answer) is bytes
    response = raw.decode_response(0, 13, answer[4:])
    assert [t.partition_responses for t in response.responses] == [()]


class _Log:
    def __init__(self, cancelled: bool) -> None:
        self.cancelled = cancelled

    async def sync(self) -> None:
        if self.cancelled:
            raise asyncio.CancelledError


COMPILED = not produce.__file__.endswith(".py")  # compiled, the handler accepts real partitions only


@pytest.mark.parametrize(
    "known",
    [
        pytest.param(True, marks=pytest.mark.skipif(COMPILED, reason="fake partitions: the Python pass runs it")),
        False,
    ],
    ids=["a partition the broker has", "through make_durable"],
)
async def test_a_sync_wait_cancelled_under_a_many_partition_answer_is_not_taken_for_a_sync(known: bool) -> None:
    """`gather(return_exceptions=True)` hands a child's cancellation back as a value: it must not answer success,
    whether the handler syncs the partition's log itself or (a partition it cannot find) through the broker."""
    partitions = [SimpleNamespace(log=_Log(cancelled=index == 1)) for index in range(2)]

    class Broker:
        topics: dict[str, Any] = {"t": SimpleNamespace(partitions=partitions)} if known else {}

        async def make_durable(self, topic: str, partition: int) -> None:
            if partition == 1:
                raise asyncio.CancelledError

    header = RequestHeader(ApiKey.PRODUCE, 9, 7, "test")
    ctx = RequestContext(cast(Any, Broker()), ServerInfo(0, "h", 1), header, api_schema(ApiKey.PRODUCE, 9))
    outcomes = [(0, 0, None, 5, -1, 0, ()), (1, 0, None, 9, -1, 0, ())]
    with pytest.raises(asyncio.CancelledError):
        await produce._answer_when_durable(ctx, [(_Topic(9, "t", uuid.uuid4()), "t", outcomes)])
