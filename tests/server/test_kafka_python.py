"""kafka-python (synchronous, pure Python) against the server run from a thread: produce, fetch, offsets, admin."""

from __future__ import annotations

import time

import kafka.codec
import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic

from kafkalite.server import ThreadedServer

pytestmark = [pytest.mark.interop, pytest.mark.timeout(90)]


@pytest.mark.parametrize("compression", [None, "gzip", "snappy", "lz4", "zstd"])
def test_produce_and_fetch(threaded: ThreadedServer, compression: str | None) -> None:
    if compression is not None and not getattr(kafka.codec, f"has_{compression}")():
        pytest.skip(f"kafka-python finds no {compression} library in this environment")
    producer = KafkaProducer(bootstrap_servers=threaded.bootstrap, acks="all", compression_type=compression)
    futures = [producer.send("kp", f"v{i}".encode(), key=f"k{i}".encode(), headers=[("h", b"x")]) for i in range(20)]
    assert [f.get(timeout=20).offset for f in futures] == list(range(20))
    producer.close(10)
    consumer = KafkaConsumer(bootstrap_servers=threaded.bootstrap, auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition("kp", 0)])
        received = []
        deadline = time.monotonic() + 30
        while len(received) < 20 and time.monotonic() < deadline:
            for records in consumer.poll(500).values():
                received += records
        assert [r.value for r in received] == [f"v{i}".encode() for i in range(20)]
        assert received[0].headers == [("h", b"x")]
        assert consumer.end_offsets([TopicPartition("kp", 0)]) == {TopicPartition("kp", 0): 20}
    finally:
        consumer.close()


def test_idempotent_producer(threaded: ThreadedServer) -> None:
    producer = KafkaProducer(bootstrap_servers=threaded.bootstrap, enable_idempotence=True, acks="all")
    for i in range(30):
        producer.send("kp-idem", f"{i}".encode())
    producer.flush(20)
    producer.close(10)
    assert threaded.broker.partition("kp-idem", 0).high_watermark == 30


def test_admin(threaded: ThreadedServer) -> None:
    admin = KafkaAdminClient(bootstrap_servers=threaded.bootstrap)
    try:
        admin.create_topics([NewTopic("kadm", 2, 1, topic_configs={"retention.ms": "60000"})])
        admin.create_partitions({"kadm": NewPartitions(total_count=3)})
        assert len(threaded.broker.topic("kadm").partitions) == 3
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kadm")])
        assert "60000" in repr(described)
        assert "kadm" in admin.list_topics()
        admin.delete_topics(["kadm"])
        assert "kadm" not in threaded.broker.topics
    finally:
        admin.close()


def test_group_consumer_commits_and_resumes(threaded: ThreadedServer) -> None:
    producer = KafkaProducer(bootstrap_servers=threaded.bootstrap)
    for i in range(10):
        producer.send("kgrp", f"{i}".encode())
    producer.flush(20)
    producer.close(10)

    def consume_some(count: int) -> list[bytes]:
        consumer = KafkaConsumer(
            "kgrp",
            bootstrap_servers=threaded.bootstrap,
            group_id="kg",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < count and time.monotonic() < deadline:
            for records in consumer.poll(500, max_records=count - len(values)).values():
                values += [r.value for r in records]
        consumer.commit()
        consumer.close()
        return values

    assert consume_some(4) == [f"{i}".encode() for i in range(4)]
    assert consume_some(1) == [b"4"]  # resumed from the committed offset
