"""Exactly once under crashes, against `kafkalite serve`.

* An exactly-once consume-transform-produce loop (confluent-kafka, `eos_app.py`) is killed with -9 several times
  while it works and restarted: the output topic, read with read_committed, holds every input exactly once.
* The same loop keeps running while the broker under it is killed with -9 and restarted several times: the output
  holds every input exactly once, and its consumer group does not rebalance.
* A transactional producer commits and aborts in a loop while the broker is killed with -9 and restarted several
  times: after the last restart no committed message is missing, none is duplicated, no aborted or abandoned message
  is visible to read_committed, a transaction whose commit outcome the producer never learned is there whole or not
  at all, and the last stable offset catches up with the high watermark once the broker has aborted what was left
  open.
The CI variants are short; the `slow` ones run more rounds.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import confluent_kafka
import pytest

from .clients import WAIT_S, until
from .conftest import Serve
from .served import ServedBroker
from .txn_clients import read_values

pytestmark = [pytest.mark.interop, pytest.mark.timeout(600)]

APP = Path(__file__).with_name("eos_app.py")


def fill_input(bootstrap: str, count: int) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in range(count):
        producer.produce("in", b"m%05d" % i, key=b"%d" % (i % 5))
    assert producer.flush(WAIT_S) == 0


def committed_input(bootstrap: str) -> int:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "eos"})
    try:
        partitions = consumer.committed([confluent_kafka.TopicPartition("in", p) for p in range(3)], WAIT_S)
        return sum(max(tp.offset, 0) for tp in partitions)
    finally:
        consumer.close()


def run_eos(broker: ServedBroker, count: int, kills: int, tmp_path: Path) -> None:
    fill_input(broker.bootstrap, count)
    log_path = tmp_path / "eos-app.log"
    with log_path.open("w") as log:
        for run in range(kills + 1):
            target = count if run == kills else (run + 1) * count // (kills + 1)
            app = subprocess.Popen([sys.executable, str(APP), broker.bootstrap], stdout=log, stderr=subprocess.STDOUT)
            try:
                until(
                    lambda t=target: committed_input(broker.bootstrap) >= t,  # type: ignore[misc]
                    f"the app to pass {target} inputs",
                    lambda: time.sleep(0.1),
                )
            finally:
                app.send_signal(signal.SIGKILL)  # mid-work: its open transaction is aborted when the next one starts
                app.wait()
    out = read_values("confluent", broker.bootstrap, "out", "read_committed", partitions=3)
    assert sorted(out) == [b"M%05d" % i for i in range(count)], (
        f"each input exactly once; app log:\n{log_path.read_text()[-3000:]}"
    )


def test_exactly_once_loop_survives_app_kills(serve: Serve, tmp_path: Path) -> None:
    broker = serve("--fsync", "never", "--num-partitions", "3")
    run_eos(broker, count=300, kills=2, tmp_path=tmp_path)


@pytest.mark.slow
def test_exactly_once_loop_survives_many_app_kills(serve: Serve, tmp_path: Path) -> None:
    broker = serve("--fsync", "never", "--num-partitions", "3")
    run_eos(broker, count=1500, kills=4, tmp_path=tmp_path)


def run_eos_through_broker_kills(broker: ServedBroker, count: int, kills: int, tmp_path: Path) -> str:
    """The app runs throughout while the broker is killed with -9 and started again `kills` times under it; returns
    the app's log once every input is committed."""
    fill_input(broker.bootstrap, count)
    log_path = tmp_path / "eos-app.log"
    with log_path.open("w") as log:
        app = subprocess.Popen([sys.executable, str(APP), broker.bootstrap], stdout=log, stderr=subprocess.STDOUT)
        try:
            for kill in range(kills + 1):
                target = (kill + 1) * count // (kills + 1)
                until(
                    lambda t=target: app.poll() is None and committed_input(broker.bootstrap) >= t,  # type: ignore[misc]
                    f"the app to pass {target} inputs (it exited with {app.poll()}); app log:\n{log_path.read_text()}",
                    lambda: time.sleep(0.1),
                )
                if kill < kills:
                    broker.kill()  # mid-work: a transaction of the app is open or being committed
                    broker.start()
        finally:
            app.send_signal(signal.SIGKILL)
            app.wait()
    app_log = log_path.read_text()
    out = read_values("confluent", broker.bootstrap, "out", "read_committed", partitions=3)
    assert sorted(out) == [b"M%05d" % i for i in range(count)], f"each input exactly once; app log:\n{app_log[-3000:]}"
    return app_log


