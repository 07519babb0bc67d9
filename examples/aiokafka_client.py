"""aiokafka against `kafkalite serve`: `python examples/aiokafka_client.py`.

Start a broker first (`kafkalite serve --port 9092 --data-dir memory`, or `make run`); the program reads its
address from `$KAFKA_BOOTSTRAP` (default `localhost:9092`). It creates a topic with the admin client, sends gzip
batches with `send_and_wait` and `send_batch`, reads them back in a consumer group with `getmany`, commits, and
asks the broker for the topic's end offsets.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

BOOTSTRAP = os.environ.get("KAFKA_BOOTSTRAP", "localhost:9092")
TOPIC = "sensor-readings"
COUNT = 20


async def create_topic() -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await admin.start()
    try:
        # aiokafka returns the per-topic error codes instead of raising them: 36 is TOPIC_ALREADY_EXISTS.
        answer = await admin.create_topics([NewTopic(TOPIC, num_partitions=2, replication_factor=1)])
        [(_, code, *_)] = answer.topic_errors
        if code == 0:
            print(f"created topic {TOPIC} with 2 partitions")
        elif code != TopicAlreadyExistsError.errno:
            raise RuntimeError(f"creating {TOPIC} failed with error code {code}")
    finally:
        await admin.close()


async def produce(run: str) -> None:
    async with AIOKafkaProducer(bootstrap_servers=BOOTSTRAP, acks="all", compression_type="gzip") as producer:
        first = await producer.send_and_wait(TOPIC, f"{run} reading 0".encode(), key=b"sensor-0")
        print(f"first reading at partition {first.partition} offset {first.offset}")
        batch = producer.create_batch()
        for n in range(1, COUNT):
            batch.append(key=None, value=f"{run} reading {n}".encode(), timestamp=None)
        partition = (first.partition + 1) % 2
        metadata = await (await producer.send_batch(batch, TOPIC, partition=partition))
        print(f"{COUNT - 1} more readings in one batch at partition {partition} from offset {metadata.offset}")


async def consume(run: str) -> None:
    async with AIOKafkaConsumer(
        TOPIC,
        bootstrap_servers=BOOTSTRAP,
        group_id=f"dashboard-{run}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    ) as consumer:
        mine = 0
        async with asyncio.timeout(60):
            while mine < COUNT:
                for _, messages in (await consumer.getmany(timeout_ms=1000)).items():
                    mine += sum(1 for m in messages if m.value is not None and m.value.startswith(run.encode()))
        await consumer.commit()
        print(f"read this run's {mine} readings and committed")
        ends = await consumer.end_offsets([TopicPartition(TOPIC, p) for p in range(2)])
        print("end offsets:", ", ".join(f"{tp.partition}={offset}" for tp, offset in sorted(ends.items())))


async def main() -> None:
    run = uuid.uuid4().hex[:8]
    print(f"KafkaLite at {BOOTSTRAP}, run {run}")
    await create_topic()
    await produce(run)
    await consume(run)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
