"""`Producer.send_batch`, the bulk path: same placement, metadata, ordering, retries and dead letters as `send`."""

from __future__ import annotations

import asyncio

import pytest

import kafkalite
from broker.harness import consume, consumer
from kafkalite import errors
from kafkalite.client.partitioners import Partitioner

TOPIC = "orders"


@pytest.mark.parametrize("partitioner", ["md5", "murmur2", "round_robin"])
@pytest.mark.parametrize("key", [None, b"user-1"])
async def test_places_records_as_that_many_sends_would(
    broker: kafkalite.Broker, partitioner: str, key: bytes | None
) -> None:
    await broker.create_topic(TOPIC, partitions=3)
    reference = Partitioner(partitioner)  # type: ignore[arg-type]
    async with broker.producer(partitioner=partitioner) as producer:
        first = await producer.send_batch(TOPIC, [b"%d" % i for i in range(7)], key=key)
        single = await producer.send(TOPIC, b"after", key=key)
        second = await producer.send_batch(TOPIC, [b"x"] * 5, key=key)
    expected = [reference.partition(TOPIC, key, 3) for _ in range(13)]
    assert [m.partition for m in [*first, single, *second]] == expected
    assert all(m.topic == TOPIC and not m.dead_lettered for m in [*first, *second])
    by_partition: dict[int, list[int]] = {}
    for m in [*first, single, *second]:
        by_partition.setdefault(m.partition, []).append(m.offset)
    assert all(offsets == list(range(len(offsets))) for offsets in by_partition.values())
    async with consumer(broker, TOPIC, None) as c:
        got = {(m.partition, m.offset): (m.key, m.value, m.timestamp) for m in await consume(c, 13)}
    for meta, value in zip(first, [b"%d" % i for i in range(7)], strict=True):
        assert got[(meta.partition, meta.offset)] == (key, value, meta.timestamp)


async def test_an_empty_batch_and_bad_values(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    async with broker.producer() as producer:
        assert await producer.send_batch(TOPIC, []) == []
        with pytest.raises(errors.InvalidRecordError):
            await producer.send_batch(TOPIC, [b"ok", "not bytes"])  # type: ignore[list-item]
        metas = await producer.send_batch(TOPIC, [bytearray(b"a"), None])  # type: ignore[list-item]
    assert [m.offset for m in metas] == [0, 1]  # nothing of the refused batch was written
    async with consumer(broker, TOPIC, None) as c:
        assert [m.value for m in await consume(c, 2)] == [b"a", None]


async def test_records_queued_by_send_soon_go_first(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    async with broker.producer() as producer:
        early = [producer.send_soon(TOPIC, b"early-%d" % i) for i in range(3)]
        batch = await producer.send_batch(TOPIC, [b"batch-0", b"batch-1"])
        assert [m.offset for m in await asyncio.gather(*early)] == [0, 1, 2]
    assert [m.offset for m in batch] == [3, 4]


async def test_full_partition_keeps_what_fits_then_dead_letters(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1, config={"max.partition.messages": "3"})
    async with broker.producer(retry_backoff=0.001) as producer:
        metas = await producer.send_batch(TOPIC, [b"%d" % i for i in range(5)], key=b"k")
    assert [(m.topic, m.offset, m.dead_lettered) for m in metas] == [
        (TOPIC, 0, False),
        (TOPIC, 1, False),
        (TOPIC, 2, False),
        (TOPIC + ".DLQ", 0, True),
        (TOPIC + ".DLQ", 1, True),
    ]
    assert [d.value for d in (await broker.dead_letters.list(TOPIC))] == [b"3", b"4"]


async def test_without_dead_letters_the_first_failure_is_raised(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=2, config={"max.partition.messages": "1"})
    async with broker.producer(retry_backoff=0.001, dead_letter=False, partitioner="round_robin") as producer:
        with pytest.raises(errors.PartitionFullError):
            await producer.send_batch(TOPIC, [b"a", b"b", b"c", b"d"])
    assert [broker.partition(TOPIC, p).high_watermark for p in range(2)] == [1, 1]
