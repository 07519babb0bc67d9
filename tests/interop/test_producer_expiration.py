"""Producers that go idle past `producer.id.expiration.ms` and then write again, through confluent-kafka against
`kafkalite serve` with a half-second expiration checked every 100 ms: the partitions forget them (the broker logs
it), and their next writes, which carry the sequence numbers that follow the forgotten ones, are accepted and
appended once, idempotent or transactional."""

from __future__ import annotations

import time

import confluent_kafka
import pytest

from .clients import WAIT_S, Confluent, Deliveries, assert_acked_exactly_once, until
from .conftest import Serve
from .served import ServedBroker

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

EXPIRING = (
    "--fsync",
    "never",
    "--num-partitions",
    "2",
    "--override",
    "producer.id.expiration.ms=500",
    "--override",
    "producer.id.expiration.check.interval.ms=100",
)
FORGOT = "Forgot "


def wait_until_forgotten(broker: ServedBroker, times: int) -> None:
    until(lambda: broker.log().count(FORGOT) >= times, lambda: f"expiration number {times}:\n{broker.log()[-2000:]}")


def test_an_idempotent_producer_writes_on_after_its_state_is_forgotten(serve: Serve) -> None:
    broker = serve(*EXPIRING)
    producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    deliveries = Deliveries()
    for i in range(200):
        producer.produce("idle", b"%d" % i, key=b"%d" % (i % 5), on_delivery=deliveries)
        if i == 99:
            assert producer.flush(WAIT_S) == 0
            wait_until_forgotten(broker, 1)
    assert producer.flush(WAIT_S) == 0
    assert deliveries.failed == []
    log = Confluent(broker.bootstrap).read_all("idle")
    assert_acked_exactly_once(deliveries.acked, log)
    assert sorted(int(r.value) for r in log) == list(range(200))


def test_a_transactional_producer_commits_after_its_state_is_forgotten(serve: Serve) -> None:
    broker = serve(*EXPIRING)
    producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "idle-tx"})
    producer.init_transactions(WAIT_S)
    for round_ in range(2):
        producer.begin_transaction()
        for i in range(50):
            producer.produce("idle-tx", b"%d-%d" % (round_, i), key=b"%d" % (i % 5))
        producer.commit_transaction(WAIT_S)
        wait_until_forgotten(broker, round_ + 1)
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "reader",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
        }
    )
    values: list[bytes] = []
    ended: set[int] = set()
    try:
        consumer.subscribe(["idle-tx"])
        deadline = time.monotonic() + WAIT_S
        while len(ended) < 2 and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None:
                continue
            if message.error() is None:
                values.append(message.value())
            elif message.error().code() == confluent_kafka.KafkaError._PARTITION_EOF:
                ended.add(message.partition())
    finally:
        consumer.close()
    assert sorted(values) == sorted(b"%d-%d" % (r, i) for r in range(2) for i in range(50))
