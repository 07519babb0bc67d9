"""Pipelined durability: acks=all produces on one connection are appended in order, answered in order, each only
after its bytes are synced, and a slow fsync round covers the requests that arrived while it ran, also while
requests keep arriving: a request waits for the round that covers its own bytes, not for the answers before it."""

from __future__ import annotations

import asyncio
import logging
import os
import struct
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest

from conftest import RawClient
from kafkalite.broker import Broker
from kafkalite.protocol.records import RecordToWrite, build_batch
from kafkalite.server import KafkaServer, serve
from kafkalite.server import server as server_module
from kafkalite.server.dispatch import ServerInfo, dispatch
from kafkalite.storage.file_ops import FileOps

pytestmark = pytest.mark.timeout(30)

REQUESTS = 12
VERSION = 9


class SlowSyncs:
    """Wraps `FileOps.fsync`: each fsync of a `.log` file takes a while, then notes the bytes it made durable."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.lock = threading.Lock()
        self.durable_bytes = 0  # of the partition's .log file
        self.log_syncs = 0

    def fsync(self, ops: FileOps, fd: int) -> None:
        size = os.fstat(fd).st_size
        is_log = os.readlink(f"/proc/self/fd/{fd}").endswith(".log")
        time.sleep(self.delay_s)
        os.fsync(fd)
        if is_log:
            with self.lock:
                self.durable_bytes = max(self.durable_bytes, size)
                self.log_syncs += 1


@pytest.fixture
def slow_syncs(monkeypatch: pytest.MonkeyPatch) -> SlowSyncs:
    syncs = SlowSyncs(delay_s=0.05)
    monkeypatch.setattr(FileOps, "fsync", lambda ops, fd: syncs.fsync(ops, fd))
    return syncs


@pytest.fixture
async def durable_server(tmp_path: Path, slow_syncs: SlowSyncs) -> AsyncIterator[KafkaServer]:
    async with Broker(data_dir=tmp_path) as broker, serve(broker, "127.0.0.1", 0) as server:
        yield server


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names descriptors through /proc")
async def test_pipelined_acks_all_are_appended_and_answered_in_order_after_sync(
    durable_server: KafkaServer, slow_syncs: SlowSyncs
) -> None:
    await durable_server.broker.create_topic("pipelined", 1)
    raw = await RawClient.connect(durable_server)
    try:
        batches = [
            build_batch([RecordToWrite(b"%d" % n * 100)], now_ms=int(time.time() * 1000)) for n in range(REQUESTS)
        ]
        frames = []
        for batch in batches:
            partition = raw.nested(0, VERSION, "PartitionProduceData", index=0, records=batch)
            topic = raw.nested(0, VERSION, "TopicProduceData", name="pipelined", partition_data=[partition])
            frames.append(raw.encode(0, VERSION, transactional_id=None, acks=-1, timeout=1000, topic_data=[topic]))
        await raw.send_raw(b"".join(frames))  # every request sent before the first answer is read

        answered: list[Any] = []
        for n in range(REQUESTS):
            frame = await raw.read_frame()
            with slow_syncs.lock:
                durable = slow_syncs.durable_bytes
            raw.correlation_id = n + 1
            response = raw.decode_response(0, VERSION, frame)  # checks the correlation id: answers in request order
            (partition_response,) = response.responses[0].partition_responses
            assert partition_response.error_code == 0
            answered.append(partition_response.base_offset)
            assert durable >= sum(len(b) for b in batches[: n + 1]), f"answer {n} left before its bytes were synced"
    finally:
        await raw.close()

    assert answered == list(range(REQUESTS))  # appended in request order: one record each
    assert slow_syncs.log_syncs < REQUESTS  # the waiting requests shared fsync rounds


def _produce_frame(raw: RawClient, topic_name: str, acks: int, value: bytes) -> bytes:
    batch = build_batch([RecordToWrite(value)], now_ms=int(time.time() * 1000))
    partition = raw.nested(0, VERSION, "PartitionProduceData", index=0, records=batch)
    topic = raw.nested(0, VERSION, "TopicProduceData", name=topic_name, partition_data=[partition])
    return raw.encode(0, VERSION, transactional_id=None, acks=acks, timeout=1000, topic_data=[topic])


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names descriptors through /proc")
async def test_requests_arriving_while_rounds_run_are_answered_by_the_next_round(
    durable_server: KafkaServer, slow_syncs: SlowSyncs
) -> None:
    """A steady stream of acks=all requests, one every 5 ms against fsync rounds of 50 ms: each round answers every
    request appended before it started, so the answers keep up with the requests a round behind. (Had a request
    started waiting only once the answers before it were written, it would find newer bytes in the log each time
    and need a round of its own: one answer per round, ever further behind.)"""
    slow_syncs.delay_s = 0.05
    await durable_server.broker.create_topic("stream", 1)
    raw = await RawClient.connect(durable_server)
    requests = 200
    offsets: list[int] = []

    async def read_answers() -> None:
        for n in range(requests):
            raw.correlation_id = n + 1
            response = raw.decode_response(0, VERSION, await raw.read_frame())
            (partition_response,) = response.responses[0].partition_responses
            assert partition_response.error_code == 0
            offsets.append(partition_response.base_offset)

    frames = [_produce_frame(raw, "stream", -1, b"%d" % n) for n in range(requests)]  # correlation ids 1, 2, ...
    reader = asyncio.create_task(read_answers())
    try:
        for frame in frames:
            await raw.send_raw(frame)
            await asyncio.sleep(0.005)
        answered_while_sending = len(offsets)
        await asyncio.wait_for(reader, 20)
    finally:
        reader.cancel()
        await raw.close()
    assert offsets == list(range(requests))
    assert answered_while_sending >= requests // 2, f"{answered_while_sending} of {requests} answered while sending"
    assert slow_syncs.log_syncs < requests // 4, f"{slow_syncs.log_syncs} fsync rounds for {requests} requests"


async def test_acks_1_behind_a_pending_acks_all_keeps_its_place(
    durable_server: KafkaServer, slow_syncs: SlowSyncs
) -> None:
    await durable_server.broker.create_topic("mixed", 1)
    raw = await RawClient.connect(durable_server)
    try:
        frames = []
        for acks in (-1, 1, -1, 1):
            batch = build_batch([RecordToWrite(b"v")], now_ms=int(time.time() * 1000))
            partition = raw.nested(0, VERSION, "PartitionProduceData", index=0, records=batch)
            topic = raw.nested(0, VERSION, "TopicProduceData", name="mixed", partition_data=[partition])
            frames.append(raw.encode(0, VERSION, transactional_id=None, acks=acks, timeout=1000, topic_data=[topic]))
        await raw.send_raw(b"".join(frames))
        ids = []
        for _ in frames:
            frame = await raw.read_frame()
            ids.append(struct.unpack_from(">i", frame)[0])
        assert ids == [1, 2, 3, 4]
    finally:
        await raw.close()


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names descriptors through /proc")
async def test_a_client_gone_before_its_answers_leaves_nothing_behind(
    durable_server: KafkaServer, slow_syncs: SlowSyncs, caplog: pytest.LogCaptureFixture
) -> None:
    """Answers still waiting for their round when the client goes: the round goes on (the records were appended and
    become durable), the answers are dropped without a trace in the log, and the next client is served."""
    slow_syncs.delay_s = 0.2
    await durable_server.broker.create_topic("gone", 1)
    raw = await RawClient.connect(durable_server)
    await raw.send_raw(b"".join(_produce_frame(raw, "gone", -1, b"%d" % n) for n in range(5)))
    await asyncio.sleep(0.05)  # appended, waiting for the round
    await raw.close()
    await asyncio.sleep(0.5)  # the round ends after the connection did
    assert slow_syncs.durable_bytes > 0

    raw = await RawClient.connect(durable_server)
    try:
        response = raw.decode_response(0, VERSION, await _send_one(raw, _produce_frame(raw, "gone", -1, b"next")))
        (partition_response,) = response.responses[0].partition_responses
        assert (partition_response.error_code, partition_response.base_offset) == (0, 5)
    finally:
        await raw.close()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text


async def _send_one(raw: RawClient, frame: bytes) -> bytes:
    await raw.send_raw(frame)
    return await raw.read_frame()


async def _pipelined_big_produces_at_shutdown(data_dir: Path, syncs: SlowSyncs) -> tuple[int, float]:
    """Eight acks=all produces of 300 KiB pipelined on one connection while fsync rounds take seconds, with the
    connection's byte bound at 1 MiB; then the server closes with half a second of grace. Returns how many were
    appended before the close, and how long the close took."""
    async with Broker(data_dir=data_dir) as broker:
        served = serve(broker, "127.0.0.1", 0, shutdown_grace_s=0.5)
        server = await served.__aenter__()
        await broker.create_topic("big", 1)
        raw = await RawClient.connect(server)
        syncs.delay_s = 3.0
        try:
            frames = [_produce_frame(raw, "big", -1, os.urandom(300 * 1024)) for _ in range(8)]
            raw.writer.write(b"".join(frames))
            await asyncio.sleep(0.5)  # appended up to the bound; the connection waits in `put`, busy
            appended = broker.partition("big", 0).log.log_end_offset
            began = time.perf_counter()
            await asyncio.wait_for(served.__aexit__(None, None, None), 10)
            return appended, time.perf_counter() - began
        finally:
            syncs.delay_s = 0.0  # the broker's own close fsyncs too
            raw.writer.transport.abort()


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names descriptors through /proc")
@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_pending_answers_hold_their_requests_bytes_and_close_cuts_them_after_the_grace(
    tmp_path: Path, slow_syncs: SlowSyncs, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, loop: str
) -> None:
    """The answers waiting for the disk count their requests' bytes toward the connection's bound, so the broker stops
    reading at 1 MiB of them; and a connection held there when the server closes is cut once the grace is over,
    without waiting for the fsync round or logging an error (`kafkalite serve` runs on uvloop, whose transports
    refuse a write once aborted)."""
    slow_syncs.delay_s = 0.0
    monkeypatch.setattr(server_module, "MAX_PENDING_BYTES", 1 << 20)
    run = asyncio.run if loop == "asyncio" else pytest.importorskip("uvloop").run
    appended, close_s = run(_pipelined_big_produces_at_shutdown(tmp_path, slow_syncs))
    assert appended <= 4, f"{appended} of 8 appended with 1 MiB of answers pending"
    assert close_s < 1.5, f"close took {close_s:.1f} s with a grace of 0.5 s and fsync rounds of 3 s"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


@pytest.mark.parametrize(
    ("engine", "fsync", "waits"),
    [("file", True, True), ("file", False, False), ("memory", True, False)],
    ids=["file-fsync", "file-no-fsync", "memory"],
)
async def test_acks_all_waits_only_where_there_is_something_to_sync(
    tmp_path: Path, engine: str, fsync: bool, waits: bool
) -> None:
    """With fsync off, or nothing on disk, an acks=all answer is ready when its append is done: no pending answer,
    no task (what a pending one costs per request is most of what acks=all adds there)."""
    async with Broker(data_dir=tmp_path if engine == "file" else None, fsync=fsync) as broker:
        await broker.create_topic("now", 1)
        assert broker.syncs_before_acks is waits
        raw = RawClient(cast(Any, None), cast(Any, None))  # used to encode and decode only
        for n in range(3):
            frame = _produce_frame(raw, "now", -1, b"v%d" % n)
            answer = await dispatch(broker, ServerInfo(0, "127.0.0.1", 9092), frame[4:], "127.0.0.1")
            if waits:
                assert isinstance(answer, asyncio.Task)
                answer = await answer
            assert type(answer) is bytes
            response = raw.decode_response(0, VERSION, answer[4:])
            (partition_response,) = response.responses[0].partition_responses
            assert (partition_response.error_code, partition_response.base_offset) == (0, n)
