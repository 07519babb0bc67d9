"""confluent-kafka (librdkafka) against the server run from a thread: produce, fetch, ListOffsets, admin."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

from kafkalite.server import ThreadedServer

pytestmark = [pytest.mark.interop, pytest.mark.timeout(90)]


def produce(server: ThreadedServer, topic: str, count: int, **config: Any) -> None:
    producer = Producer({"bootstrap.servers": server.bootstrap, "acks": "all", **config})
    delivered: list[Any] = []
    for i in range(count):
        key = f"k{i}".encode() if i % 2 else None
        producer.produce(
            topic, f"v{i}".encode(), key=key, headers=[("h", b"x")], on_delivery=lambda e, m: delivered.append(e)
        )
    assert producer.flush(30) == 0
    assert delivered == [None] * count


def consume(server: ThreadedServer, topic: str, count: int, partitions: int = 1) -> list[Any]:
    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "unused", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    received: list[Any] = []
    deadline = time.monotonic() + 30
    try:
        while len(received) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                received.append(message)
    finally:
        consumer.close()
    return received


@pytest.mark.parametrize("compression", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_and_fetch(threaded: ThreadedServer, compression: str) -> None:
    produce(threaded, "cf", 20, **{"compression.type": compression})
    received = consume(threaded, "cf", 20)
    assert [m.value() for m in received] == [f"v{i}".encode() for i in range(20)]
    assert [m.offset() for m in received] == list(range(20))
    assert received[1].key() == b"k1"
    assert received[0].headers() == [("h", b"x")]


def test_idempotent_producer(threaded: ThreadedServer) -> None:
    produce(threaded, "idem", 50, **{"enable.idempotence": True})
    assert threaded.broker.partition("idem", 0).high_watermark == 50


def test_list_offsets_by_timestamp(threaded: ThreadedServer) -> None:
    produce(threaded, "ts", 5)
    middle = int(time.time() * 1000) + 50
    time.sleep(0.1)
    produce(threaded, "ts", 5)
    consumer = Consumer({"bootstrap.servers": threaded.bootstrap, "group.id": "unused"})
    try:
        [found] = consumer.offsets_for_times([TopicPartition("ts", 0, middle)], timeout=10)
        assert found.offset == 5
        assert consumer.get_watermark_offsets(TopicPartition("ts", 0), timeout=10) == (0, 10)
    finally:
        consumer.close()


def test_admin(threaded: ThreadedServer) -> None:
    admin = AdminClient({"bootstrap.servers": threaded.bootstrap})
    for future in admin.create_topics([NewTopic("adm", 2, 1, config={"retention.ms": "60000"})]).values():
        future.result(10)
    with pytest.raises(KafkaException, match="TOPIC_ALREADY_EXISTS"):
        admin.create_topics([NewTopic("adm", 2, 1)])["adm"].result(10)
    admin.create_partitions([NewPartitions("adm", 3)])["adm"].result(10)
    assert len(threaded.broker.topic("adm").partitions) == 3
    [configs] = admin.describe_configs([ConfigResource("topic", "adm")]).values()
    assert configs.result(10)["retention.ms"].value == "60000"
    assert "adm" in admin.list_topics(timeout=10).topics
    admin.delete_topics(["adm"])["adm"].result(10)
    assert "adm" not in threaded.broker.topics