def test_exactly_once_loop_survives_broker_kill_9(serve: Serve, tmp_path: Path) -> None:
    """The app keeps running while the broker under it is killed twice: the output holds each input exactly once, and
    the app's consumer keeps its partitions throughout (the broker restores the group's generation, so the offsets
    the app commits in its transactions keep being accepted)."""
    broker = serve("--num-partitions", "3", "--transaction-abort-interval-ms", "200")
    app_log = run_eos_through_broker_kills(broker, count=600, kills=2, tmp_path=tmp_path)
    assert app_log.count("assigned") == 1, f"the group rebalanced; app log:\n{app_log[-3000:]}"


@pytest.mark.slow
def test_exactly_once_loop_survives_many_broker_kill_9(serve: Serve, tmp_path: Path) -> None:
    broker = serve("--num-partitions", "3", "--transaction-abort-interval-ms", "200")
    run_eos_through_broker_kills(broker, count=3000, kills=6, tmp_path=tmp_path)


class Outcomes:
    """What the producer learned of each transaction: its values, and committed / aborted / unknown."""

    def __init__(self) -> None:
        self.committed: list[list[bytes]] = []
        self.aborted: list[list[bytes]] = []  # aborted by the producer, or abandoned open (aborted by the broker)
        self.unknown: list[list[bytes]] = []  # commit_transaction raised: either outcome is allowed, atomically


def produce_until_killed(broker: ServedBroker, round_: int, outcomes: Outcomes, stop: threading.Event) -> None:
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "transactional.id": "crash-loop",
            "transaction.timeout.ms": 3000,
            "message.timeout.ms": 3000,
            "socket.timeout.ms": 3000,
            "linger.ms": 1,
        }
    )
    producer.init_transactions(WAIT_S)
    txn = 0
    while not stop.is_set():
        values = [b"r%d-t%d-%d" % (round_, txn, i) for i in range(random.randint(1, 8))]
        try:
            producer.begin_transaction()
            for value in values:
                producer.produce("crash", value, partition=txn % 2)
            if txn % 3 == 2:
                producer.abort_transaction(10)
                outcomes.aborted.append(values)
                txn += 1
                continue
        except confluent_kafka.KafkaException:
            outcomes.aborted.append(values)  # never committed: left open, so aborted when the next producer fences it
            return
        try:
            producer.commit_transaction(10)
        except confluent_kafka.KafkaException:
            outcomes.unknown.append(values)
            return
        outcomes.committed.append(values)
        txn += 1


def kill_and_flag(broker: ServedBroker, stop: threading.Event) -> None:
    broker.kill()
    stop.set()


def crash_rounds(broker: ServedBroker, rounds: int) -> Outcomes:
    outcomes = Outcomes()
    for round_ in range(rounds):
        stop = threading.Event()
        killer = threading.Timer(random.uniform(0.8, 2.0), kill_and_flag, (broker, stop))
        killer.start()
        try:
            produce_until_killed(broker, round_, outcomes, stop)
        finally:
            killer.join()
        broker.start()
    return outcomes


def check_after_crashes(broker: ServedBroker, outcomes: Outcomes) -> None:
    assert outcomes.committed, "some transactions committed between the kills"
    # Whatever the producer left open is aborted by the broker within the 3 s timeout (+ the sweep).
    until(lambda: lso_caught_up(broker), "the last stable offset to reach the high watermark", lambda: time.sleep(0.2))
    visible = read_values("confluent", broker.bootstrap, "crash", "read_committed", partitions=2)
    assert len(visible) == len(set(visible)), "no committed message twice"
    seen = set(visible)
    for values in outcomes.committed:
        assert set(values) <= seen, f"a committed transaction is missing: {values}"
    for values in outcomes.aborted:
        assert not set(values) & seen, f"an aborted transaction is visible: {values}"
    for values in outcomes.unknown:
        assert set(values) <= seen or not set(values) & seen, f"a transaction is visible in part: {values}"
    known = {v for group in outcomes.committed + outcomes.unknown for v in group}
    assert seen <= known, f"visible values nobody committed: {sorted(seen - known)[:5]}"


def lso_caught_up(broker: ServedBroker) -> bool:
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "lso", "isolation.level": "read_committed"}
    )
    try:
        stable = consumer.offsets_for_times([confluent_kafka.TopicPartition("crash", p, -1) for p in range(2)], WAIT_S)
        high = [consumer.get_watermark_offsets(confluent_kafka.TopicPartition("crash", p), WAIT_S)[1] for p in range(2)]
        return [tp.offset for tp in stable] == high
    finally:
        consumer.close()


def test_transactions_survive_broker_kill_9(serve: Serve) -> None:
    broker = serve("--num-partitions", "2", "--transaction-abort-interval-ms", "200")
    check_after_crashes(broker, crash_rounds(broker, rounds=3))


@pytest.mark.slow
def test_transactions_survive_many_broker_kill_9(serve: Serve) -> None:
    broker = serve("--num-partitions", "2", "--transaction-abort-interval-ms", "200")
    check_after_crashes(broker, crash_rounds(broker, rounds=6))
