"""A consumer group keeps its members through a crash of `kafkalite serve` (kill -9, then a start on the same data):
each client's consumer carries on with the partitions it had, without a rebalance, and commits with its generation
(its member epoch, with KIP-848). confluent-kafka runs it with both group protocols (classic, and KIP-848's
`group.protocol=consumer`). The rebalance listener's calls are counted from the first assignment of every partition
(kafka-python may rebalance once more at start, see the compatibility guide).

The broker stores a group in `__consumer_offsets` (Kafka's records for each protocol) and the restart loads it back
(docs/architecture.md, "Consumer groups"). Without that, every member's next heartbeat is refused and the client
rejoins: its rebalance listener then sees its partitions revoked (or lost) and assigned again.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from .conftest import Serve
from .served import ServedBroker

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

WAIT_S = 30.0
PARTITIONS = 2


def produce(bootstrap: str, topic: str, prefix: str, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(count):
        producer.produce(topic, f"{prefix}-{i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(WAIT_S) == 0


def crash_and_restart(broker: ServedBroker, topic: str) -> None:
    broker.kill()
    broker.start()
    produce(broker.bootstrap, topic, "after", 10)


PROTOCOL_SETTINGS = {
    "classic": {"session.timeout.ms": 10_000, "heartbeat.interval.ms": 500},
    # KIP-848: the broker sets the session and the heartbeat interval (serve's --group-consumer-* flags).
    "consumer": {"group.protocol": "consumer"},
}


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_confluent_kafka_consumer_keeps_its_partitions_through_a_crash(serve: Serve, protocol: str) -> None:
    from confluent_kafka import Consumer, KafkaException

    broker = serve("--num-partitions", str(PARTITIONS), "--override", "group.consumer.heartbeat.interval.ms=500")
    topic = f"crash-group-confluent-{protocol}"
    produce(broker.bootstrap, topic, "before", 10)
    events: list[str] = []
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"crash-confluent-{protocol}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **PROTOCOL_SETTINGS[protocol],
        }
    )
    consumer.subscribe(
        [topic],
        on_assign=lambda _, parts: events.append(f"assign {len(parts)}"),
        on_revoke=lambda _, parts: events.append(f"revoke {len(parts)}"),
        on_lost=lambda _, parts: events.append(f"lost {len(parts)}"),
    )
    try:
        values: list[bytes] = []

        def read(count: int) -> None:
            deadline = time.monotonic() + WAIT_S
            while len(values) < count and time.monotonic() < deadline:
                message = consumer.poll(0.2)
                if message is not None and message.error() is None:
                    values.append(message.value())
            assert len(values) == count, f"read {len(values)} of {count}; events {events}"

        read(10)
        consumer.commit(asynchronous=False)
        assert events[-1] == f"assign {PARTITIONS}"
        events.clear()
        crash_and_restart(broker, topic)
        read(20)
        deadline = time.monotonic() + WAIT_S
        while True:  # the first commit after the restart may meet the coordinator still being found again
            try:
                consumer.commit(asynchronous=False)
                break
            except KafkaException as exc:
                if not exc.args[0].retriable() or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        assert sorted(values) == sorted(
            [f"before-{i}".encode() for i in range(10)] + [f"after-{i}".encode() for i in range(10)]
        )
        assert events == []  # no rebalance: nothing revoked, lost or assigned again
        committed = consumer.committed(consumer.assignment(), timeout=WAIT_S)
        assert sum(tp.offset for tp in committed) == 20
    finally:
        consumer.close()


def test_aiokafka_consumer_keeps_its_partitions_through_a_crash(serve: Serve) -> None:
    broker = serve("--num-partitions", str(PARTITIONS))
    topic = "crash-group-aiokafka"
    produce(broker.bootstrap, topic, "before", 10)
    events: list[str] = []

    async def run() -> list[bytes]:
        from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            async def on_partitions_revoked(self, revoked: Any) -> None:
                if revoked:
                    events.append(f"revoke {len(revoked)}")

            async def on_partitions_assigned(self, assigned: Any) -> None:
                events.append(f"assign {len(assigned)}")

        consumer = AIOKafkaConsumer(
            bootstrap_servers=broker.bootstrap,
            group_id="crash-aiokafka",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=10_000,
            heartbeat_interval_ms=500,
        )
        consumer.subscribe([topic], listener=Listener())
        await consumer.start()
        values: list[bytes] = []
        try:

            async def read(count: int) -> None:
                async with asyncio.timeout(WAIT_S):
                    while len(values) < count:
                        for batch in (await consumer.getmany(timeout_ms=200)).values():
                            values.extend(m.value for m in batch)

            await read(10)
            await consumer.commit()
            assert events[-1] == f"assign {PARTITIONS}"
            events.clear()
            await asyncio.to_thread(crash_and_restart, broker, topic)
            await read(20)
            await consumer.commit()
            committed = [await consumer.committed(tp) for tp in consumer.assignment()]
            assert sum(c or 0 for c in committed) == 20
        finally:
            await consumer.stop()
        return values

    values = asyncio.run(run())
    assert len(values) == 20
    assert events == []  # no rebalance: nothing revoked or assigned again


def test_kafka_python_consumer_keeps_its_partitions_through_a_crash(serve: Serve) -> None:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.consumer.subscription_state import ConsumerRebalanceListener

    broker = serve("--num-partitions", str(PARTITIONS))
    topic = "crash-group-kafka-python"
    produce(broker.bootstrap, topic, "before", 10)
    events: list[str] = []

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            if revoked:
                events.append(f"revoke {len(revoked)}")

        def on_partitions_assigned(self, assigned: Any) -> None:
            events.append(f"assign {len(assigned)}")

    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        group_id="crash-kafka-python",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=10_000,
        heartbeat_interval_ms=500,
    )
    consumer.subscribe([topic], listener=Listener())
    values: list[bytes] = []
    try:

        def read(count: int) -> None:
            deadline = time.monotonic() + WAIT_S
            while len(values) < count and time.monotonic() < deadline:
                # The time left, not a short poll: a rebalance a poll starts must end in it (compatibility guide).
                left_ms = max(int((deadline - time.monotonic()) * 1000), 1)
                for batch in consumer.poll(timeout_ms=left_ms, max_records=count - len(values)).values():
                    values.extend(m.value for m in batch)
            assert len(values) == count, f"read {len(values)} of {count}; events {events}"

        read(10)
        consumer.commit()
        assert events[-1] == f"assign {PARTITIONS}"
        events.clear()
        crash_and_restart(broker, topic)
        read(20)
        consumer.commit()
        committed = [consumer.committed(TopicPartition(topic, p)) for p in range(PARTITIONS)]
        assert sum(c or 0 for c in committed) == 20
        assert events == []  # no rebalance: nothing revoked or assigned again (close revokes: asked before it)
    finally:
        consumer.close()


def test_a_static_member_keeps_its_instance_through_a_crash_and_its_own_restart(serve: Serve) -> None:
    """confluent-kafka with `group.instance.id`: through the broker's kill -9 it keeps its partitions; a new process
    with the same instance id then takes them over without a rebalance, as on Kafka (never FENCED_INSTANCE_ID, which
    a static member treats as fatal)."""
    from confluent_kafka import Consumer

    broker = serve("--num-partitions", str(PARTITIONS), "--http-port", "0")
    topic = "crash-group-static"
    produce(broker.bootstrap, topic, "before", 10)
    settings = {
        "bootstrap.servers": broker.bootstrap,
        "group.id": "crash-static",
        "group.instance.id": "instance-1",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 10_000,
        "heartbeat.interval.ms": 500,
    }
    events: list[str] = []

    def started() -> Any:
        consumer = Consumer(settings)
        consumer.subscribe(
            [topic],
            on_assign=lambda _, parts: events.append(f"assign {len(parts)}"),
            on_revoke=lambda _, parts: events.append(f"revoke {len(parts)}"),
            on_lost=lambda _, parts: events.append(f"lost {len(parts)}"),
        )
        return consumer

    def read(consumer: Any, count: int) -> list[bytes]:
        values: list[bytes] = []
        deadline = time.monotonic() + WAIT_S
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value())
            elif message is not None:
                assert not message.error().fatal(), message.error()
        assert len(values) == count, f"read {len(values)} of {count}; events {events}"
        return values

    first = started()
    read(first, 10)
    first.commit(asynchronous=False)
    assert rebalances(broker, "crash-static") == 1  # its first generation
    crash_and_restart(broker, topic)
    read(first, 10)
    first.commit(asynchronous=False)
    assert events == [f"assign {PARTITIONS}"]
    # The process ends without leaving: a static member's close does not send LeaveGroup.
    first.close()
    events.clear()
    produce(broker.bootstrap, topic, "later", 10)
    second = started()
    try:
        assert sorted(read(second, 10)) == sorted(f"later-{i}".encode() for i in range(10))
        assert events == [f"assign {PARTITIONS}"]
    finally:
        second.close()
    assert "Restored 1 classic groups, 1 of them with members" in broker.log()
    assert rebalances(broker, "crash-static") == 0, "the restarted broker completed a generation: a rebalance"


def rebalances(broker: ServedBroker, group: str) -> float:
    """The group's generations completed since the broker's start, from its Prometheus metrics."""
    import urllib.request

    assert broker.console_url is not None
    with urllib.request.urlopen(f"{broker.console_url.rstrip('/')}/metrics", timeout=WAIT_S) as answer:
        text = answer.read().decode()
    prefix = f'kafkalite_consumergroup_rebalances_total{{consumergroup="{group}"}} '
    values = [float(line[len(prefix) :]) for line in text.splitlines() if line.startswith(prefix)]
    return values[0] if values else 0.0
