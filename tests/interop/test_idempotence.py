"""An idempotent confluent-kafka producer keeps sending across a kill -9 and restart of `kafkalite serve`: librdkafka
retries what was in flight with the same sequence numbers, and the broker (which rebuilt its producer state from the
log) appends each record once. Every acknowledged record is in the log exactly once, in the order it was produced."""

from __future__ import annotations

import time

import confluent_kafka
import pytest

from .clients import WAIT_S, Confluent, Deliveries, assert_acked_exactly_once, until
from .conftest import Serve

pytestmark = [pytest.mark.interop, pytest.mark.timeout(180)]

COUNT = 600
PARTITIONS = 3


def test_idempotent_producer_survives_restart_without_duplicates_or_gaps(serve: Serve) -> None:
    broker = serve("--fsync", "never", "--num-partitions", str(PARTITIONS))
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "enable.idempotence": True,
            "linger.ms": 2,
            "message.timeout.ms": 60000,
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 500,
        }
    )
    deliveries = Deliveries()
    for i in range(COUNT):
        producer.produce("idem", f"{i}".encode(), key=f"{i % 7}".encode(), on_delivery=deliveries)
        producer.poll(0)
        time.sleep(0.002)
        if i == COUNT // 3:
            until(lambda: len(deliveries.acked) > COUNT // 6, "the first acknowledgements", lambda: producer.poll(0.05))
            broker.kill()
            time.sleep(0.2)
            broker.start()
    assert producer.flush(WAIT_S * 2) == 0
    assert deliveries.failed == []
    assert len(deliveries.acked) == COUNT

    log = Confluent(broker.bootstrap).read_all("idem")
    assert_acked_exactly_once(deliveries.acked, log)
    assert sorted(int(r.value) for r in log) == list(range(COUNT)), "no gaps"
    for p in range(PARTITIONS):
        sequence = [int(r.value) for r in sorted(log, key=lambda r: r.offset) if r.partition == p]
        assert sequence == sorted(sequence), f"partition {p} is out of order"
