"""Frames found by fuzzing `kafkalite serve`, each answered with a Kafka error or a closed connection, nothing else.

Every frame is given as sent (hex, with its 4-byte size prefix). After each one the broker must still answer another
connection, and must not have logged a traceback: a request we refuse is expected input, not a server bug.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from typing import Any

import pytest

from conftest import Connect, RawClient
from kafkalite.broker import Broker
from kafkalite.protocol.records import RecordToWrite, build_batch

pytestmark = pytest.mark.timeout(30)

INVALID_REQUEST = 42
UNKNOWN_PRODUCER_ID = 59
UNKNOWN_TOPIC_ID = 100
INT64_MAX = 2**63 - 1


@pytest.fixture(autouse=True)
def no_traceback(caplog: pytest.LogCaptureFixture) -> Any:
    """Fail a test whose request made the broker log an unexpected error (a traceback)."""
    caplog.set_level(logging.WARNING, logger="kafkalite")
    yield
    records = caplog.get_records("setup") + caplog.get_records("call")
    ours = [r for r in records if r.name.startswith("kafkalite")]  # client libraries' threads of other tests log too
    tracebacks = [r for r in ours if r.exc_info is not None or r.levelno >= logging.ERROR]
    assert not tracebacks, [r.getMessage() for r in tracebacks]


async def still_serving(connect: Connect) -> None:
    client = await connect()
    response = await client.request(18, 3, client_software_name="t", client_software_version="1")
    assert response.error_code == 0


async def send_hex(raw: RawClient, frame_hex: str) -> bytes | None:
    """Send one frame; its answer, or None when the server closed the connection instead."""
    await raw.send_raw(bytes.fromhex(frame_hex))
    try:
        return await raw.read_frame()
    except (asyncio.IncompleteReadError, ConnectionError):
        return None


def decode(raw: RawClient, api_key: int, version: int, frame: bytes) -> Any:
    (raw.correlation_id,) = struct.unpack_from(">i", frame)
    return raw.decode_response(api_key, version, frame)


# --- 1. a Fetch with no partitions and a long max_wait ----------------------------------------------------------


async def test_fetch_without_partitions_answers_at_once_and_never_spins(raw: RawClient, connect: Connect) -> None:
    # the frame, with max_wait raised to the largest int32 (24.8 days): only an immediate answer passes
    frame_hex = "000000200001000400000001000178ffffffff7fffffff00000001001000000000000000"
    answered = asyncio.ensure_future(send_hex(raw, frame_hex))
    await still_serving(connect)  # with a spinning handler this never runs: the whole loop is stuck in the Fetch
    frame = await asyncio.wait_for(answered, 10)
    assert frame is not None
    response = decode(raw, 1, 4, frame)
    assert response.responses == ()


async def test_fetch_of_an_empty_topic_list_still_long_polls(raw: RawClient, connect: Connect) -> None:
    frame_hex = "000000200001000400000001000178ffffffff0000138800000001001000000000000000"  # the frame, 5 s
    frame = await asyncio.wait_for(send_hex(raw, frame_hex), 10)
    assert frame is not None
    assert decode(raw, 1, 4, frame).responses == ()
    await still_serving(connect)


# --- 2. producer ids the broker never handed out ----------------------------------------------------------------


def _produce_v3(raw: RawClient, topic: str, producer_id: int) -> bytes:
    batch = build_batch(
        [RecordToWrite(b"v")],
        now_ms=int(time.time() * 1000),
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=0,
    )
    partition = raw.nested(0, 3, "PartitionProduceData", index=0, records=batch)
    topic_data = raw.nested(0, 3, "TopicProduceData", name=topic, partition_data=[partition])
    return raw.encode(0, 3, transactional_id=None, acks=-1, timeout=5000, topic_data=[topic_data])


async def test_produce_with_a_producer_id_never_handed_out_is_refused(
    raw: RawClient, connect: Connect, broker: Broker
) -> None:
    await broker.create_topic("hostile-ids", partitions=1)
    await raw.send_raw(_produce_v3(raw, "hostile-ids", INT64_MAX))
    response = raw.decode_response(0, 3, await raw.read_frame())
    (partition,) = response.responses[0].partition_responses
    assert partition.error_code == UNKNOWN_PRODUCER_ID
    assert broker.partition("hostile-ids", 0).high_watermark == 0

    # the InitProducerId v0 that came next: answered, with an id that fits
    frame = await send_hex(await connect(), "000000110016000000000002000178ffff0000ea60")
    assert frame is not None
    client = await connect()
    answer = decode(client, 22, 0, frame)
    assert answer.error_code == 0
    assert 0 <= answer.producer_id < 2**62

    # an id the broker did hand out is accepted at once
    await raw.send_raw(_produce_v3(raw, "hostile-ids", answer.producer_id))
    response = raw.decode_response(0, 3, await raw.read_frame())
    assert response.responses[0].partition_responses[0].error_code == 0
    await still_serving(connect)


# --- 3. a null array where the schema allows none ---------------------------------------------------------------


@pytest.mark.parametrize(
    "frame_hex",
    [
        pytest.param("0000001a0002000100000001000178ffffffff00000001000174ffffffff", id="list_offsets_v1_partitions"),
    ],
)
async def test_null_required_array_closes_the_connection_quietly(
    raw: RawClient, connect: Connect, frame_hex: str
) -> None:
    assert await send_hex(raw, frame_hex) is None
    await still_serving(connect)


# --- 4. the all-zero topic id -----------------------------------------------------------------------------------


async def test_produce_v13_with_the_zero_topic_id_gets_unknown_topic_id(raw: RawClient, connect: Connect) -> None:
    frame_hex = "0000002d0000000d0000000100017800000001000013880200000000000000000000000000000000020000000000000000"
    frame = await send_hex(raw, frame_hex)
    assert frame is not None
    response = decode(raw, 0, 13, frame)
    (partition,) = response.responses[0].partition_responses
    assert partition.error_code == UNKNOWN_TOPIC_ID
    await still_serving(connect)


async def test_fetch_v13_with_the_zero_topic_id_gets_unknown_topic_id(raw: RawClient, connect: Connect) -> None:
    partition = raw.nested(1, 13, "FetchPartition", partition=0, fetch_offset=0, partition_max_bytes=1024)
    topic = raw.nested(1, 13, "FetchTopic", topic_id=None, partitions=[partition])
    await raw.send_raw(
        raw.encode(1, 13, max_wait=0, min_bytes=1, max_bytes=1 << 20, topics=[topic], forgotten_topics_data=[])
    )
    response = raw.decode_response(1, 13, await raw.read_frame())
    assert response.responses[0].partitions[0].error_code == UNKNOWN_TOPIC_ID
    await still_serving(connect)


# --- 5. JoinGroup naming the same protocol twice ----------------------------------------------------------------

_JOIN_DUPLICATE_PROTOCOL = (
    "0000005a000b00000000000100017800096261642d67726f75700000177000000008636f6e73756d657200000002000572616e6765"
    "0000000d000000000001000174ffffffff000572616e67650000000d000000000001000174ffffffff"
)


async def test_join_group_with_a_duplicate_protocol_is_answered(raw: RawClient, connect: Connect) -> None:
    frame = await send_hex(raw, _JOIN_DUPLICATE_PROTOCOL)
    assert frame is not None
    first = decode(raw, 11, 0, frame)
    assert first.error_code == 0
    assert first.protocol_name == "range"

    # a second member joining with the duplicate: the group rebalances and both are answered
    second_raw = await connect()
    second = asyncio.ensure_future(send_hex(second_raw, _JOIN_DUPLICATE_PROTOCOL))
    rejoin = raw.encode(
        11,
        0,
        group_id="bad-group",
        session_timeout=6000,
        member_id=first.member_id,
        protocol_type="consumer",
        protocols=[raw.nested(11, 0, "JoinGroupRequestProtocol", name="range", metadata=b"\x00\x00\x00\x00\x00\x01")],
    )
    await raw.send_raw(rejoin)
    frames = await asyncio.wait_for(asyncio.gather(raw.read_frame(), second), 20)
    assert decode(raw, 11, 0, frames[0]).error_code == 0
    assert frames[1] is not None
    assert decode(second_raw, 11, 0, frames[1]).error_code == 0
    await still_serving(connect)


# --- 6. answers that could not be encoded -----------------------------------------------------------------------


async def test_metadata_v11_with_a_null_topic_name_gets_invalid_request(raw: RawClient, connect: Connect) -> None:
    frame = await send_hex(raw, "000000220003000b000000010001780002000000000000000000000000000000000000000000")
    assert frame is not None
    response = decode(raw, 3, 11, frame)
    assert [t.error_code for t in response.topics] == [INVALID_REQUEST]
    await still_serving(connect)


async def test_metadata_v12_looks_up_by_id_and_answers_the_zero_id_unknown(raw: RawClient, connect: Connect) -> None:
    topic = raw.nested(3, 12, "MetadataRequestTopic", topic_id=None, name=None)
    response = await raw.request(
        3, 12, topics=[topic], allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )
    assert [t.error_code for t in response.topics] == [UNKNOWN_TOPIC_ID]
    await still_serving(connect)


async def test_join_group_with_the_longest_client_id_gets_a_member_id_that_fits(connect: Connect) -> None:
    raw = await connect()
    protocol = raw.nested(11, 5, "JoinGroupRequestProtocol", name="range", metadata=b"\x00\x00\x00\x00\x00\x01")
    raw.correlation_id += 1
    header_client_id = "c" * 32767
    body = raw.encode(
        11,
        5,
        group_id="long-client",
        session_timeout=6000,
        rebalance_timeout=6000,
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[protocol],
    )
    # re-encode the header with the long client id (the raw client always sends "t")
    _, api_key, version, correlation_id = struct.unpack_from(">ihhi", body)
    rest = body[4 + 8 + 2 + 1 :]
    header = struct.pack(">hhih", api_key, version, correlation_id, len(header_client_id)) + header_client_id.encode()
    await raw.send_raw(struct.pack(">i", len(header) + len(rest)) + header + rest)
    answer = raw.decode_response(11, 5, await raw.read_frame())
    assert answer.error_code == 79  # MEMBER_ID_REQUIRED, carrying the new member id
    assert 0 < len(answer.member_id.encode()) <= 32767
    await still_serving(connect)


async def test_auto_create_of_an_illegal_topic_name_is_refused(raw: RawClient, connect: Connect) -> None:
    batch = build_batch([RecordToWrite(b"v")], now_ms=int(time.time() * 1000))
    partition = raw.nested(0, 3, "PartitionProduceData", index=0, records=batch)
    topic_data = raw.nested(0, 3, "TopicProduceData", name="bad/name..", partition_data=[partition])
    response = await raw.request(0, 3, transactional_id=None, acks=1, timeout=5000, topic_data=[topic_data])
    assert response.responses[0].partition_responses[0].error_code == 17  # INVALID_TOPIC_EXCEPTION
    await still_serving(connect)


async def test_metadata_naming_a_topic_many_times_answers_it_once(raw: RawClient, broker: Broker) -> None:
    await broker.create_topic("wide", partitions=50)
    topic = raw.nested(3, 9, "MetadataRequestTopic", name="wide")
    response = await raw.request(
        3,
        9,
        topics=[topic] * 1000,
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    assert [(t.name, len(t.partitions)) for t in response.topics] == [("wide", 50)]


async def test_an_error_message_quoting_the_longest_name_still_fits(raw: RawClient, connect: Connect) -> None:
    topic = raw.nested(
        19, 7, "CreatableTopic", name="s" * 32767, num_partitions=1, replication_factor=1, assignments=[], configs=[]
    )
    response = await raw.request(19, 7, topics=[topic], timeout=5000, validate_only=False)
    (result,) = response.topics
    assert result.error_code == 17  # INVALID_TOPIC_EXCEPTION: longer than 249 characters
    assert result.error_message
    assert len(result.error_message) <= 1024
    await still_serving(connect)
