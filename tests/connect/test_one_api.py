"""One application, three deployments: the same code against the embedded broker, `kafkalite serve` and Tansu.

Every test here only touches the `broker` fixture's public interface (create_topic, producer(), consumer(),
consumer.run(handler, max_retries=...), dead_letters), so it is what a user's application would run unchanged.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import kafkalite
from kafkalite.errors import OffsetOutOfRangeError, UnknownPartitionError, UnknownTopicError, UnreachableError

TIMEOUT_S = 60.0
CONSUMER = {"session_timeout": 6.0, "heartbeat_interval": 0.3, "poll_interval": 0.05}
Names = Callable[[str], str]


async def eventually(condition: Callable[[], bool | Awaitable[bool]], what: str, timeout: float = TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while True:
        outcome = condition()
        if await outcome if isinstance(outcome, Awaitable) else outcome:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(0.02)


async def consume(consumer: Any, count: int) -> list[kafkalite.Message]:
    out: list[kafkalite.Message] = []
    async with asyncio.timeout(TIMEOUT_S):
        while len(out) < count:
            out += await consumer.getmany(max_records=count - len(out))
    return out


async def test_records_sent_together_keep_their_order(broker: Any, names: Names) -> None:
    topic = names("ordered")
    await broker.create_topic(topic, partitions=1)
    async with broker.producer() as producer:
        futures = [producer.send_soon(topic, b"%d" % i) for i in range(200)]
        metas = await asyncio.gather(*futures)
        batch = await producer.send_batch(topic, [b"b%d" % i for i in range(50)])
        unawaited = [producer.send_soon(topic, b"late") for _ in range(10)]
        await producer.flush()
        assert all(future.done() for future in unawaited)
    assert [m.offset for m in metas] == list(range(200))
    assert [m.offset for m in batch] == list(range(200, 250))


async def test_keys_route_by_md5_and_keyless_records_go_round_robin(broker: Any, names: Names) -> None:
    topic = names("routing")
    await broker.create_topic(topic, partitions=3)
    async with broker.producer() as producer:
        keyed = {key: await producer.send(topic, b"v", key=key) for key in (b"user-%d" % i for i in range(20))}
        again = await producer.send(topic, b"again", key=b"user-7")
        keyless = [await producer.send(topic, b"n%d" % i) for i in range(6)]
    for key, meta in keyed.items():
        assert meta.partition == int(hashlib.md5(key).hexdigest(), 16) % 3, key
    assert again.partition == keyed[b"user-7"].partition
    assert Counter(m.partition for m in keyless) == {0: 2, 1: 2, 2: 2}
    async with broker.consumer(topic, group_id=None, **CONSUMER) as reader:
        read = await consume(reader, 27)
    assert sorted((m.partition, m.offset) for m in read) == sorted(
        (m.partition, m.offset) for m in [*keyed.values(), again, *keyless]
    )
    assert {m.value for m in read if m.key == b"user-7"} == {b"v", b"again"}


async def test_groups_read_independently_and_a_group_splits_the_partitions(broker: Any, names: Names) -> None:
    topic, billing, audit = names("orders"), names("billing"), names("audit")
    await broker.create_topic(topic, partitions=4)
    members = [broker.consumer(topic, group_id=billing, name=f"billing-{i}", **CONSUMER) for i in (1, 2)]
    got: list[list[kafkalite.Message]] = [[], []]
    for member in members:
        await member.start()
    # Members take part in rebalances while they poll (embedded, as Kafka's Java consumer) or always (aiokafka).
    tasks = [asyncio.create_task(member.run(got[i].append)) for i, member in enumerate(members)]
    try:
        await eventually(lambda: sum(len(m.assignment()) for m in members) == 4, "the group to settle")
        assert not members[0].assignment() & members[1].assignment()
        assert members[0].assignment() | members[1].assignment() == {(topic, p) for p in range(4)}
        async with broker.producer() as producer:
            for i in range(40):
                await producer.send(topic, b"%d" % i, key=b"k%d" % i)
        await eventually(lambda: len(got[0]) + len(got[1]) >= 40, "the group to read everything")
        for mine, member in zip(got, members, strict=True):
            assert {(m.topic, m.partition) for m in mine} <= member.assignment()
    finally:
        for member in members:
            member.stop()
        await asyncio.wait_for(asyncio.gather(*tasks), TIMEOUT_S)
        for member in members:
            await member.close()
    assert sorted(m.value or b"" for m in got[0] + got[1]) == sorted(b"%d" % i for i in range(40))
    async with broker.consumer(topic, group_id=audit, **CONSUMER) as alone:
        assert alone.assignment() == {(topic, p) for p in range(4)}
        assert len(await consume(alone, 40)) == 40


async def test_a_member_leaving_hands_its_partitions_over_and_nothing_is_read_twice(broker: Any, names: Names) -> None:
    topic, group = names("orders"), names("billing")
    await broker.create_topic(topic, partitions=2)
    staying = broker.consumer(topic, group_id=group, name="staying", **CONSUMER)
    leaving = broker.consumer(topic, group_id=group, name="leaving", **CONSUMER)
    stayed: list[kafkalite.Message] = []
    await staying.start()
    task = asyncio.create_task(staying.run(stayed.append))
    try:
        await leaving.start()
        await eventually(lambda: len(staying.assignment()) == 1 and len(leaving.assignment()) == 1, "one each")
        [(_, moving)] = leaving.assignment()
        async with broker.producer() as producer:
            for i in range(20):
                await producer.send(topic, b"%d" % i, partition=i % 2)
        left = await consume(leaving, 5)
        await leaving.close()  # commits the 5 it handed out and leaves: its partition moves to `staying`
        await eventually(lambda: len(stayed) >= 15, "the rest, read by the member that stayed")
        await asyncio.sleep(0.3)  # long enough for a message read twice to show up
    finally:
        staying.stop()
        await asyncio.wait_for(task, TIMEOUT_S)
        await staying.close()
    assert [m.offset for m in left] == [0, 1, 2, 3, 4]
    assert sorted(m.offset for m in stayed if m.partition == moving) == [5, 6, 7, 8, 9]
    assert sorted(m.offset for m in stayed if m.partition != moving) == list(range(10))


async def test_commit_then_a_new_consumer_resumes_where_the_group_stopped(broker: Any, names: Names) -> None:
    topic, group = names("events"), names("reader")
    await broker.create_topic(topic, partitions=1)
    async with broker.producer() as producer:
        for i in range(10):
            await producer.send(topic, b"%d" % i)
    async with broker.consumer(topic, group_id=group, enable_auto_commit=False, **CONSUMER) as reader:
        assert [m.offset for m in await consume(reader, 4)] == [0, 1, 2, 3]
        await reader.commit()
        await consume(reader, 2)  # handed out but not committed: read again by the next member
    async with broker.consumer(topic, group_id=group, **CONSUMER) as again:
        assert again.position(topic, 0) == 4
        assert [m.offset for m in await consume(again, 6)] == [4, 5, 6, 7, 8, 9]
    async with broker.consumer(topic, group_id=group, **CONSUMER) as third:  # auto-commit on close stored 10
        assert third.position(topic, 0) == 10
        await third.seek(topic, 0, 7)  # replay from an offset
        assert [m.offset for m in await consume(third, 3)] == [7, 8, 9]
        with pytest.raises(OffsetOutOfRangeError):
            await third.seek(topic, 0, 11)
        with pytest.raises(UnknownPartitionError):
            await third.seek(topic, 5, 0)


async def test_a_failing_handler_is_retried_then_dead_lettered_with_spring_headers(broker: Any, names: Names) -> None:
    topic, group = names("payments"), names("billing")
    await broker.create_topic(topic, partitions=2)
    async with broker.producer() as producer:
        poison = await producer.send(topic, b"poison", key=b"k", headers=[("trace", b"t-1")])
        good = [await producer.send(topic, b"good-%d" % i, key=b"k") for i in range(3)]
    attempts: list[int] = []
    handled: list[int] = []

    async def handler(message: kafkalite.Message) -> None:
        if message.value == b"poison":
            attempts.append(message.offset)
            raise ValueError("cannot bill this")
        handled.append(message.offset)

    consumer = broker.consumer(topic, group_id=group, **CONSUMER)
    await consumer.start()
    task = asyncio.create_task(consumer.run(handler, max_retries=2, backoff=0.01))
    try:
        await eventually(lambda: len(handled) == 3, "the messages after the poison one")
    finally:
        consumer.stop()
        await asyncio.wait_for(task, TIMEOUT_S)
        await consumer.close()
    assert attempts == [poison.offset] * 3
    assert handled == [m.offset for m in good]
    [letter] = await broker.dead_letters.list(topic)
    assert letter.dlq_partition == poison.partition
    assert (letter.original_topic, letter.original_partition, letter.original_offset) == (
        topic,
        poison.partition,
        poison.offset,
    )
    assert (letter.exception_class, letter.exception_message) == ("builtins.ValueError", "cannot bill this")
    assert letter.consumer_group == group
    assert (letter.key, letter.value, letter.headers) == (b"k", b"poison", (("trace", b"t-1"),))


async def test_replay_goes_to_the_failing_group_only_and_once(broker: Any, names: Names) -> None:
    topic, billing, shipping = names("orders"), names("billing"), names("shipping")
    await broker.create_topic(topic, partitions=3)
    async with broker.producer() as producer:
        sent = [await producer.send(topic, b"order-%d" % i, key=b"c%d" % (i % 4)) for i in range(11)]
        poison = await producer.send(topic, b"poison", key=b"c1")
    fixed = False
    billed: list[kafkalite.Message] = []
    shipped: list[kafkalite.Message] = []

    async def bill(message: kafkalite.Message) -> None:
        if message.value == b"poison" and not fixed:
            raise ValueError("billing bug")
        billed.append(message)

    consumers = [
        broker.consumer(topic, group_id=billing, name="billing-1", **CONSUMER),
        broker.consumer(topic, group_id=shipping, name="shipping-1", **CONSUMER),
    ]
    for consumer in consumers:
        await consumer.start()
    tasks = [
        asyncio.create_task(consumers[0].run(bill, max_retries=1, backoff=0.01)),
        asyncio.create_task(consumers[1].run(shipped.append)),
    ]
    try:
        await eventually(lambda: len(billed) == 11 and len(shipped) == 12, "both groups to read everything")
        retry_topic = f"{topic}.{billing}.retry"
        await eventually(
            lambda: (retry_topic, poison.partition) in consumers[0].assignment(), "billing to read its retry topic"
        )
        fixed = True
        [planned] = await broker.dead_letters.replay(topic, dry_run=True)
        assert (planned.topic, planned.partition) == (retry_topic, poison.partition)
        assert await broker.dead_letters.replay(topic, group=shipping) == []  # shipping never failed
        [replayed] = await broker.dead_letters.replay(topic)
        assert (replayed.topic, replayed.letter.consumer_group) == (retry_topic, billing)
        assert await broker.dead_letters.replay(topic) == []  # once
        await eventually(lambda: len(billed) == 12, "the replayed letter")
        await asyncio.sleep(0.5)  # long enough for a copy to reach shipping, were one sent
    finally:
        for consumer in consumers:
            consumer.stop()
        await asyncio.wait_for(asyncio.gather(*tasks), TIMEOUT_S)
        for consumer in consumers:
            await consumer.close()
    assert sorted(m.value or b"" for m in billed) == sorted([*(b"order-%d" % i for i in range(11)), b"poison"])
    assert billed[-1].topic == retry_topic
    assert (billed[-1].key, billed[-1].partition) == (b"c1", poison.partition)
    assert sorted(m.offset for m in shipped if m.partition == poison.partition) == sorted(
        m.offset for m in [*sent, poison] if m.partition == poison.partition
    )  # every record once, from the topic itself: no replayed copy
    assert len(shipped) == 12


async def test_a_producer_facing_a_full_partition_retries_then_dead_letters(
    broker: Any, names: Names, deployment: str
) -> None:
    if deployment == "tansu":
        pytest.skip("partition capacity (max.partition.messages) is KafkaLite's own topic setting")
    topic = names("capped")
    await broker.create_topic(topic, partitions=1, config={"max.partition.messages": "2"})
    async with broker.producer(retry_backoff=0.01) as producer:
        kept = [await producer.send(topic, b"%d" % i) for i in range(2)]
        overflow = await producer.send(topic, b"overflow", key=b"k", headers=[("h", b"v")])
    assert [m.dead_lettered for m in kept] == [False, False]
    assert overflow.dead_lettered
    assert (overflow.topic, overflow.partition, overflow.offset) == (f"{topic}.DLQ", 0, 0)
    [letter] = await broker.dead_letters.list(topic)
    assert (letter.original_partition, letter.original_offset, letter.consumer_group) == (0, -1, None)
    assert letter.exception_class == "kafkalite.errors.PartitionFullError"
    assert (letter.key, letter.value, letter.headers) == (b"k", b"overflow", (("h", b"v"),))


async def test_unknown_topics_are_refused_by_name(broker: Any, names: Names) -> None:
    missing = names("no-such-topic")
    with pytest.raises(UnknownTopicError, match=missing):
        await broker.consumer(missing, group_id=names("g"), **CONSUMER).start()
    async with broker.producer() as producer:
        with pytest.raises(UnknownTopicError, match=missing):
            await producer.send(missing, b"v")
        existing = names("exists")
        await broker.create_topic(existing, partitions=2)
        with pytest.raises(UnknownPartitionError):
            await producer.send(existing, b"v", partition=2)


async def test_an_unreachable_cluster_is_one_clear_error() -> None:
    from ports import refusing_port

    with pytest.raises(UnreachableError, match=r"127\.0\.0\.1"):
        async with kafkalite.connect(f"127.0.0.1:{refusing_port()}", request_timeout_ms=2000):
            pass


@pytest.mark.parametrize("bad", ["", "localhost", "host:port", "host:0", "a:1,b"])
def test_a_bad_bootstrap_address_is_refused_before_connecting(bad: str) -> None:
    with pytest.raises(ValueError, match=r"HOST:PORT"):
        kafkalite.connect(bad)


def test_an_unknown_client_setting_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="sasl_pasword"):
        kafkalite.connect("localhost:9092", sasl_pasword="x")
