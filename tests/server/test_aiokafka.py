"""aiokafka (async, pure Python) against the in-process server: metadata, produce, fetch, admin."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic

from kafkalite.broker import Broker
from kafkalite.server import KafkaServer

pytestmark = [pytest.mark.interop, pytest.mark.timeout(60)]


async def consume(server: KafkaServer, topic: str, partitions: int, count: int) -> list[Any]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=server.bootstrap, auto_offset_reset="earliest", enable_auto_commit=False
    )
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        received: list[Any] = []
        async with asyncio.timeout(20):
            while len(received) < count:
                batches = await consumer.getmany(timeout_ms=500)
                received += [m for messages in batches.values() for m in messages]
        return received
    finally:
        await consumer.stop()


@pytest.mark.parametrize("compression", [None, "gzip", "snappy", "lz4", "zstd"])
async def test_produce_and_fetch_round_trip(server: KafkaServer, compression: str | None) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=server.bootstrap, acks="all", compression_type=compression)
    await producer.start()
    try:
        for i in range(20):
            key = f"k{i}".encode() if i % 2 else None
            await producer.send_and_wait("orders", f"v{i}".encode(), key=key, headers=[("h", b"x")])
    finally:
        await producer.stop()
    received = await consume(server, "orders", 1, 20)
    assert [m.value for m in received] == [f"v{i}".encode() for i in range(20)]
    assert [m.offset for m in received] == list(range(20))
    assert received[1].key == b"k1"
    assert received[0].key is None
    assert received[0].headers == (("h", b"x"),)


@pytest.mark.parametrize("acks", [0, 1])
async def test_acks_0_and_1(server: KafkaServer, broker: Broker, acks: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=server.bootstrap, acks=acks)
    await producer.start()
    try:
        for i in range(10):
            await producer.send_and_wait("events", f"{i}".encode())
    finally:
        await producer.stop()
    received = await consume(server, "events", 1, 10)
    assert len(received) == 10


async def test_long_poll_returns_when_data_arrives(server: KafkaServer) -> None:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=server.bootstrap,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=5000,
        enable_auto_commit=False,
    )
    producer = AIOKafkaProducer(bootstrap_servers=server.bootstrap)
    await consumer.start()
    await producer.start()
    try:
        await producer.send_and_wait("poll", b"first")
        consumer.assign([TopicPartition("poll", 0)])
        assert (await asyncio.wait_for(consumer.getone(), 10)).value == b"first"
        waiting = asyncio.create_task(consumer.getone())
        await asyncio.sleep(0.3)
        started = asyncio.get_running_loop().time()
        await producer.send_and_wait("poll", b"second")
        message = await asyncio.wait_for(waiting, 10)
        assert message.value == b"second"
        assert asyncio.get_running_loop().time() - started < 2.5  # woken by the append, not by max_wait
    finally:
        await producer.stop()
        await consumer.stop()


async def test_admin_create_describe_grow_delete(server: KafkaServer, broker: Broker) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=server.bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic("admin-t", 2, 1, topic_configs={"retention.ms": "1000"})])
        assert len(broker.topic("admin-t").partitions) == 2
        await admin.create_partitions({"admin-t": NewPartitions(total_count=4)})
        assert len(broker.topic("admin-t").partitions) == 4
        assert "admin-t" in await admin.list_topics()
        await admin.delete_topics(["admin-t"])
        assert "admin-t" not in broker.topics
    finally:
        await admin.close()
