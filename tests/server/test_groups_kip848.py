"""KIP-848 consumer groups with confluent-kafka (librdkafka, `group.protocol=consumer`) against a served broker.

The broker computes the assignments; rebalances are incremental: members that keep partitions keep consuming, and
a partition reaches its new owner only after the old one revoked it. The callbacks of every consumer run in this
test's thread (inside `poll`), so one ownership table checks that no partition is ever held by two members.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from groups_wire import WAIT_S

from kafkalite.server import ThreadedServer, run_in_thread

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

SETTINGS: dict[str, Any] = {
    "fsync": False,
    "group_min_session_timeout_ms": 100,
    "group_consumer_heartbeat_interval_ms": 100,
    "group_consumer_session_timeout_ms": 3000,
}


@pytest.fixture
def served() -> Iterator[ThreadedServer]:
    with run_in_thread(data_dir=None, **SETTINGS) as s:
        yield s


class Ownership:
    """Who holds which partition, from the consumers' own callbacks; a second owner fails the test at once."""

    def __init__(self) -> None:
        self.owner: dict[tuple[str, int], str] = {}
        self.revoked: dict[str, list[tuple[str, int]]] = {}
        self.failures: list[str] = []

    def callbacks(self, name: str) -> dict[str, Callable[[Consumer, list[TopicPartition]], None]]:
        def assign(_: Consumer, partitions: list[TopicPartition]) -> None:
            for tp in partitions:
                holder = self.owner.get((tp.topic, tp.partition))
                if holder is not None and holder != name:
                    self.failures.append(f"{tp.topic}[{tp.partition}] assigned to {name} while {holder} holds it")
                self.owner[(tp.topic, tp.partition)] = name

        def revoke(_: Consumer, partitions: list[TopicPartition]) -> None:
            for tp in partitions:
                self.revoked.setdefault(name, []).append((tp.topic, tp.partition))
                if self.owner.get((tp.topic, tp.partition)) == name:
                    del self.owner[(tp.topic, tp.partition)]

        return {"on_assign": assign, "on_revoke": revoke, "on_lost": revoke}

    def held_by(self, name: str) -> set[int]:
        return {p for (_, p), holder in self.owner.items() if holder == name}


def kip848_consumer(server: ThreadedServer, group: str, name: str, **config: Any) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": server.bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "client.id": name,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **config,
        }
    )


def produce(server: ThreadedServer, topic: str, partitions: int, per_partition: int) -> None:
    producer = Producer({"bootstrap.servers": server.bootstrap, "linger.ms": 5})
    for p in range(partitions):
        for i in range(per_partition):
            producer.produce(topic, f"{p}-{i}".encode(), partition=p)
    assert producer.flush(WAIT_S) == 0


