"""Consumer groups driven by real clients: three members share partitions, one leaves, its partitions move; commits
are resumed from by the next member of the group."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka import Consumer, Producer

from kafkalite.server import KafkaServer, ThreadedServer

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]


def confluent_consumer(server: ThreadedServer, group: str) -> Any:
    return Consumer(
        {
            "bootstrap.servers": server.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
        }
    )


def poll_until(consumers: list[Any], done: Any, timeout_s: float = 40) -> list[Any]:
    received: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while not done(consumers, received) and time.monotonic() < deadline:
        for consumer in consumers:
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                received.append(message)
    return received


def test_confluent_group_of_three_rebalances_and_commits(threaded: ThreadedServer) -> None:
    threaded.call(threaded.broker.create_topic("grp", 6))
    producer = Producer({"bootstrap.servers": threaded.bootstrap})
    for i in range(60):
        producer.produce("grp", f"{i}".encode(), partition=i % 6)
    assert producer.flush(20) == 0

    consumers = [confluent_consumer(threaded, "g3") for _ in range(3)]
    for consumer in consumers:
        consumer.subscribe(["grp"])

    def all_assigned(cs: list[Any], _: list[Any]) -> bool:
        return sum(len(c.assignment()) for c in cs) == 6 and all(c.assignment() for c in cs)

    received = poll_until(consumers, all_assigned)
    seen = {int(m.value()) for m in received}  # a rebalance may deliver some twice: at least once
    seen |= {int(m.value()) for m in poll_until(consumers, lambda cs, r: len(seen | {int(m.value()) for m in r}) == 60)}
    assert seen == set(range(60))
    for consumer in consumers:
        consumer.commit(asynchronous=False)

    consumers[0].close()  # LeaveGroup: its partitions move to the other two
    survivors = consumers[1:]
    poll_until(survivors, lambda cs, _: sum(len(c.assignment()) for c in cs) == 6)
    assert sum(len(c.assignment()) for c in survivors) == 6
    for consumer in survivors:
        consumer.close()

    committed = threaded.broker.offsets.committed("g3")
    assert {key: c.offset for key, c in committed.items()} == {("grp", p): 10 for p in range(6)}


async def test_aiokafka_group_commits_and_resumes(server: KafkaServer) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=server.bootstrap)
    await producer.start()
    try:
        for i in range(10):
            await producer.send_and_wait("ag", f"{i}".encode())
    finally:
        await producer.stop()

    async def consume_some(count: int) -> list[bytes]:
        consumer = AIOKafkaConsumer(
            "ag",
            bootstrap_servers=server.bootstrap,
            group_id="ag",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await consumer.start()
        try:
            values = []
            async with asyncio.timeout(30):
                while len(values) < count:
                    values.append((await consumer.getone()).value)
            await consumer.commit()
            return values
        finally:
            await consumer.stop()

    assert await consume_some(4) == [f"{i}".encode() for i in range(4)]
    assert (await consume_some(1))[0] == b"4"  # resumed from the committed offset
