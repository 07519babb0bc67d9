"""confluent-kafka against `kafkalite serve`: `python examples/confluent_client.py`.

Start a broker first (`kafkalite serve --port 9092 --data-dir memory`, or `make run`); the program reads its
address from `$KAFKA_BOOTSTRAP` (default `localhost:9092`). It creates a topic with the admin client, sends ten
keyed greetings with an idempotent producer (acks=all, so each is fsynced before it is acknowledged), reads them
back in a consumer group, commits, and shows the group's committed offsets. Run it twice: the second run's consumer
resumes after what the first one committed.
"""

from __future__ import annotations

import os
import sys
import uuid

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

BOOTSTRAP = os.environ.get("KAFKA_BOOTSTRAP", "localhost:9092")
TOPIC = "greetings"
GROUP = "greeters"
COUNT = 10


def create_topic() -> None:
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    future = admin.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=1)])[TOPIC]
    try:
        future.result(10)
        print(f"created topic {TOPIC} with 3 partitions")
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


def produce(run: str) -> None:
    producer = Producer({"bootstrap.servers": BOOTSTRAP, "enable.idempotence": True, "compression.type": "zstd"})
    delivered: list[str] = []

    def on_delivery(error: KafkaError | None, message: object) -> None:
        if error is not None:
            raise KafkaException(error)
        delivered.append(f"{message.partition()}@{message.offset()}")  # type: ignore[attr-defined]

    for n in range(COUNT):
        producer.produce(
            TOPIC, f"hello {n} from run {run}".encode(), key=f"user-{n % 3}".encode(), on_delivery=on_delivery
        )
    if producer.flush(15) != 0 or len(delivered) != COUNT:
        sys.exit(f"only {len(delivered)} of {COUNT} greetings were acknowledged")
    print(f"sent {COUNT} greetings (partition@offset): {' '.join(delivered)}")


def consume(run: str) -> None:
    consumer = Consumer(
        {
            "bootstrap.servers": BOOTSTRAP,
            "group.id": GROUP,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([TOPIC])
    mine = 0
    try:
        for _ in range(120):  # at most a minute
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                raise KafkaException(message.error())
            text = (message.value() or b"").decode()
            key = (message.key() or b"").decode()
            print(f"  {message.partition()}@{message.offset()} key={key} {text}")
            mine += text.endswith(f"run {run}")
            if mine == COUNT:
                break
        else:
            sys.exit(f"read only {mine} of this run's {COUNT} greetings")
        consumer.commit(asynchronous=False)
        committed = consumer.committed([TopicPartition(TOPIC, p) for p in range(3)], timeout=10)
        print("committed offsets:", ", ".join(f"{tp.partition}={tp.offset}" for tp in committed))
    finally:
        consumer.close()


def main() -> None:
    run = uuid.uuid4().hex[:8]
    print(f"KafkaLite at {BOOTSTRAP}, run {run}")
    create_topic()
    produce(run)
    consume(run)


if __name__ == "__main__":
    main()