def poll_until(consumers: dict[str, Consumer], done: Callable[[], bool], what: str, seen: dict[str, int]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        for name, c in consumers.items():
            message = c.poll(0.02)
            if message is not None:
                assert message.error() is None or message.error().code() == KafkaError._PARTITION_EOF, message.error()
                if message.error() is None:
                    seen[name] = seen.get(name, 0) + 1


def test_three_members_share_one_leaves_and_the_others_keep_consuming(served: ThreadedServer) -> None:
    served.call(served.broker.create_topic("k-shared", 6))
    produce(served, "k-shared", 6, 50)
    ownership = Ownership()
    names = ["a", "b", "c"]
    consumers = {n: kip848_consumer(served, "k-share", n) for n in names}
    seen: dict[str, int] = {}
    try:
        for n, c in consumers.items():
            c.subscribe(["k-shared"], **ownership.callbacks(n))
        poll_until(
            consumers,
            lambda: all(len(ownership.held_by(n)) == 2 and seen.get(n, 0) > 0 for n in names),
            "2 partitions each, and messages from them",
            seen,
        )
        assert ownership.failures == []
        kept = {n: ownership.held_by(n) for n in ("b", "c")}
        revoked_before = {n: list(ownership.revoked.get(n, [])) for n in ("b", "c")}

        leaving = consumers.pop("a")
        leaving.close()  # its on_revoke runs inside close(): it gives everything back before leaving
        assert ownership.held_by("a") == set()
        produce(served, "k-shared", 6, 20)
        before = dict(seen)
        poll_until(
            consumers,
            lambda: all(len(ownership.held_by(n)) == 3 and seen.get(n, 0) > before.get(n, 0) + 20 for n in ("b", "c")),
            "3 partitions each, and more messages",
            seen,
        )
        assert ownership.failures == []
        for n in ("b", "c"):
            assert kept[n] <= ownership.held_by(n), f"{n} kept its partitions"
            assert ownership.revoked.get(n, []) == revoked_before[n], f"{n} revoked nothing when a left"
        assert {p for n in ("b", "c") for p in ownership.held_by(n)} == set(range(6))

        admin = AdminClient({"bootstrap.servers": served.bootstrap})
        described = admin.describe_consumer_groups(["k-share"], request_timeout=10)["k-share"].result(WAIT_S)
        assert sorted(m.client_id for m in described.members) == ["b", "c"]
        owned = sorted(tp.partition for m in described.members for tp in m.assignment.topic_partitions)
        assert owned == list(range(6))
    finally:
        for c in consumers.values():
            c.close()
    assert ownership.failures == []


def test_commit_and_resume(served: ThreadedServer) -> None:
    served.call(served.broker.create_topic("k-resume", 2))
    produce(served, "k-resume", 2, 10)
    first = kip848_consumer(served, "k-resume-g", "first")
    first.subscribe(["k-resume"])
    values: list[bytes] = []
    deadline = time.monotonic() + WAIT_S
    while len(values) < 12:
        assert time.monotonic() < deadline, "timed out consuming"
        message = first.poll(0.1)
        if message is not None and message.error() is None:
            values.append(message.value())
            first.commit(message=message, asynchronous=False)
    first.close()

    second = kip848_consumer(served, "k-resume-g", "second")
    second.subscribe(["k-resume"])
    rest: list[bytes] = []
    deadline = time.monotonic() + WAIT_S
    while len(values) + len(rest) < 20:
        assert time.monotonic() < deadline, "timed out resuming"
        message = second.poll(0.1)
        if message is not None and message.error() is None:
            rest.append(message.value())
    second.close()
    assert sorted(values + rest) == sorted(f"{p}-{i}".encode() for p in range(2) for i in range(10)), "no duplicates"


def test_a_consumer_group_beside_a_classic_group(served: ThreadedServer) -> None:
    served.call(served.broker.create_topic("k-new", 2))
    served.call(served.broker.create_topic("k-old", 2))
    produce(served, "k-new", 2, 5)
    produce(served, "k-old", 2, 5)
    new = kip848_consumer(served, "k-new-g", "new")
    old = Consumer(
        {
            "bootstrap.servers": served.bootstrap,
            "group.id": "k-old-g",
            "group.protocol": "classic",
            "session.timeout.ms": 3000,
            "heartbeat.interval.ms": 100,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        new.subscribe(["k-new"])
        old.subscribe(["k-old"])
        counts = {"new": 0, "old": 0}
        deadline = time.monotonic() + WAIT_S
        while counts["new"] < 10 or counts["old"] < 10:
            assert time.monotonic() < deadline, f"timed out: {counts}"
            for name, c in (("new", new), ("old", old)):
                message = c.poll(0.05)
                if message is not None and message.error() is None:
                    counts[name] += 1
        admin = AdminClient({"bootstrap.servers": served.bootstrap})
        listed = admin.list_consumer_groups(request_timeout=10).result(WAIT_S).valid
        types = {g.group_id: g.type.name for g in listed}
        assert types["k-new-g"] == "CONSUMER"
        assert types["k-old-g"] == "CLASSIC"
        # a classic member may not join the consumer group while it has members
        intruder = Consumer(
            {
                "bootstrap.servers": served.bootstrap,
                "group.id": "k-new-g",
                "group.protocol": "classic",
                "session.timeout.ms": 3000,
                "auto.offset.reset": "earliest",
            }
        )
        intruder.subscribe(["k-new"])
        error = None
        deadline = time.monotonic() + WAIT_S
        while error is None:
            assert time.monotonic() < deadline, "the classic member was never refused"
            message = intruder.poll(0.1)
            new.poll(0.01)
            if message is not None and message.error() is not None:
                error = message.error()
        assert error.code() == KafkaError.INCONSISTENT_GROUP_PROTOCOL
        intruder.close()
    finally:
        new.close()
        old.close()


def wait_for(consumers: list[Consumer], done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        for c in consumers:
            c.poll(0.02)


def test_regex_subscription_follows_new_topics(served: ThreadedServer) -> None:
    for name in ("k-re-a", "k-re-b", "k-other"):
        served.call(served.broker.create_topic(name, 2))
    consumer = kip848_consumer(served, "k-regex", "r")
    try:
        consumer.subscribe(["^k-re-.*"])
        wait_for([consumer], lambda: len(consumer.assignment()) == 4, "the two matching topics")
        assert {tp.topic for tp in consumer.assignment()} == {"k-re-a", "k-re-b"}
        served.call(served.broker.create_topic("k-re-c", 1))
        wait_for([consumer], lambda: len(consumer.assignment()) == 5, "the new matching topic")
        assert ("k-re-c", 0) in {(tp.topic, tp.partition) for tp in consumer.assignment()}
    finally:
        consumer.close()


def test_a_static_member_comes_back_to_its_partitions(served: ThreadedServer) -> None:
    served.call(served.broker.create_topic("k-static", 2))
    first = kip848_consumer(served, "k-static-g", "s1", **{"group.instance.id": "i1"})
    other = kip848_consumer(served, "k-static-g", "s2", **{"group.instance.id": "i2"})
    again: Consumer | None = None
    try:
        given_to_other: list[int] = []
        first.subscribe(["k-static"])
        other.subscribe(["k-static"], on_assign=lambda _, ps: given_to_other.extend(tp.partition for tp in ps))
        wait_for([first, other], lambda: len(first.assignment()) == len(other.assignment()) == 1, "one each")
        mine = {tp.partition for tp in first.assignment()}
        given_to_other.clear()  # from here on, the other member must not be given the absent member's partition
        epoch = served.broker.groups.describe("k-static-g").generation_id
        first.close()  # a static member leaves with epoch -2: its partition waits for it
        again = kip848_consumer(served, "k-static-g", "s1-again", **{"group.instance.id": "i1"})
        again.subscribe(["k-static"])
        wait_for([again, other], lambda: len(again.assignment()) == 1, "the instance to come back")
        assert {tp.partition for tp in again.assignment()} == mine
        assert not set(given_to_other) & mine, "the other member never got the absent member's partition"
        assert served.broker.groups.describe("k-static-g").generation_id == epoch, "no new group epoch"
    finally:
        other.close()
        if again is not None:
            again.close()


def test_a_live_member_carries_on_after_a_broker_restart_at_its_epoch(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The group is stored as Kafka's consumer-group records: after the restart the member's heartbeats at its epoch
    are accepted (no rejoin, no new group epoch), and consumption goes on from where it was, nothing read twice."""
    with run_in_thread(data_dir=tmp_path, **SETTINGS) as first:
        port = first.server.port
        first.call(first.broker.create_topic("k-restart", 2))
        produce(first, "k-restart", 2, 5)
        member = kip848_consumer(first, "k-restart-g", "survivor")
        member.subscribe(["k-restart"])
        before: list[bytes] = []
        deadline = time.monotonic() + WAIT_S
        while len(before) < 10:
            assert time.monotonic() < deadline, "timed out consuming before the restart"
            message = member.poll(0.05)
            if message is not None and message.error() is None:
                before.append(message.value())
        member.commit(asynchronous=False)
        epochs = first.call(_epochs(first.broker, "k-restart-g"))
    caplog.clear()
    try:
        with (
            caplog.at_level(logging.INFO, logger="kafkalite.groups"),
            run_in_thread(data_dir=tmp_path, port=port, **SETTINGS) as second,
        ):
            produce(second, "k-restart", 2, 3)
            after: list[tuple[int, int]] = []
            deadline = time.monotonic() + WAIT_S
            while len(after) < 6:
                assert time.monotonic() < deadline, f"timed out consuming after the restart: {after}"
                message = member.poll(0.05)
                if message is not None and message.error() is None:
                    after.append((message.partition(), message.offset()))
            late = member.poll(0.5)  # anything read twice would arrive here
            if late is not None and late.error() is None:
                after.append((late.partition(), late.offset()))
            described = second.broker.groups.describe("k-restart-g")
            assert [m.client_id for m in described.members] == ["survivor"]
            assert sorted(after) == [(p, o) for p in range(2) for o in range(5, 8)], "from the commits, nothing twice"
            assert second.call(_epochs(second.broker, "k-restart-g")) == epochs
            assert "Restored 1 consumer groups, 1 of them with members" in caplog.text
            assert "joined at epoch" not in caplog.text, "the member rejoined"
    finally:
        member.close()


async def _epochs(broker: Any, group_id: str) -> tuple[int, list[tuple[str, int]]]:
    """The group epoch and each member's (id, epoch)."""
    described = broker.groups.consumer_describe(group_id, {})
    assert described is not None
    return described.group_epoch, [(m.member_id, m.member_epoch) for m in described.members]
