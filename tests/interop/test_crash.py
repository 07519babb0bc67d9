"""kill -9 `kafkalite serve` (fsync before acks=all, the default) while a confluent-kafka producer sends with acks=all,
at a random moment, a few times over the same data dir: after each restart every acknowledged record is there once.

The producer does not retry (`retries=0`): a retried record may legitimately be written twice by a broker that died
after writing but before answering, so only single-attempt acknowledgements make "exactly once" the broker's duty.
"""

from __future__ import annotations

import random
import threading
import time
from functools import partial

import confluent_kafka
import pytest

from .clients import WAIT_S, Confluent, Deliveries, assert_acked_exactly_once, until
from .conftest import Serve

pytestmark = [pytest.mark.interop, pytest.mark.timeout(180)]

ROUNDS = 4
PARTITIONS = 3


class Sender(threading.Thread):
    """Sends numbered records without pause until `stop` is set, so the kill lands mid-stream."""

    def __init__(self, producer: confluent_kafka.Producer, prefix: str, deliveries: Deliveries) -> None:
        super().__init__(daemon=True)
        self.producer, self.prefix, self.deliveries = producer, prefix, deliveries
        self.stop = threading.Event()
        self.sent = 0

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                value = f"{self.prefix}-{self.sent}".encode()
                self.producer.produce("crash", value, key=f"{self.sent}".encode(), on_delivery=self.deliveries)
                self.sent += 1
            except BufferError:  # librdkafka's queue is full: let it drain
                self.producer.poll(0.01)
            if self.sent % 20 == 0:
                self.producer.poll(0)


def sent_more(sender: Sender, than: int) -> bool:
    return sender.sent > than


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
        sender = Sender(producer, f"r{round_}", deliveries)
        failed_before = len(deliveries.failed)
        sender.start()
        time.sleep(rng.uniform(0.3, 1.5))
        broker.kill()
        # The sender may be serving a burst of delivery reports when the kill comes; it stops only once it has
        # sent more records after the kill, so some records were surely in flight or queued against a dead broker.
        until(partial(sent_more, sender, sender.sent + 100), "the sender to go on sending after the kill")
        sender.stop.set()
        sender.join(WAIT_S)
        producer.flush(WAIT_S)  # what was queued or in flight fails (or was acknowledged just before the kill)
        assert len(deliveries.failed) > failed_before, "the producer was still sending when the kill came"
        broker.start()
        assert_acked_exactly_once(deliveries.acked, Confluent(broker.bootstrap).read_all("crash"))
        print(
            f"round {round_}: sent {sender.sent}; so far {len(deliveries.acked)} acked, {len(deliveries.failed)} failed"
        )
    assert deliveries.acked, "some records were acknowledged before the kills"
