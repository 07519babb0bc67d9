"""Consumer groups over the wire with confluent-kafka (librdkafka): share, rebalance, commit/resume, restart, admin."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from groups_wire import SETTINGS, WAIT_S, balanced

from kafkalite.server import ThreadedServer, run_in_thread

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]


def consumer(server: ThreadedServer, group: str, **config: Any) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": server.bootstrap,
            "group.id": group,
            "session.timeout.ms": 3000,
            "heartbeat.interval.ms": 100,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **config,
        }
    )


def produce(server: ThreadedServer, topic: str, partitions: int, per_partition: int) -> None:
    """Create `topic` and write `per_partition` messages to each of its partitions."""
    server.call(server.broker.create_topic(topic, partitions))
    producer = Producer({"bootstrap.servers": server.bootstrap, "linger.ms": 5})
    failures: list[Any] = []
    for p in range(partitions):
        for i in range(per_partition):
            producer.produce(topic, f"{p}-{i}".encode(), partition=p, on_delivery=lambda e, _: failures.append(e))
    assert producer.flush(WAIT_S) == 0
    assert failures == [None] * partitions * per_partition


def poll_until(consumers: list[Consumer], done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        for c in consumers:
            c.poll(0.05)


def describe(admin: AdminClient, group: str) -> Any:
    return admin.describe_consumer_groups([group], request_timeout=10)[group].result(WAIT_S)


def listed(admin: AdminClient) -> dict[str, Any]:
    return {g.group_id: g.state for g in admin.list_consumer_groups(request_timeout=10).result(WAIT_S).valid}


def test_three_consumers_share_then_rebalance_and_admin_sees_it(threaded: ThreadedServer) -> None:
    threaded.call(threaded.broker.create_topic("shared", 6))
    admin = AdminClient({"bootstrap.servers": threaded.bootstrap})
    consumers = [consumer(threaded, "cf-share", **{"client.id": f"cf-{i}"}) for i in range(3)]
    try:
        for c in consumers:
            c.subscribe(["shared"])
        poll_until(consumers, balanced(consumers, 6), "3 consumers to share 6 partitions")

        group = describe(admin, "cf-share")
        assert group.state == ConsumerGroupState.STABLE
        assert sorted(m.client_id for m in group.members) == ["cf-0", "cf-1", "cf-2"]
        assert all(m.host for m in group.members)
        owned = sorted(tp.partition for m in group.members for tp in m.assignment.topic_partitions)
        assert owned == list(range(6))
        assert listed(admin)["cf-share"] == ConsumerGroupState.STABLE

        consumers.pop(0).close()
        poll_until(consumers, balanced(consumers, 6), "the 2 remaining consumers to take over all 6 partitions")
        assert sorted(len(c.assignment()) for c in consumers) == [3, 3]
        assert len(describe(admin, "cf-share").members) == 2
    finally:
        for c in consumers:
            c.close()
    assert describe(admin, "cf-share").state == ConsumerGroupState.EMPTY
    admin.delete_consumer_groups(["cf-share"], request_timeout=10)["cf-share"].result(WAIT_S)
    assert "cf-share" not in listed(admin)


def consume(c: Consumer, count: int) -> list[Any]:
    received: list[Any] = []
    deadline = time.monotonic() + WAIT_S
    while len(received) < count:
        assert time.monotonic() < deadline, f"got {len(received)} of {count} messages"
        message = c.poll(0.1)
        if message is not None and message.error() is None:
            received.append(message)
    return received


def test_commit_close_and_resume_from_committed(threaded: ThreadedServer) -> None:
    produce(threaded, "resume", 1, 20)
    first = consumer(threaded, "cf-resume")
    started = time.monotonic()
    first.subscribe(["resume"])
    head = consume(first, 1)
    print(f"\nconfluent-kafka: subscribe -> first message {time.monotonic() - started:.3f} s")
    head += consume(first, 7)
    assert [m.offset() for m in head] == list(range(8))
    first.commit(asynchronous=False)
    first.close()

    second = consumer(threaded, "cf-resume")
    second.subscribe(["resume"])
    try:
        assert [m.offset() for m in consume(second, 12)] == list(range(8, 20))
        [committed] = second.committed([TopicPartition("resume", 0)], timeout=10)
        assert committed.offset == 8
    finally:
        second.close()


def test_resume_exactly_from_committed_offsets_after_restart(tmp_path: Path) -> None:
    with run_in_thread(data_dir=tmp_path, **SETTINGS) as server:
        produce(server, "durable", 3, 10)
        c = consumer(server, "cf-durable")
        c.subscribe(["durable"])
        consume(c, 12)
        c.commit(asynchronous=False)
        committed = {tp.partition: tp.offset for tp in c.committed([TopicPartition("durable", p) for p in range(3)])}
        c.close()
    assert sum(o for o in committed.values() if o > 0) == 12

    with run_in_thread(data_dir=tmp_path, **SETTINGS) as server:
        admin = AdminClient({"bootstrap.servers": server.bootstrap})
        assert listed(admin)["cf-durable"] == ConsumerGroupState.EMPTY
        assert describe(admin, "cf-durable").state == ConsumerGroupState.EMPTY
        c = consumer(server, "cf-durable")
        c.subscribe(["durable"])
        try:
            rest = consume(c, 18)
        finally:
            c.close()
    start = {p: max(o, 0) for p, o in committed.items()}
    assert sorted((m.partition(), m.offset()) for m in rest) == [(p, o) for p in range(3) for o in range(start[p], 10)]
