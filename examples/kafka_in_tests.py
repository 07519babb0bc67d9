"""A test suite that uses KafkaLite where it would start a Docker Kafka: `python examples/kafka_in_tests.py`.

Two kinds of code under test, two fixtures:

- code written against the embedded API gets an in-memory `kafkalite.Broker` per test (milliseconds to start,
  nothing to clean up);
- code written against a Kafka client library (here confluent-kafka) gets a served broker on a free port, started
  once for the module in a background thread, and finds it through `KAFKA_BOOTSTRAP`, as it would find a real
  cluster.

Needs pytest, pytest-asyncio and confluent-kafka (all in KafkaLite's `test` extra).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
from confluent_kafka import Consumer, Producer

import kafkalite
from kafkalite.server import ThreadedServer, run_in_thread

# --- the code under test ----------------------------------------------------------------------------------------


async def record_signup(producer: kafkalite.Producer, email: str) -> int:
    """Publish a signup event keyed by email; return the partition it landed in."""
    meta = await producer.send("signups", json.dumps({"email": email}).encode(), key=email.encode())
    return meta.partition


def publish_clicks(pages: list[str]) -> None:
    """Publish one click event per page to the cluster named by KAFKA_BOOTSTRAP."""
    producer = Producer({"bootstrap.servers": os.environ.get("KAFKA_BOOTSTRAP", "localhost:9092")})
    for page in pages:
        producer.produce("clicks", page.encode())
    if producer.flush(10) != 0:
        raise RuntimeError("clicks were not delivered")


# --- fixtures ---------------------------------------------------------------------------------------------------


@pytest_asyncio.fixture
async def broker() -> AsyncIterator[kafkalite.Broker]:
    async with kafkalite.Broker() as broker:
        await broker.create_topic("signups", partitions=3)
        yield broker


@pytest.fixture(scope="module")
def kafka() -> Iterator[ThreadedServer]:
    with run_in_thread() as server:
        yield server


@pytest.fixture
def bootstrap(kafka: ThreadedServer, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("KAFKA_BOOTSTRAP", kafka.bootstrap)
    return kafka.bootstrap


# --- tests ------------------------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_the_same_email_always_lands_in_the_same_partition(broker: kafkalite.Broker) -> None:
    async with broker.producer() as producer:
        partitions = {await record_signup(producer, "ada@example.com") for _ in range(5)}
    assert len(partitions) == 1


@pytest.mark.asyncio
async def test_signups_are_read_back_in_order(broker: kafkalite.Broker) -> None:
    async with broker.producer() as producer:
        for n in range(3):
            await record_signup(producer, f"user{n}@example.com")
    async with broker.consumer("signups", group_id="welcome-mails") as consumer:
        seen: list[kafkalite.Message] = []
        while len(seen) < 3:
            seen += await consumer.getmany(timeout=5)
    assert sorted(json.loads(m.value or b"{}")["email"] for m in seen) == [f"user{n}@example.com" for n in range(3)]


def test_clicks_reach_a_consumer_group(bootstrap: str) -> None:
    publish_clicks(["/", "/pricing", "/docs"])
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"analytics-{uuid.uuid4()}", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe(["clicks"])
    pages: list[bytes] = []
    try:
        for _ in range(100):
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                pages.append(message.value() or b"")
            if len(pages) >= 3:
                break
    finally:
        consumer.close()
    assert pages == [b"/", b"/pricing", b"/docs"]


if __name__ == "__main__":  # run this file as a test suite, in a fresh interpreter, as `pytest FILE` would
    sys.exit(subprocess.call([sys.executable, "-m", "pytest", __file__, "-q", "-p", "no:cacheprovider"]))
