"""The consumer's buffer of fetched chunks: slices handed out in order, positions moved exactly, seek and mixing
`getmany` with `async for`."""

from __future__ import annotations

import kafkalite
from broker.harness import consumer

TOPIC = "orders"


async def fill(broker: kafkalite.Broker, partitions: int, per_partition: int) -> None:
    await broker.create_topic(TOPIC, partitions=partitions)
    async with broker.producer() as producer:
        for p in range(partitions):
            for start in range(0, per_partition, 4):  # several batches per partition
                for i in range(start, min(start + 4, per_partition)):
                    producer.send_soon(TOPIC, b"%d-%d" % (p, i), partition=p)
                await producer.flush()


async def test_small_getmany_slices_hand_out_every_message_once_in_order(broker: kafkalite.Broker) -> None:
    await fill(broker, 1, 10)
    async with consumer(broker, TOPIC, None, max_poll_records=500) as c:
        got = []
        while len(got) < 10:
            batch = await c.getmany(max_records=3)
            assert len(batch) <= 3
            got += batch
            assert c.position(TOPIC, 0) == got[-1].offset + 1
    assert [m.offset for m in got] == list(range(10))


async def test_async_for_and_getmany_share_the_buffer(broker: kafkalite.Broker) -> None:
    await fill(broker, 1, 8)
    async with consumer(broker, TOPIC, None) as c:
        first = [m for m in await c.getmany(max_records=2)]
        async for message in c:
            first.append(message)
            if len(first) == 4:
                break
        assert c.position(TOPIC, 0) == 4
        rest = await c.getmany(max_records=100)
    assert [m.offset for m in first + rest] == list(range(len(first + rest)))
    assert len(first + rest) == 8


async def test_seek_drops_that_partitions_buffered_messages_only(broker: kafkalite.Broker) -> None:
    await fill(broker, 2, 6)
    async with consumer(broker, TOPIC, None) as c:
        head = await c.getmany(max_records=1)
        (topic, partition) = (head[0].topic, head[0].partition)
        other = 1 - partition
        await c.seek(TOPIC, other, 2)
        same = await c.getmany(max_records=100)  # the rest of the partially consumed chunk comes first
        assert [(m.partition, m.offset) for m in same][:1] == [(partition, 1)]
        await c.seek(TOPIC, partition, 0)
        seen: dict[int, list[int]] = {0: [], 1: []}
        for m in head + same:
            seen[m.partition].append(m.offset)
        before_seek = len(seen[partition])
        while len(seen[other]) < 4 or len(seen[partition]) < before_seek + 6:
            for m in await c.getmany(max_records=100):
                seen[m.partition].append(m.offset)
    assert topic == TOPIC
    assert seen[other] == [2, 3, 4, 5]
    assert seen[partition] == [*range(before_seek), *range(6)]
