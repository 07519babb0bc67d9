"""Dead letters from both paths (a failing consumer handler, a producer facing a full partition), with Spring Kafka's
headers, listed and replayed exactly once."""

from __future__ import annotations

import asyncio
import struct
import time
from collections.abc import Awaitable, Callable

import pytest

import kafkalite
from broker.harness import TIMEOUT_S, consumer, wait_for
from kafkalite.errors import InvalidTopicError, PartitionFullError
from kafkalite.protocol.records import iter_records, read_header

TOPIC = "orders"


class PoisonError(ValueError):
    pass


async def wait_for_async(count: Callable[[], Awaitable[int]], expected: int, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while await count() < expected:
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


def raw_dead_letters(broker: kafkalite.Broker, partition: int) -> list[dict[str, bytes | None]]:
    """The dead-letter records' headers as stored, read with the plain fetch path (no DeadLetterQueue decoding)."""
    data = broker.fetch(TOPIC + ".DLQ", partition, 0, 1 << 20).records
    out = []
    pos = 0
    while pos < len(data):
        header = read_header(data, pos)
        out.extend(dict(record.headers) for record in iter_records(data, pos))
        pos += header.size
    return out


async def test_failing_handler_is_retried_then_dead_lettered_and_the_consumer_moves_on(
    broker: kafkalite.Broker,
) -> None:
    await broker.create_topic(TOPIC, partitions=3)
    async with broker.producer() as producer:
        poison = await producer.send(TOPIC, b"poison", key=b"k", headers=[("trace", b"t-1")], timestamp=777)
        good = [await producer.send(TOPIC, b"good-%d" % i, key=b"k") for i in range(3)]
    attempts: list[int] = []
    handled: list[int] = []

    async def handler(message: kafkalite.Message) -> None:
        if message.value == b"poison":
            attempts.append(message.offset)
            raise PoisonError("cannot bill this")
        handled.append(message.offset)

    c = consumer(broker, TOPIC, "billing")
    await c.start()
    task = asyncio.create_task(c.run(handler, max_retries=3, backoff=0.001))
    await wait_for(lambda: len(handled) == 3, what="the messages after the poison one")
    c.stop()
    async with asyncio.timeout(TIMEOUT_S):
        await task
    await c.close()

    assert attempts == [poison.offset] * 4  # the first try and 3 retries
    assert handled == [m.offset for m in good]
    [letter] = await broker.dead_letters.list(TOPIC)
    assert letter.dlq_partition == poison.partition  # same partition number as the original
    assert (letter.original_topic, letter.original_partition, letter.original_offset) == (
        TOPIC,
        poison.partition,
        poison.offset,
    )
    assert letter.original_timestamp == 777
    assert letter.exception_class == f"{__name__}.PoisonError"
    assert letter.exception_message == "cannot bill this"
    assert letter.consumer_group == "billing"
    assert (letter.key, letter.value, letter.headers) == (b"k", b"poison", (("trace", b"t-1"),))

    [headers] = raw_dead_letters(broker, poison.partition)
    assert headers["kafka_dlt-original-topic"] == b"orders"
    assert headers["kafka_dlt-original-partition"] == struct.pack(">i", poison.partition)
    assert headers["kafka_dlt-original-offset"] == struct.pack(">q", poison.offset)
    assert headers["kafka_dlt-original-timestamp"] == struct.pack(">q", 777)
    assert headers["kafka_dlt-original-timestamp-type"] == b"CreateTime"
    assert headers["kafka_dlt-original-consumer-group"] == b"billing"
    assert headers["kafka_dlt-exception-fqcn"] == f"{__name__}.PoisonError".encode()
    assert headers["kafka_dlt-exception-message"] == b"cannot bill this"
    assert b"PoisonError" in (headers["kafka_dlt-exception-stacktrace"] or b"")
    assert headers["trace"] == b"t-1"


async def test_a_failing_handler_never_kills_its_consumer(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    async with broker.producer() as producer:
        for i in range(10):
            await producer.send(TOPIC, b"%d" % i)
    seen: list[int] = []

    def handler(message: kafkalite.Message) -> None:  # a plain function works too
        seen.append(message.offset)
        if message.offset % 2:
            raise RuntimeError(f"odd offset {message.offset}")
        if message.offset == 4:
            raise KeyError("weird")

    c = consumer(broker, TOPIC, "g")
    await c.start()
    task = asyncio.create_task(c.run(handler, max_retries=0))
    await wait_for(lambda: seen[-1:] == [9], what="the last message")
    assert not task.done()
    c.stop()
    async with asyncio.timeout(TIMEOUT_S):
        await task
    await c.close()
    assert seen == list(range(10))
    assert [d.original_offset for d in (await broker.dead_letters.list(TOPIC))] == [1, 3, 4, 5, 7, 9]


async def test_producer_into_a_full_partition_retries_then_dead_letters(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1, config={"max.partition.messages": "2"})
    async with broker.producer(retry_backoff=0.01) as producer:
        kept = [await producer.send(TOPIC, b"%d" % i) for i in range(2)]
        loop = asyncio.get_running_loop()
        began = loop.time()
        overflow = await producer.send(TOPIC, b"overflow", key=b"k", headers=[("h", b"v")])
        waited = loop.time() - began
    assert [m.offset for m in kept] == [0, 1]
    assert not any(m.dead_lettered for m in kept)
    assert overflow.dead_lettered
    assert (overflow.topic, overflow.partition, overflow.offset) == (TOPIC + ".DLQ", 0, 0)
    assert waited >= 0.01 + 0.02 + 0.04  # 3 retries, exponential backoff
    assert broker.partition(TOPIC, 0).high_watermark == 2
    [letter] = await broker.dead_letters.list(TOPIC)
    assert (letter.original_topic, letter.original_partition, letter.original_offset) == (TOPIC, 0, -1)
    assert letter.exception_class == "kafkalite.errors.PartitionFullError"
    assert "full" in letter.exception_message
    assert letter.consumer_group is None
    assert (letter.key, letter.value, letter.headers) == (b"k", b"overflow", (("h", b"v"),))
    [headers] = raw_dead_letters(broker, 0)
    assert headers["kafka_dlt-original-partition"] == struct.pack(">i", 0)
    assert headers["kafka_dlt-original-offset"] == struct.pack(">q", -1)
    assert headers["kafka_dlt-exception-fqcn"] == b"kafkalite.errors.PartitionFullError"


async def test_producer_without_dead_letter_raises_partition_full(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1, config={"max.partition.messages": "1"})
    async with broker.producer(retry_backoff=0.001, dead_letter=False) as producer:
        await producer.send(TOPIC, b"a")
        try:
            await producer.send(TOPIC, b"b")
        except PartitionFullError:
            pass
        else:
            raise AssertionError("PartitionFullError expected")
    assert TOPIC + ".DLQ" not in broker.topics


async def test_full_partition_by_bytes_dead_letters_too(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1, config={"max.partition.bytes": "200"})
    async with broker.producer(retry_backoff=0.001) as producer:
        metas = [await producer.send(TOPIC, b"x" * 50) for _ in range(4)]
    assert [m.dead_lettered for m in metas][:1] == [False]
    assert metas[-1].dead_lettered
    assert broker.partition(TOPIC, 0).log.size_bytes <= 200


async def test_dead_letters_keep_the_original_partition_number(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=3, config={"max.partition.messages": "1"})
    async with broker.producer(retry_backoff=0.001) as producer:
        for p in range(3):
            await producer.send(TOPIC, b"fill", partition=p)
        metas = [await producer.send(TOPIC, b"late-%d" % p, partition=p) for p in (2, 0, 1)]
    assert [(m.partition, m.dead_lettered) for m in metas] == [(2, True), (0, True), (1, True)]
    assert len(broker.topic(TOPIC + ".DLQ").partitions) == 3
    assert [(d.dlq_partition, d.original_partition, d.value) for d in (await broker.dead_letters.list(TOPIC))] == [
        (0, 0, b"late-0"),
        (1, 1, b"late-1"),
        (2, 2, b"late-2"),
    ]


async def test_replay_goes_to_the_failing_group_alone_once(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=2)
    async with broker.producer() as producer:
        poison = await producer.send(TOPIC, b"poison", key=b"k", headers=[("trace", b"t-1")])
    fixed = False
    billed: list[kafkalite.Message] = []
    shipped: list[kafkalite.Message] = []

    async def bill(message: kafkalite.Message) -> None:
        if not fixed:
            raise PoisonError("nope")
        billed.append(message)

    billing = consumer(broker, TOPIC, "billing")
    fulfillment = consumer(broker, TOPIC, "fulfillment")
    await billing.start()
    await fulfillment.start()
    tasks = [
        asyncio.create_task(billing.run(bill, max_retries=1, backoff=0.001)),
        asyncio.create_task(fulfillment.run(shipped.append)),
    ]

    async def letters() -> int:
        return len(await broker.dead_letters.list(TOPIC))

    await wait_for_async(letters, 1, what="the dead letter")
    assert TOPIC + ".billing.retry" in broker.topics  # created with the letter, so billing subscribes before replay
    await wait_for(lambda: (TOPIC + ".billing.retry", poison.partition) in billing.assignment(), what="subscription")
    fixed = True
    assert [r.letter.dlq_offset for r in await broker.dead_letters.replay(TOPIC, dry_run=True)] == [0]
    [replay] = await broker.dead_letters.replay(TOPIC)
    assert (replay.topic, replay.partition) == (TOPIC + ".billing.retry", poison.partition)
    assert await broker.dead_letters.replay(TOPIC) == []
    await wait_for(lambda: len(billed) == 1, what="the replayed letter")
    [again] = billed
    assert (again.topic, again.partition, again.offset) == (TOPIC + ".billing.retry", poison.partition, 0)
    assert (again.key, again.value, again.headers) == (b"k", b"poison", (("trace", b"t-1"),))
    await asyncio.sleep(0.2)  # fulfillment would have seen a copy by now
    assert [(m.topic, m.offset) for m in shipped] == [(TOPIC, poison.offset)]
    assert broker.partition(TOPIC, poison.partition).high_watermark == poison.offset + 1
    for c in (billing, fulfillment):
        c.stop()
    async with asyncio.timeout(TIMEOUT_S):
        await asyncio.gather(*tasks)
    for c in (billing, fulfillment):
        await c.close()
    assert await letters() == 1  # replay does not delete the dead letter


async def test_a_replay_failing_again_is_a_dead_letter_of_the_original_topic(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    await broker.dead_letters.send(TOPIC, 0, b"k", b"v", [], PoisonError("first"), offset=5, group_id="billing")
    await broker.dead_letters.replay(TOPIC)
    c = consumer(broker, TOPIC, "billing", auto_offset_reset="latest")  # the retry topic is read from its start

    async def fail(message: kafkalite.Message) -> None:
        raise PoisonError("again")

    await c.start()
    task = asyncio.create_task(c.run(fail, max_retries=0))

    async def letters() -> int:
        return len(await broker.dead_letters.list(TOPIC))

    await wait_for_async(letters, 2, what="the second dead letter")
    c.stop()
    async with asyncio.timeout(TIMEOUT_S):
        await task
    await c.close()
    second = (await broker.dead_letters.list(TOPIC))[1]
    assert (second.original_topic, second.consumer_group, second.exception_message) == (TOPIC, "billing", "again")
    assert [r.topic for r in await broker.dead_letters.replay(TOPIC)] == [TOPIC + ".billing.retry"]


async def test_replay_of_one_group_leaves_the_others_pending(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    for offset, group in enumerate(["billing", "fulfillment", None, "billing"]):
        await broker.dead_letters.send(TOPIC, 0, None, b"%d" % offset, [], PoisonError("x"), group_id=group)
    billing = await broker.dead_letters.replay(TOPIC, group="billing")
    assert [(r.letter.dlq_offset, r.topic) for r in billing] == [
        (0, TOPIC + ".billing.retry"),
        (3, TOPIC + ".billing.retry"),
    ]
    assert await broker.dead_letters.replay(TOPIC, group="billing") == []
    rest = await broker.dead_letters.replay(TOPIC)
    assert [(r.letter.dlq_offset, r.topic) for r in rest] == [(1, TOPIC + ".fulfillment.retry"), (2, TOPIC)]
    assert await broker.dead_letters.replay(TOPIC) == []
    await broker.dead_letters.send(TOPIC, 0, None, b"4", [], PoisonError("x"), group_id="billing")
    assert [r.letter.dlq_offset for r in await broker.dead_letters.replay(TOPIC, group="fulfillment")] == []
    assert [r.letter.dlq_offset for r in await broker.dead_letters.replay(TOPIC)] == [4]


async def test_a_group_that_cannot_name_a_topic_gets_a_clear_error_on_replay(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    await broker.dead_letters.send(TOPIC, 0, None, b"v", [], PoisonError("x"), group_id="team/billing")
    with pytest.raises(InvalidTopicError, match="team/billing"):
        await broker.dead_letters.replay(TOPIC)


async def test_two_replays_at_once_republish_each_dead_letter_once(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    for offset in range(3):
        await broker.dead_letters.send(TOPIC, 0, b"k", b"v%d" % offset, [], PoisonError("nope"), offset=offset)
    replays = await asyncio.gather(broker.dead_letters.replay(TOPIC), broker.dead_letters.replay(TOPIC))
    assert sorted(map(len, replays)) == [0, 3]
    assert broker.partition(TOPIC, 0).high_watermark == 3


async def test_replay_of_a_topic_without_dead_letters_is_a_no_op(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    assert (await broker.dead_letters.list(TOPIC)) == []
    assert len(await broker.dead_letters.replay(TOPIC)) == 0


async def test_concurrent_sends_into_a_nearly_full_partition_fill_it_and_dead_letter_only_the_rest(
    broker: kafkalite.Broker,
) -> None:
    """Sends in flight together are batched; a batch too big for the room left must not dead-letter the records that
    fit."""
    await broker.create_topic(TOPIC, partitions=1, config={"max.partition.messages": "3"})
    async with broker.producer(retry_backoff=0.001) as producer:
        await producer.send(TOPIC, b"first")
        metas = await asyncio.gather(*(producer.send(TOPIC, b"%d" % i) for i in range(4)))
    assert [m.dead_lettered for m in metas] == [False, False, True, True]
    assert [m.offset for m in metas[:2]] == [1, 2]
    assert broker.partition(TOPIC, 0).high_watermark == 3
    assert [d.value for d in (await broker.dead_letters.list(TOPIC))] == [b"2", b"3"]


async def test_first_dead_letters_of_several_partitions_at_once_create_the_dlq_once(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=3, config={"max.partition.messages": "1"})
    async with broker.producer(retry_backoff=0.001) as producer:
        for p in range(3):
            await producer.send(TOPIC, b"fill", partition=p)
        metas = await asyncio.gather(*(producer.send(TOPIC, b"x%d" % p, partition=p) for p in range(3)))
    assert all(m.dead_lettered for m in metas)
    assert [p.index for p in broker.topic(TOPIC + ".DLQ").partitions] == [0, 1, 2]
    assert [(d.dlq_partition, d.value) for d in (await broker.dead_letters.list(TOPIC))] == [
        (0, b"x0"),
        (1, b"x1"),
        (2, b"x2"),
    ]
