"""An exactly-once consume-transform-produce application (confluent-kafka), run as its own process so a test can
kill -9 it: reads `in` (read_committed, group `eos`), writes each value upper-cased to `out`, and commits the consumed
offsets inside the same transaction. Runs until it is killed.

    python eos_app.py BOOTSTRAP
"""

from __future__ import annotations

import sys

import confluent_kafka


def main(bootstrap: str) -> None:
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "eos",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
        }
    )
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": "eos-app", "transaction.timeout.ms": 10000}
    )
    producer.init_transactions(30)
    consumer.subscribe(["in"])
    while True:
        messages = consumer.consume(num_messages=20, timeout=0.2)
        messages = [m for m in messages if m.error() is None]
        if not messages:
            continue
        producer.begin_transaction()
        for message in messages:
            producer.produce("out", message.value().upper(), key=message.key())
        positions = consumer.position(consumer.assignment())
        producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
        print(f"committed {len(messages)}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
