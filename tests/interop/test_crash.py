"""kill -9 `kafkalite serve` (fsync before acks=all, the default) while a confluent-kafka producer sends with acks=all,
at a random moment, a few times over the same data dir: after each restart every acknowledged record is there once.

The producer does not retry (`retries=0`): a retried record may legitimately be written twice by a broker that died
after writing but before answering, so only single-attempt acknowledgements make "exactly once" the broker's duty.
"""

from __future__ import annotations

import random
import time

import confluent_kafka
import pytest

from .clients import WAIT_S, Confluent, Deliveries, assert_acked_exactly_once
from .conftest import Serve

pytestmark = [pytest.mark.interop, pytest.mark.timeout(180)]

ROUNDS = 4
PARTITIONS = 3


def test_acknowledged_records_survive_kill_9(serve: Serve) -> None:
    broker = serve("--num-partitions", str(PARTITIONS))
    rng = random.Random()
    seed = rng.randrange(1 << 30)
    rng.seed(seed)
    print(f"crash moments from seed {seed}")
    deliveries = Deliveries()
    for round_ in range(ROUNDS):
        producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": broker.bootstrap,
                "acks": "all",
                "retries": 0,
                "linger.ms": 2,
                "message.timeout.ms": 5000,
            }
        )
        crash_at = time.monotonic() + rng.uniform(0.3, 1.5)
        sent = 0
        while time.monotonic() < crash_at:
            for _ in range(20):
                producer.produce("crash", f"r{round_}-{sent}".encode(), key=f"{sent}".encode(), on_delivery=deliveries)
                sent += 1
            producer.poll(0.005)
        failed_before = len(deliveries.failed)
        broker.kill()
        producer.flush(WAIT_S)  # what was queued or in flight fails (or was acknowledged just before the kill)
        assert len(deliveries.failed) > failed_before, "the kill came while records were still being sent"
        broker.start()
        assert_acked_exactly_once(deliveries.acked, Confluent(broker.bootstrap).read_all("crash"))
        print(f"round {round_}: sent {sent}; so far {len(deliveries.acked)} acked, {len(deliveries.failed)} failed")
    assert deliveries.acked, "some records were acknowledged before the kills"
