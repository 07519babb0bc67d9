"""Consumer groups over the wire with aiokafka: share, rebalance, commit/resume, restart, admin."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from groups_wire import SETTINGS, WAIT_S, balanced

from kafkalite.server import ThreadedServer, run_in_thread

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]


def consumer(server: ThreadedServer, group: str, **config: Any) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        bootstrap_servers=server.bootstrap,
        group_id=group,
        session_timeout_ms=3000,
        heartbeat_interval_ms=100,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        **config,
    )


async def produce(server: ThreadedServer, topic: str, partitions: int, per_partition: int) -> None:
    """Create `topic` and write `per_partition` messages to each of its partitions."""
    server.call(server.broker.create_topic(topic, partitions))
    producer = AIOKafkaProducer(bootstrap_servers=server.bootstrap, linger_ms=5)
    await producer.start()
    try:
        sent = [
            await producer.send(topic, f"{p}-{i}".encode(), partition=p)
            for p in range(partitions)
            for i in range(per_partition)
        ]
        await asyncio.wait_for(asyncio.gather(*sent), WAIT_S)
    finally:
        await producer.stop()


async def wait_until(done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def consume(c: AIOKafkaConsumer, count: int) -> list[Any]:
    received: list[Any] = []
    deadline = time.monotonic() + WAIT_S
    while len(received) < count:
        assert time.monotonic() < deadline, f"got {len(received)} of {count} messages"
        for batch in (await c.getmany(timeout_ms=100, max_records=count - len(received))).values():
            received.extend(batch)
    return received


async def describe(admin: AIOKafkaAdminClient, group: str) -> tuple[str, list[Any]]:
    """(state, members) of one group from a raw DescribeGroups response."""
    [response] = await admin.describe_consumer_groups([group])
    [described] = [g for g in response.groups if g[1] == group]
    _error, _group_id, state, _protocol_type, _protocol, members, *_ = described
    return state, members


async def listed(admin: AIOKafkaAdminClient) -> set[str]:
    return {g[0] for g in await admin.list_consumer_groups()}


@pytest.fixture
async def admin(threaded: ThreadedServer) -> AsyncIterator[AIOKafkaAdminClient]:
    client = AIOKafkaAdminClient(bootstrap_servers=threaded.bootstrap)
    await client.start()
    yield client
    await client.close()


async def test_three_consumers_share_then_rebalance_and_admin_sees_it(
    threaded: ThreadedServer, admin: AIOKafkaAdminClient
) -> None:
    threaded.call(threaded.broker.create_topic("shared", 6))
    consumers = [consumer(threaded, "aio-share", client_id=f"aio-{i}") for i in range(3)]
    try:
        for c in consumers:
            c.subscribe(["shared"])
            await c.start()
        await wait_until(balanced(consumers, 6), "3 consumers to share 6 partitions")

        state, members = await describe(admin, "aio-share")
        assert state == "Stable"
        assert sorted(m[1] for m in members) == ["aio-0", "aio-1", "aio-2"]
        assert "aio-share" in await listed(admin)

        await consumers.pop(0).stop()
        await wait_until(balanced(consumers, 6), "the 2 remaining consumers to take over all 6 partitions")
        assert sorted(len(c.assignment()) for c in consumers) == [3, 3]
        assert len((await describe(admin, "aio-share"))[1]) == 2
    finally:
        for c in consumers:
            await c.stop()
    assert (await describe(admin, "aio-share"))[0] == "Empty"


async def test_commit_close_and_resume_from_committed(threaded: ThreadedServer) -> None:
    await produce(threaded, "resume", 1, 20)
    first = consumer(threaded, "aio-resume")
    started = time.monotonic()
    first.subscribe(["resume"])
    await first.start()
    head = await consume(first, 1)
    print(f"\naiokafka: subscribe -> first message {time.monotonic() - started:.3f} s")
    head += await consume(first, 7)
    assert [m.offset for m in head] == list(range(8))
    await first.commit()
    await first.stop()

    second = consumer(threaded, "aio-resume")
    second.subscribe(["resume"])
    await second.start()
    try:
        assert [m.offset for m in await consume(second, 12)] == list(range(8, 20))
        assert await second.committed(TopicPartition("resume", 0)) == 8
    finally:
        await second.stop()


async def test_resume_exactly_from_committed_offsets_after_restart(tmp_path: Path) -> None:
    partitions = [TopicPartition("durable", p) for p in range(3)]
    with run_in_thread(data_dir=tmp_path, **SETTINGS) as server:
        await produce(server, "durable", 3, 10)
        c = consumer(server, "aio-durable")
        c.subscribe(["durable"])
        await c.start()
        try:
            await consume(c, 12)
            await c.commit()
            committed = {tp.partition: (await c.committed(tp)) or 0 for tp in partitions}
        finally:
            await c.stop()
    assert sum(committed.values()) == 12

    with run_in_thread(data_dir=tmp_path, **SETTINGS) as server:
        admin = AIOKafkaAdminClient(bootstrap_servers=server.bootstrap)
        await admin.start()
        try:
            assert "aio-durable" in await listed(admin)
            assert (await describe(admin, "aio-durable"))[0] == "Empty"
        finally:
            await admin.close()
        c = consumer(server, "aio-durable")
        c.subscribe(["durable"])
        await c.start()
        try:
            rest = await consume(c, 18)
        finally:
            await c.stop()
    assert sorted((m.partition, m.offset) for m in rest) == [(p, o) for p in range(3) for o in range(committed[p], 10)]
