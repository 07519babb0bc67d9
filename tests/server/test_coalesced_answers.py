"""Answers ready at once leave together (one write per loop turn), still in request order, and an answer is never
held back behind a request that blocks (a Fetch long poll)."""

from __future__ import annotations

import asyncio
import struct
import time

from conftest import RawClient
from kafkalite.protocol.records import RecordToWrite, build_batch
from kafkalite.server import KafkaServer

VERSION = 9


def _produce(raw: RawClient, topic: str, acks: int = 1) -> bytes:
    batch = build_batch([RecordToWrite(b"v")], now_ms=int(time.time() * 1000))
    partition = raw.nested(0, VERSION, "PartitionProduceData", index=0, records=batch)
    topic_data = raw.nested(0, VERSION, "TopicProduceData", name=topic, partition_data=[partition])
    return raw.encode(0, VERSION, transactional_id=None, acks=acks, timeout=1000, topic_data=[topic_data])


async def test_many_pipelined_answers_arrive_complete_and_in_order(server: KafkaServer) -> None:
    await server.broker.create_topic("coalesced", 1)
    raw = await RawClient.connect(server)
    try:
        frames = [_produce(raw, "coalesced", acks) for acks in [1] * 150 + [-1] + [1] * 50]
        await raw.send_raw(b"".join(frames))
        ids = [struct.unpack_from(">i", await raw.read_frame())[0] for _ in frames]
        assert ids == list(range(1, len(frames) + 1))
    finally:
        await raw.close()


async def test_an_answer_is_not_held_behind_a_long_poll(server: KafkaServer) -> None:
    await server.broker.create_topic("busy", 1)
    await server.broker.create_topic("quiet", 1)
    raw = await RawClient.connect(server)
    try:
        produce = _produce(raw, "busy")
        partition = raw.nested(1, 4, "FetchPartition", partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
        topic = raw.nested(1, 4, "FetchTopic", topic="quiet", partitions=[partition])
        fetch = raw.encode(1, 4, replica_id=-1, max_wait=5_000, min_bytes=1, max_bytes=1 << 20, topics=[topic])
        await raw.send_raw(produce + fetch)  # the Fetch waits up to 5 s for data that never comes
        began = time.monotonic()
        frame = await asyncio.wait_for(raw.read_frame(), 2.0)
        assert struct.unpack_from(">i", frame)[0] == 1
        assert time.monotonic() - began < 2.0
    finally:
        await raw.close()
