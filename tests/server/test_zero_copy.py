"""Zero-copy Fetch answers of the file engine over a real socket: every version's framing, and the races.

The broker here keeps its partitions on disk (the conftest's `broker` is the memory engine), so large reads are
`FileRecords` sent with `sendfile`. Each answer is decoded by kio with every byte accounted for, and its records are
compared with what the log held when the Fetch was read, including when the log is truncated and rewritten,
or its segment deleted, while the answer is only partly delivered (a client with a tiny receive buffer that stops
reading). A cut in bytes not yet handed to the socket is `tests/storage/test_file_records.py`'s.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import uvloop
from test_versions import topic_ref, versions

from conftest import RawClient
from kafkalite.broker import Broker
from kafkalite.protocol.records import RecordToWrite, build_batch
from kafkalite.protocol.wire import ApiKey
from kafkalite.server import KafkaServer, serve
from kafkalite.storage import FileRecords
from kafkalite.storage.file_records import ZERO_COPY_MIN_BYTES

pytestmark = pytest.mark.timeout(120)

BATCH_VALUE = 60_000  # one record per batch: answers of a few batches are zero-copy ranges


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    async with Broker(data_dir=tmp_path / "data", fsync=False) as b:
        yield b


@pytest.fixture
async def server(broker: Broker) -> AsyncIterator[KafkaServer]:
    async with serve(broker, "127.0.0.1", 0) as s:
        yield s


def batch(tag: int, size: int = BATCH_VALUE) -> bytes:
    return build_batch([RecordToWrite(bytes([tag % 256]) * size, b"k%d" % tag)], now_ms=int(time.time() * 1000))


async def fill(broker: Broker, topic: str, partition: int, count: int, *, first_tag: int = 0) -> None:
    for n in range(count):
        await broker.produce(topic, partition, batch(first_tag + n), acks=1)


def fetch_request(raw: Any, version: int, topic: Any, max_bytes: int, *, isolation: int = 0, offset: int = 0) -> Any:
    partitions = [
        raw.nested(
            1, version, "FetchPartition", partition=p, fetch_offset=offset, partition_max_bytes=max_bytes,
            current_leader_epoch=-1, last_fetched_epoch=-1, log_start_offset=-1, replica_directory_id=None,
            high_watermark=-1,
        )
        for p in (0, 1)
    ]  # fmt: skip
    return {
        "cluster_id": None,
        "replica_id": -1,
        "replica_state": raw.nested(1, version, "ReplicaState", replica_id=-1, replica_epoch=-1),
        "max_wait": 0,
        "min_bytes": 1,
        "max_bytes": 2 * max_bytes,
        "isolation_level": isolation,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [topic_ref(raw, 1, version, "FetchTopic", topic.name, topic.topic_id, partitions=partitions)],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


@pytest.mark.parametrize("version", versions(ApiKey.FETCH))
@pytest.mark.parametrize("isolation", [0, 1])
async def test_every_version_frames_file_ranges_exactly(raw: Any, broker: Broker, version: int, isolation: int) -> None:
    topic = await broker.create_topic("zc", 2)
    await fill(broker, "zc", 0, 10)  # partition 0: a large range, sent from the file
    await broker.produce("zc", 1, batch(99, 100), acks=1)  # partition 1: small, copied
    expected = [broker.fetch("zc", p, 0, 1 << 20).records for p in (0, 1)]
    assert len(expected[0]) >= ZERO_COPY_MIN_BYTES > len(expected[1])
    response = await raw.request(1, version, **fetch_request(raw, version, topic, 1 << 20, isolation=isolation))
    p0, p1 = response.responses[0].partitions  # decode_response checked that every byte was consumed
    assert (p0.records, p1.records) == tuple(expected)
    assert (p0.high_watermark, p1.high_watermark) == (10, 1)
    assert (p0.aborted_transactions, p1.aborted_transactions) == (((), ()) if isolation else (None, None))


async def test_max_bytes_still_bounds_a_file_range_to_whole_batches(raw: Any, broker: Broker) -> None:
    topic = await broker.create_topic("zc", 2)
    await fill(broker, "zc", 0, 10)
    limit = 3 * len(batch(0)) + 100
    response = await raw.request(1, 12, **fetch_request(raw, 12, topic, limit))
    assert response.responses[0].partitions[0].records == broker.fetch("zc", 0, 0, 1 << 20).records[: limit - 100]


async def _stalled_fetch(server: KafkaServer, raw_request: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection with a tiny receive buffer that sends `raw_request` and reads nothing yet."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", server.port))
    reader, writer = await asyncio.open_connection(sock=sock, limit=4096)
    writer.write(raw_request)
    await writer.drain()
    return reader, writer


def _handed_out(broker: Broker, topic: str) -> list[FileRecords]:
    """The ranges of partition 0 handed out and not yet sent (the segments keep them to protect them)."""
    return [records for segment in broker.partition(topic, 0).log._segments for records in segment._handed_out]  # type: ignore[attr-defined]


async def _until_handed_off(broker: Broker, topic: str) -> FileRecords:
    """The range of the answer once the sender handed all of it off (what the socket took by reference, the rest as
    a copy) while the stalled client keeps the answer from completing."""
    for _ in range(500):
        ranges = _handed_out(broker, topic)
        if ranges and ranges[0].sent == ranges[0].size:
            return ranges[0]
        await asyncio.sleep(0.01)
    raise AssertionError(f"no handed-off range: {_handed_out(broker, topic)}")


async def _read_answer(raw: RawClient, reader: asyncio.StreamReader, version: int) -> Any:
    size = int.from_bytes(await asyncio.wait_for(reader.readexactly(4), 30), "big")
    return raw.decode_response(1, version, await asyncio.wait_for(reader.readexactly(size), 30))


async def test_a_truncation_under_a_partly_delivered_answer_does_not_change_its_bytes(
    raw: Any, broker: Broker, server: KafkaServer
) -> None:
    """The socket still references page-cache pages of what sendfile passed to it until the client reads them; a cut
    there moves the segment to a copy of its kept bytes, and the old file, still open by the range, never changes."""
    await _truncation_scenario(raw, broker, server)


def test_uvloop_sends_file_ranges_and_keeps_them_through_a_cut(tmp_path: Path) -> None:
    """The same over uvloop, the loop `kafkalite serve` runs on (its transports refuse `add_writer` on their own
    socket, which the sender waits on through a duplicate)."""

    async def scenario() -> None:
        async with Broker(data_dir=tmp_path / "uv", fsync=False) as b, serve(b, "127.0.0.1", 0) as s:
            raw = await RawClient.connect(s)
            try:
                await _truncation_scenario(raw, b, s)
            finally:
                await raw.close()

    uvloop.run(scenario())


async def _truncation_scenario(raw: Any, broker: Broker, server: KafkaServer) -> None:
    topic = await broker.create_topic("zc", 2)
    await fill(broker, "zc", 0, 150)  # about 9 MB: far more than the socket buffers hold
    expected = broker.fetch("zc", 0, 0, 16 << 20).records
    reader, writer = await _stalled_fetch(server, raw.encode(1, 12, **fetch_request(raw, 12, topic, 16 << 20)))
    try:
        sending = await _until_handed_off(broker, "zc")
        log_path = broker.partition("zc", 0).log._segments[-1].log_path  # type: ignore[attr-defined]
        broker.partition("zc", 0).log.truncate_to(1)  # cut inside what the answer promised ...
        await fill(broker, "zc", 0, 130, first_tag=200)  # ... and write other batches where it was
        assert broker.fetch("zc", 0, 0, 16 << 20).records != expected
        assert os.stat(log_path).st_ino != os.fstat(sending.fd).st_ino  # moved to a copy
        response = await _read_answer(raw, reader, 12)
        assert response.responses[0].partitions[0].records == expected
        assert not list(log_path.parent.glob("*.truncated"))
    finally:
        writer.close()


async def test_segments_deleted_under_a_partly_sent_answer_still_send_their_bytes(
    raw: Any, broker: Broker, server: KafkaServer
) -> None:
    topic = await broker.create_topic("zc", 2, config={"segment.bytes": str(8 << 20)})
    await fill(broker, "zc", 0, 200)  # two segments; the answer is the first, about 8 MB
    expected = broker.fetch("zc", 0, 0, 16 << 20).records
    first_segment = broker.partition("zc", 0).log._segments[0].log_path  # type: ignore[attr-defined]
    reader, writer = await _stalled_fetch(server, raw.encode(1, 12, **fetch_request(raw, 12, topic, 16 << 20)))
    try:
        sending = await _until_handed_off(broker, "zc")
        await broker.delete_records("zc", 0, broker.partition("zc", 0).high_watermark - 1)
        assert not first_segment.exists()
        assert sending.preserved is None  # sent from the unlinked file through the range's descriptor
        response = await _read_answer(raw, reader, 12)
        assert response.responses[0].partitions[0].records == expected
    finally:
        writer.close()


async def test_a_client_that_leaves_mid_answer_releases_the_ranges(
    raw: Any, broker: Broker, server: KafkaServer
) -> None:
    topic = await broker.create_topic("zc", 2)
    await fill(broker, "zc", 0, 150)
    _reader, writer = await _stalled_fetch(server, raw.encode(1, 12, **fetch_request(raw, 12, topic, 16 << 20)))
    sending = await _until_handed_off(broker, "zc")
    writer.transport.abort()
    for _ in range(500):
        if sending.closed:
            break
        await asyncio.sleep(0.01)
    assert sending.closed
    assert _handed_out(broker, "zc") == []
    response = await raw.request(1, 12, **fetch_request(raw, 12, topic, 1 << 20))  # the broker serves on
    assert response.responses[0].partitions[0].error_code == 0
