"""The producer under concurrency, and bad input answered with clear exceptions from `kafkalite.errors`."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

import kafkalite
from broker.harness import TIMEOUT_S, consume, consumer
from kafkalite import errors

TOPIC = "orders"


async def test_a_thousand_producer_coroutines_on_one_loop(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=4)
    async with broker.producer() as producer:

        async def one(i: int) -> tuple[int, kafkalite.RecordMetadata]:
            return i, await producer.send(TOPIC, b"value-%d" % i, key=b"key-%d" % i)

        async with asyncio.timeout(TIMEOUT_S):
            results = await asyncio.gather(*(one(i) for i in range(1000)))
    places = [(m.partition, m.offset) for _, m in results]
    assert len(set(places)) == 1000
    per_partition = Counter(p for p, _ in places)
    for p, count in per_partition.items():
        assert sorted(o for q, o in places if q == p) == list(range(count))
        assert broker.partition(TOPIC, p).high_watermark == count
    async with consumer(broker, TOPIC, None) as c:
        got = {(m.partition, m.offset): m.value for m in await consume(c, 1000)}
    assert all(got[(m.partition, m.offset)] == b"value-%d" % i for i, m in results)


async def test_a_thousand_producers_each_with_its_own_producer(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=3)

    async def one(i: int) -> kafkalite.RecordMetadata:
        async with broker.producer() as producer:
            return await producer.send(TOPIC, b"%d" % i)

    async with asyncio.timeout(TIMEOUT_S):
        metas = await asyncio.gather(*(one(i) for i in range(1000)))
    assert len({(m.partition, m.offset) for m in metas}) == 1000
    assert sum(broker.partition(TOPIC, p).high_watermark for p in range(3)) == 1000


async def test_writers_to_one_partition_keep_their_order(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=2)
    async with broker.producer() as producer:
        futures = [producer.send_soon(TOPIC, b"%d" % i, partition=1) for i in range(300)]
        metas = await asyncio.gather(*futures)
    assert [m.offset for m in metas] == list(range(300))
    async with consumer(broker, TOPIC, None) as c:
        values = [m.value for m in await consume(c, 300)]
    assert values == [b"%d" % i for i in range(300)]


async def test_send_batch_returns_metadata_in_order(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    async with broker.producer() as producer:
        metas = await producer.send_batch(TOPIC, [b"a", b"b", b"c"])
    assert [m.offset for m in metas] == [0, 1, 2]


async def test_unknown_topic(broker: kafkalite.Broker) -> None:
    async with broker.producer() as producer:
        with pytest.raises(errors.UnknownTopicError, match="nope"):
            await producer.send("nope", b"v")
    with pytest.raises(errors.UnknownTopicError, match="nope"):
        broker.consumer("nope", group_id="g")
    with pytest.raises(errors.UnknownTopicError):
        await broker.delete_topic("nope")


async def test_bad_partition(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=2)
    async with broker.producer() as producer:
        for bad in (2, -1, 99):
            with pytest.raises(errors.UnknownPartitionError, match="partition"):
                await producer.send(TOPIC, b"v", partition=bad)
    with pytest.raises(errors.UnknownPartitionError):
        broker.fetch(TOPIC, 5, 0, 100)


async def test_negative_offset_in_seek(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    async with consumer(broker, TOPIC, "g") as c:
        with pytest.raises(errors.OffsetOutOfRangeError):
            await c.seek(TOPIC, 0, -5)


@pytest.mark.parametrize("value", ["text", 42, 1.5, ["list"], {"a": 1}])
async def test_non_bytes_payload_key_or_header(broker: kafkalite.Broker, value: object) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    async with broker.producer() as producer:
        with pytest.raises(errors.InvalidRecordError, match="bytes"):
            await producer.send(TOPIC, value)  # type: ignore[arg-type]
        with pytest.raises(errors.InvalidRecordError):
            await producer.send(TOPIC, b"v", key=value)  # type: ignore[arg-type]
        with pytest.raises(errors.InvalidRecordError):
            await producer.send(TOPIC, b"v", headers=[("h", value)])  # type: ignore[list-item]
        with pytest.raises(TypeError):  # InvalidRecordError is also a TypeError
            await producer.send(TOPIC, value)  # type: ignore[arg-type]
    assert broker.partition(TOPIC, 0).high_watermark == 0


async def test_bytes_like_payloads_and_none_are_accepted(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    async with broker.producer() as producer:
        await producer.send(TOPIC, bytearray(b"ba"), key=memoryview(b"mv"))
        await producer.send(TOPIC, None)
    async with consumer(broker, TOPIC, None) as c:
        got = await consume(c, 2)
    assert [(m.key, m.value) for m in got] == [(b"mv", b"ba"), (None, None)]


async def test_duplicate_topic(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    with pytest.raises(errors.TopicExistsError, match=TOPIC):
        await broker.create_topic(TOPIC, partitions=3)
    assert len(broker.topic(TOPIC).partitions) == 1


@pytest.mark.parametrize("name", ["", "a b", "x/y", ".", "..", "é", "a" * 250, "__private"])
async def test_illegal_topic_name(broker: kafkalite.Broker, name: str) -> None:
    with pytest.raises(errors.InvalidTopicError):
        await broker.create_topic(name)
    assert name not in broker.topics


@pytest.mark.parametrize(
    ("partitions", "config"),
    [
        (0, None),
        (-1, None),
        (True, None),
        ("3", None),
        (1, {"no.such.config": "1"}),
        (1, {"retention.ms": "soon"}),
        (1, {"max.partition.messages": "0"}),
        (1, {"message.timestamp.type": "Wallclock"}),
    ],
)
async def test_bad_config(broker: kafkalite.Broker, partitions: object, config: dict[str, str] | None) -> None:
    with pytest.raises(errors.InvalidConfigError):
        await broker.create_topic("t", partitions, config)  # type: ignore[arg-type]
    assert "t" not in broker.topics


def test_unknown_broker_setting() -> None:
    with pytest.raises(errors.InvalidConfigError, match="setting"):
        kafkalite.Broker(data_dir=None, no_such_setting=1)


async def test_bad_client_options(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    with pytest.raises(ValueError, match="auto_offset_reset"):
        broker.consumer(TOPIC, group_id="g", auto_offset_reset="middle")
    with pytest.raises(ValueError, match="positive"):
        broker.consumer(TOPIC, group_id="g", poll_interval=0)
    with pytest.raises(ValueError, match="assignor"):
        broker.consumer(TOPIC, group_id="g", assignor="random")
    with pytest.raises(ValueError, match="acks"):
        broker.producer(acks=2)


async def test_closed_producer_consumer_and_broker(broker: kafkalite.Broker) -> None:
    await broker.create_topic(TOPIC, partitions=1)
    producer = broker.producer()
    await producer.close()
    with pytest.raises(errors.ClosedError):
        await producer.send(TOPIC, b"v")
    c = consumer(broker, TOPIC, "g")
    await c.start()
    await c.close()
    with pytest.raises(errors.ClosedError):
        await c.getmany()
    await broker.close()
    with pytest.raises(errors.ClosedError):
        await broker.create_topic("later")


def test_every_error_derives_from_one_root() -> None:
    for name in dir(errors):
        value = getattr(errors, name)
        if isinstance(value, type) and issubclass(value, Exception) and value.__module__ == errors.__name__:
            assert issubclass(value, errors.KafkaLiteError), name
            assert value.__name__ in (errors.__doc__ or ""), f"{name} is missing from the documented tree"
