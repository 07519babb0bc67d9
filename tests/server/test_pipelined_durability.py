"""Pipelined durability: acks=all produces on one connection are appended in order, answered in order, each only
after its bytes are synced, and a slow fsync round covers the requests that arrived while it ran."""

from __future__ import annotations

import os
import struct
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from conftest import RawClient
from kafkalite.broker import Broker
from kafkalite.protocol.records import RecordToWrite, build_batch
from kafkalite.server import KafkaServer, serve
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
