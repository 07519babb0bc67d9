"""Bad input closes only the offending connection; unknown keys and versions are answered as Kafka does."""

from __future__ import annotations

import asyncio
import os
import struct
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import RawClient
from kafkalite.broker import Broker
from kafkalite.protocol.records import RecordToWrite, build_batch
from kafkalite.server import KafkaServer, serve

pytestmark = pytest.mark.timeout(30)


async def assert_still_serving(connect: Any) -> None:
    client = await connect()
    response = await client.request(18, 3, client_software_name="t", client_software_version="1")
    assert response.error_code == 0


async def test_api_versions_lists_every_handler(raw: Any) -> None:
    response = await raw.request(18, 3, client_software_name="t", client_software_version="1")
    ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert ranges[18] == (0, 4)
    assert ranges[0] == (3, 13)
    assert ranges[1] == (4, 18)
    assert ranges[3] == (0, 13)


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
async def test_api_versions_every_version(raw: Any, version: int) -> None:
    fields = {"client_software_name": "t", "client_software_version": "1"} if version >= 3 else {}
    response = await raw.request(18, version, **fields)
    assert response.error_code == 0
    assert len(response.api_keys) >= 4


async def test_api_versions_above_our_range_gets_the_v0_fallback(raw: Any) -> None:
    # a v9 ApiVersions request: header v2 and a body we cannot know; the reply is a v0 body with error 35
    body = struct.pack(">hhih", 18, 9, 1234, 1) + b"x" + b"\x00" + b"future body"
    await raw.send_raw(struct.pack(">i", len(body)) + body)
    frame = await raw.read_frame()
    raw.correlation_id = 1234
    response = raw.decode_response(18, 0, frame)
    assert response.error_code == 35
    assert {k.api_key for k in response.api_keys} >= {0, 1, 3, 18}
    assert (await raw.request(18, 3, client_software_name="t", client_software_version="1")).error_code == 0


async def test_unsupported_version_of_another_api_closes(raw: Any, connect: Any) -> None:
    body = struct.pack(">hhih", 0, 2, 1, -1) + b"\x00" * 20  # Produce v2: legacy message sets, not served
    await raw.send_raw(struct.pack(">i", len(body)) + body)
    assert await raw.is_closed_by_server()
    await assert_still_serving(connect)


async def test_unknown_api_key_closes(raw: Any, connect: Any) -> None:
    body = struct.pack(">hhih", 999, 0, 1, -1)
    await raw.send_raw(struct.pack(">i", len(body)) + body)
    assert await raw.is_closed_by_server()
    await assert_still_serving(connect)


async def test_oversized_frame_closes_before_the_body_is_sent(raw: Any, connect: Any) -> None:
    await raw.send_raw(struct.pack(">i", 1024 * 1024 + 1))  # the fixture's limit is 1 MiB
    assert await raw.is_closed_by_server()
    await assert_still_serving(connect)


@pytest.mark.parametrize(
    "payload",
    [
        struct.pack(">i", -5),
        struct.pack(">i", 3) + b"abc",  # shorter than a request header
        struct.pack(">i", 8 + 30) + struct.pack(">hhi", 3, 12, 1) + b"\xff" * 30,  # garbage after the fixed header
    ],
    ids=["negative-size", "short-header", "garbage-body"],
)
async def test_malformed_frames_close_only_that_connection(raw: Any, connect: Any, payload: bytes) -> None:
    bystander = await connect()
    await raw.send_raw(payload)
    assert await raw.is_closed_by_server()
    response = await bystander.request(18, 3, client_software_name="t", client_software_version="1")
    assert response.error_code == 0


async def test_pipelined_requests_are_answered_in_order(raw: Any) -> None:
    frames = b"".join(raw.encode(18, 3, client_software_name="t", client_software_version="1") for _ in range(20))
    await raw.send_raw(frames)
    for expected in range(1, 21):
        frame = await raw.read_frame()
        assert struct.unpack_from(">i", frame)[0] == expected


async def test_a_client_that_disconnects_mid_frame_is_forgotten(connect: Any) -> None:
    client = await connect()
    await client.send_raw(struct.pack(">i", 100) + b"partial")
    await client.close()
    await asyncio.sleep(0.05)
    await assert_still_serving(connect)


async def test_many_idle_connections(connect: Any, server: KafkaServer) -> None:
    clients = [await connect() for _ in range(1000)]
    await assert_still_serving(connect)
    response = await clients[0].request(18, 3, client_software_name="t", client_software_version="1")
    assert response.error_code == 0
    await server.close()  # idle connections are cancelled at once
    assert await clients[-1].is_closed_by_server()


@pytest.fixture
def quick_buffer_release(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("kafkalite.server.server.BUFFER_RELEASE_IDLE_S", 0.1)


async def test_a_quiet_connection_gives_its_receive_buffer_back_and_is_served_after(
    quick_buffer_release: None, server: KafkaServer, connect: Any
) -> None:
    client = await connect()
    assert (await client.request(18, 3, client_software_name="t", client_software_version="1")).error_code == 0
    (connection,) = server._connections
    assert connection.stream.frames.capacity > 0
    async with asyncio.timeout(5):
        while connection.stream.frames.capacity:
            await asyncio.sleep(0.05)
    assert (await client.request(18, 3, client_software_name="t", client_software_version="1")).error_code == 0


async def test_closing_the_server_cuts_a_client_that_stopped_reading_once_the_grace_is_over(tmp_path: Path) -> None:
    """A client pipelines Fetches of a big record and never reads the answers, so the connection's writer waits for
    a socket that never drains. `close()` gives it the grace, then cuts the connection instead of waiting for ever."""
    async with Broker(data_dir=tmp_path) as broker:
        served = serve(broker, "127.0.0.1", 0, shutdown_grace_s=0.5)
        server = await served.__aenter__()
        raw = await RawClient.connect(server)
        try:
            await broker.create_topic("unread", 1)
            batch = build_batch([RecordToWrite(os.urandom(900 * 1024))], now_ms=int(time.time() * 1000))
            partition = raw.nested(0, 9, "PartitionProduceData", index=0, records=batch)
            topic = raw.nested(0, 9, "TopicProduceData", name="unread", partition_data=[partition])
            await raw.request(0, 9, transactional_id=None, acks=1, timeout=1000, topic_data=[topic])
            fetch_partition = raw.nested(
                1, 12, "FetchPartition", partition=0, fetch_offset=0, partition_max_bytes=1 << 20,
                current_leader_epoch=-1, log_start_offset=-1, last_fetched_epoch=-1,
            )  # fmt: skip
            fetch_topic = raw.nested(1, 12, "FetchTopic", topic="unread", partitions=[fetch_partition])
            fetch = {"replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0}
            fetch |= {"session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": ""}
            raw.writer.write(b"".join(raw.encode(1, 12, topics=[fetch_topic], **fetch) for _ in range(100)))
            await asyncio.sleep(1.0)  # the broker's answers fill the socket, and the client reads none
            began = time.perf_counter()
            await asyncio.wait_for(served.__aexit__(None, None, None), 10)
            assert time.perf_counter() - began < 5
        finally:
            raw.writer.transport.abort()
