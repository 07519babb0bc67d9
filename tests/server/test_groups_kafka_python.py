"""Consumer groups over the wire with kafka-python: share, rebalance, commit/resume, restart, admin."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from groups_wire import SETTINGS, WAIT_S, balanced
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition

from kafkalite.server import ThreadedServer, run_in_thread

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]


def consumer(server: ThreadedServer, group: str, **config: Any) -> KafkaConsumer:
    return KafkaConsumer(
        bootstrap_servers=server.bootstrap,
        group_id=group,
        session_timeout_ms=3000,
        heartbeat_interval_ms=100,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        **config,
    )


def produce(server: ThreadedServer, topic: str, partitions: int, per_partition: int) -> None:
    """Create `topic` and write `per_partition` messages to each of its partitions."""
    server.call(server.broker.create_topic(topic, partitions))
    producer = KafkaProducer(bootstrap_servers=server.bootstrap, linger_ms=5)
    futures = [
        producer.send(topic, f"{p}-{i}".encode(), partition=p) for p in range(partitions) for i in range(per_partition)
    ]
    for future in futures:
        future.get(WAIT_S)
    producer.close()


def poll_until(consumers: list[KafkaConsumer], done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        for c in consumers:
            c.poll(timeout_ms=50)


def consume(c: KafkaConsumer, count: int) -> list[Any]:
    """Poll until `count` messages came. Each poll may wait until the deadline (it returns as soon as messages come),
    so a rebalance that a poll starts also ends in it.

    kafka-python 3.0.12 loses a rejoin that a poll's timeout cuts short when the rejoin was started by new metadata
    (as after every first join on a broker whose `group.initial.rebalance.delay.ms` is 0: the leader assigns before
    the subscribed topic's metadata lands, then rejoins): the leader's assignment makes its rejoin check false, so no
    later poll awaits the join in flight, and the member stays without partitions for good. Short polls hit that
    under load; a commit between two polls may also find the rebalance still going."""
    received: list[Any] = []
    deadline = time.monotonic() + WAIT_S
    while len(received) < count:
        left_ms = int((deadline - time.monotonic()) * 1000)
        assert left_ms > 0, f"got {len(received)} of {count} messages"
        for batch in c.poll(timeout_ms=left_ms, max_records=count - len(received)).values():
            received.extend(batch)
    return received


def group_state(admin: KafkaAdminClient, group: str) -> Any:
    return admin.describe_groups([group])[group]


def listed(admin: KafkaAdminClient) -> dict[str, Any]:
    return {g["group_id"]: g for g in admin.list_groups()}


def test_three_consumers_share_then_rebalance_and_admin_sees_it(threaded: ThreadedServer) -> None:
    threaded.call(threaded.broker.create_topic("shared", 6))
    admin = KafkaAdminClient(bootstrap_servers=threaded.bootstrap)
    consumers = [consumer(threaded, "kp-share", client_id=f"kp-{i}") for i in range(3)]
    try:
        for c in consumers:
            # A leader without the topic's metadata assigns nothing and waits for a metadata refresh to rejoin.
            assert c.partitions_for_topic("shared") == set(range(6))
            c.subscribe(["shared"])
        poll_until(consumers, balanced(consumers, 6), "3 consumers to share 6 partitions")

        described = group_state(admin, "kp-share")
        assert described["group_state"] == "Stable"
        assert sorted(m["client_id"] for m in described["members"]) == ["kp-0", "kp-1", "kp-2"]
        owned = [
            p
            for m in described["members"]
            for t in m["member_assignment"]["assigned_partitions"]
            for p in t["partitions"]
        ]
        assert sorted(owned) == list(range(6))
        assert listed(admin)["kp-share"]["group_state"] == "Stable"

        consumers.pop(0).close()
        poll_until(consumers, balanced(consumers, 6), "the 2 remaining consumers to take over all 6 partitions")
        assert sorted(len(c.assignment()) for c in consumers) == [3, 3]
        assert len(group_state(admin, "kp-share")["members"]) == 2
    finally:
        for c in consumers:
            c.close()
    assert group_state(admin, "kp-share")["group_state"] == "Empty"
    admin.delete_groups(["kp-share"])
    assert "kp-share" not in listed(admin)
    admin.close()


def test_commit_close_and_resume_from_committed(threaded: ThreadedServer) -> None:
    produce(threaded, "resume", 1, 20)
    first = consumer(threaded, "kp-resume")
    started = time.monotonic()
    first.subscribe(["resume"])
    head = consume(first, 1)
    print(f"\nkafka-python: subscribe -> first message {time.monotonic() - started:.3f} s")
    head += consume(first, 7)
    assert [m.offset for m in head] == list(range(8))
    first.commit()
    first.close()

    second = consumer(threaded, "kp-resume")
    second.subscribe(["resume"])
    try:
        assert [m.offset for m in consume(second, 12)] == list(range(8, 20))
        assert second.committed(TopicPartition("resume", 0)) == 8
    finally:
        second.close()


def test_resume_exactly_from_committed_offsets_after_restart(tmp_path: Path) -> None:
    partitions = [TopicPartition("durable", p) for p in range(3)]
    with run_in_thread(data_dir=tmp_path, **SETTINGS) as server:
        produce(server, "durable", 3, 10)
        c = consumer(server, "kp-durable")
        c.subscribe(["durable"])
        consume(c, 12)
        c.commit()
        committed = {tp.partition: c.committed(tp) or 0 for tp in partitions}
        c.close()
    assert sum(committed.values()) == 12

    with run_in_thread(data_dir=tmp_path, **SETTINGS) as server:
        admin = KafkaAdminClient(bootstrap_servers=server.bootstrap)
        assert listed(admin)["kp-durable"]["group_state"] == "Empty"
        assert group_state(admin, "kp-durable")["group_state"] == "Empty"
        admin.close()
        c = consumer(server, "kp-durable")
        c.subscribe(["durable"])
        try:
            rest = consume(c, 18)
        finally:
            c.close()
    assert sorted((m.partition, m.offset) for m in rest) == [(p, o) for p in range(3) for o in range(committed[p], 10)]
