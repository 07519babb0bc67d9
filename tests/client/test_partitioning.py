"""Key routing: the md5 formula literally, murmur2 where Java / kafka-python put keys, round robin without a key."""

from __future__ import annotations

import hashlib

import pytest
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

import kafkalite

KEYS = [b"", b"a", b"ab", b"abc", b"abcd", b"user-1", b"customer-42", bytes(range(256)), "ключ".encode()]


def md5_partition(key: bytes, n: int) -> int:
    return int(hashlib.md5(key).hexdigest(), 16) % n


@pytest.mark.parametrize("partitions", [1, 3, 7])
async def test_md5_routes_every_key_by_the_seed_formula(broker: kafkalite.Broker, partitions: int) -> None:
    await broker.create_topic("orders", partitions=partitions)
    async with broker.producer() as producer:
        for key in KEYS + [f"user-{i}".encode() for i in range(50)]:
            meta = await producer.send("orders", b"v", key=key)
            assert meta.partition == md5_partition(key, partitions), key


async def test_same_key_always_lands_in_the_same_partition(broker: kafkalite.Broker) -> None:
    await broker.create_topic("orders", partitions=5)
    async with broker.producer() as first, broker.producer() as second:
        metas = [await p.send("orders", b"%d" % i, key=b"user-7") for i in range(10) for p in (first, second)]
    assert {m.partition for m in metas} == {md5_partition(b"user-7", 5)}
    offsets = [m.offset for m in metas]
    assert offsets == sorted(offsets) == list(range(offsets[0], offsets[0] + 20))


async def test_murmur2_places_keys_where_kafka_python_does(broker: kafkalite.Broker) -> None:
    await broker.create_topic("orders", partitions=6)
    keys = KEYS + [f"key-{i}".encode() for i in range(200)]
    async with broker.producer(partitioner="murmur2") as producer:
        for key in keys:
            meta = await producer.send("orders", b"v", key=key)
            assert meta.partition == (kafka_python_murmur2(key) & 0x7FFFFFFF) % 6, key


def test_murmur2_hash_equals_kafka_python_bit_for_bit() -> None:
    for key in [*KEYS, *(bytes([i]) * i for i in range(1, 40))]:
        assert kafkalite.client.murmur2(key) & 0x7FFFFFFF == kafka_python_murmur2(key) & 0x7FFFFFFF


@pytest.mark.parametrize("partitioner", ["md5", "murmur2", "round_robin"])
async def test_records_without_a_key_go_round_robin(broker: kafkalite.Broker, partitioner: str) -> None:
    await broker.create_topic("orders", partitions=3)
    async with broker.producer(partitioner=partitioner) as producer:
        partitions = [(await producer.send("orders", b"v")).partition for _ in range(9)]
    assert partitions == [partitions[0], (partitions[0] + 1) % 3, (partitions[0] + 2) % 3] * 3


async def test_round_robin_partitioner_ignores_keys(broker: kafkalite.Broker) -> None:
    await broker.create_topic("orders", partitions=4)
    async with broker.producer(partitioner="round_robin") as producer:
        partitions = [(await producer.send("orders", b"v", key=b"same")).partition for _ in range(8)]
    assert sorted(partitions) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert all(partitions[i] != partitions[i + 1] for i in range(7))


async def test_explicit_partition_wins_over_the_key(broker: kafkalite.Broker) -> None:
    await broker.create_topic("orders", partitions=3)
    async with broker.producer() as producer:
        meta = await producer.send("orders", b"v", key=b"user-1", partition=2)
    assert meta.partition == 2


def test_unknown_partitioner_is_refused() -> None:
    with pytest.raises(ValueError, match="partitioner"):
        kafkalite.client.Partitioner("crc32")  # type: ignore[arg-type]
