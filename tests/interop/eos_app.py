"""An exactly-once consume-transform-produce application (confluent-kafka), run as its own process so a test can
kill -9 it, or the broker under it: reads `in` (read_committed, group `eos`), writes each value upper-cased to `out`,
and commits the consumed offsets inside the same transaction. Runs until it is killed.

    python eos_app.py BOOTSTRAP

It handles a failed transaction as Kafka's documentation asks of such an application: an error that requires an
abort aborts the transaction and rewinds the consumer to its committed offsets (the inputs are then processed again,
in a new transaction); a retriable error of the commit retries the commit; anything else is fatal and ends the
process. It prints one line per committed transaction ("committed N"), per abort ("aborted: ...") and per partition
assignment ("assigned N"), so a test can tell whether the group rebalanced.
"""

from __future__ import annotations

import sys

import confluent_kafka

TIMEOUT_S = 30
CONNECTION = {
    # A broker that restarts is back within a second: look again soon.
    "reconnect.backoff.max.ms": 1000,
    # librdkafka >= 2.10 re-bootstraps when every broker it knows is down: it decommissions them, and with 2.16 a
    # transactional producer whose single broker went down twice within a second was left spinning on the
    # decommissioned handle (its transaction coordinator never came back; docs/guides/compatibility.md).
    "metadata.recovery.strategy": "none",
}


def rewind(consumer: confluent_kafka.Consumer) -> None:
    """Back to the committed offsets: what the aborted transaction consumed is read again."""
    for tp in consumer.committed(consumer.assignment(), TIMEOUT_S):
        if tp.offset >= 0:
            consumer.seek(tp)
        else:
            consumer.seek(confluent_kafka.TopicPartition(tp.topic, tp.partition, confluent_kafka.OFFSET_BEGINNING))


def commit(producer: confluent_kafka.Producer) -> None:
    while True:
        try:
            producer.commit_transaction(TIMEOUT_S)
            return
        except confluent_kafka.KafkaException as exc:
            if not exc.args[0].retriable():
                raise


def main(bootstrap: str) -> None:
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "eos",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
            **CONNECTION,
        }
    )
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": "eos-app",
            "transaction.timeout.ms": 10000,
            **CONNECTION,
        }
    )
    producer.init_transactions(TIMEOUT_S)
    consumer.subscribe(["in"], on_assign=lambda _, parts: print(f"assigned {len(parts)}", flush=True))
    while True:
        messages = consumer.consume(num_messages=20, timeout=0.2)
        messages = [m for m in messages if m.error() is None]
        if not messages:
            continue
        try:
            producer.begin_transaction()
            for message in messages:
                producer.produce("out", message.value().upper(), key=message.key())
            positions = consumer.position(consumer.assignment())
            producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), TIMEOUT_S)
            commit(producer)
        except confluent_kafka.KafkaException as exc:
            if not exc.args[0].txn_requires_abort():
                raise
            print(f"aborted: {exc.args[0]}", flush=True)
            producer.abort_transaction(TIMEOUT_S)
            rewind(consumer)
            continue
        print(f"committed {len(messages)}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
