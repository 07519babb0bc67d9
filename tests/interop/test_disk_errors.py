"""A disk that refuses a write, seen from a client and from the operator's log, with the real served broker.

The child process runs under an RLIMIT_FSIZE: a write that would grow a file past the limit fails with EFBIG, the
error a full disk gives as ENOSPC, on a real file system and without privileges. Appends to the partition whose
segment reached it fail; every other partition is served as before; nothing acknowledged is lost.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from .clients import Confluent
from .served import ServedBroker

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

FILE_SIZE_LIMIT = 300_000
VALUE = b"v" * 1_000
BATCH = 50


def produce(bootstrap: str, topic: str, values: list[bytes]) -> list[KafkaError | None]:
    """Send `values` with acks=all and no retry, `BATCH` at a time; each record's delivery error (None:
    acknowledged), in order."""
    outcomes: dict[bytes, KafkaError | None] = {}

    def delivered(error: KafkaError | None, message: Message) -> None:
        key = message.key()
        assert key is not None
        outcomes[key] = error

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "retries": 0})
    for n, value in enumerate(values):
        producer.produce(topic, value, key=b"%d" % n, on_delivery=delivered)
        if n % BATCH == BATCH - 1:  # batches of about 50 KB: the file reaches the limit part-way through them
            assert producer.flush(30) == 0
    assert producer.flush(30) == 0
    return [outcomes[b"%d" % n] for n in range(len(values))]


def test_a_write_the_disk_refuses_is_a_storage_error_for_its_partition_alone(tmp_path: Path) -> None:
    broker = ServedBroker(tmp_path / "data", tmp_path / "serve.log")
    broker.file_size_limit = FILE_SIZE_LIMIT
    broker.start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for future in admin.create_topics([NewTopic("full", 1), NewTopic("other", 1)]).values():
            future.result(30)
        outcomes = produce(broker.bootstrap, "full", [VALUE] * 600)  # 600 KB into a file that stops at 300 KB
        acknowledged = [n for n, error in enumerate(outcomes) if error is None]
        refused = {error.code() for error in outcomes if error is not None}
        assert 0 < len(acknowledged) < len(outcomes)
        assert refused == {KafkaError.KAFKA_STORAGE_ERROR}
        assert produce(broker.bootstrap, "other", [b"still served"]) == [None]
        failing = re.findall(r"\| ERROR \| storage \| appends to (\S+) fail, .*File too large", broker.log())
        assert failing == [str(tmp_path / "data" / "full-0")]  # one line for the whole streak, not one a request
    finally:
        broker.stop()

    broker.file_size_limit = None
    broker.start()
    try:
        client = Confluent(broker.bootstrap)
        read = client.consume("full", len(acknowledged))
        assert sorted(int(m.key or b"-1") for m in read) == acknowledged
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "watermarks"})
        try:  # nothing refused was kept: the log ends right after the acknowledged records
            assert consumer.get_watermark_offsets(TopicPartition("full", 0), timeout=30) == (0, len(acknowledged))
        finally:
            consumer.close()
        assert [m.value for m in client.consume("other", 1)] == [b"still served"]
    finally:
        broker.stop()
