"""KIP-848 consumer groups: what a target assignment costs the broker, and how long a join takes to settle.

    .venv/bin/python bench/kip848_bench.py [--rounds 5]

Assignors (pure, in process): one member joins a settled group of M-1 members subscribed to P partitions, and the
target assignment is computed again (sticky: from the previous target); the median seconds of that one computation
over `rounds` x 5 joins, for `uniform` with equal subscriptions (two topics), `uniform` with two different
subscriptions (half the members one topic, half both), and `range`.

Join to settled (over the wire, an in-process `kafkalite serve` on a random port, heartbeat interval 100 ms both
ways): two confluent-kafka consumers share a 6-partition topic; a third subscribes; seconds from its subscribe()
until the three hold two partitions each, as their assignment() says, and how many partitions the first two gave
up meanwhile (their on_revoke callbacks: an eager rebalance revokes all six), with `group.protocol=consumer` (KIP-848,
broker-side `uniform`) against `group.protocol=classic` (the eager range assignor, the classic default) and
`classic` with `cooperative-sticky`, on the same broker in the same round. Medians over `rounds`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import confluent_kafka

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kafkalite.groups.server_assignors import SERVER_ASSIGNORS, AssignmentSpec, TopicAssignment
from kafkalite.server import run_in_thread

A, B = uuid.UUID(int=1), uuid.UUID(int=2)
QUIET = {"log_level": 3}  # librdkafka: errors only


def assignor_seconds(name: str, members: int, partitions: int, mixed: bool, rounds: int) -> float:
    counts = {A: partitions // 2, B: partitions - partitions // 2}
    times: list[float] = []
    for _ in range(rounds):
        for joiner in range(5):
            subscriptions = {
                f"m{i:04}": frozenset({A}) if mixed and i % 2 else frozenset({A, B}) for i in range(members + joiner)
            }
            previous: dict[str, TopicAssignment] = SERVER_ASSIGNORS[name](
                {m: AssignmentSpec(s) for m, s in list(subscriptions.items())[:-1]}, counts
            )
            specs = {m: AssignmentSpec(s, previous.get(m, {})) for m, s in subscriptions.items()}
            began = time.perf_counter()
            SERVER_ASSIGNORS[name](specs, counts)
            times.append(time.perf_counter() - began)
    return statistics.median(times)


def consumer(bootstrap: str, group: str, protocol: str, strategy: str | None) -> confluent_kafka.Consumer:
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.protocol": protocol,
        "auto.offset.reset": "earliest",
        **QUIET,
    }
    if protocol == "classic":
        config |= {"session.timeout.ms": 6000, "heartbeat.interval.ms": 100}
        if strategy:
            config["partition.assignment.strategy"] = strategy
    return confluent_kafka.Consumer(config)


def join_seconds(bootstrap: str, group: str, protocol: str, strategy: str | None) -> tuple[float, int]:
    """Seconds from the third member's subscribe to two partitions each, and how many partitions the first two
    members gave up meanwhile (on_revoke), which they could not consume until the group settled."""
    members = [consumer(bootstrap, group, protocol, strategy) for _ in range(2)]
    revoked: list[int] = []
    try:
        for c in members:
            c.subscribe(["kip848-bench"], on_revoke=lambda _, ps: revoked.append(len(ps)))
        settle(members, 3)
        revoked.clear()
        members.append(consumer(bootstrap, group, protocol, strategy))
        began = time.perf_counter()
        members[-1].subscribe(["kip848-bench"])
        settle(members, 2)
        return time.perf_counter() - began, sum(revoked)
    finally:
        for c in members:
            c.close()


def settle(members: list[confluent_kafka.Consumer], each: int) -> None:
    deadline = time.monotonic() + 60
    while not all(len(c.assignment()) == each for c in members):
        if time.monotonic() > deadline:
            raise TimeoutError("the group did not settle in 60 s")
        for c in members:
            c.poll(0.01)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print("| members | partitions | uniform, equal (ms) | uniform, two subscriptions (ms) | range (ms) |")
    print("|---:|---:|---:|---:|---:|")
    for members, partitions in ((10, 100), (100, 1000), (300, 2000)):
        cells = [
            assignor_seconds("uniform", members, partitions, False, args.rounds),
            assignor_seconds("uniform", members, partitions, True, args.rounds),
            assignor_seconds("range", members, partitions, False, args.rounds),
        ]
        print(f"| {members} | {partitions:,} | " + " | ".join(f"{s * 1000:.2f}" for s in cells) + " |")
    settings = {"fsync": False, "group_consumer_heartbeat_interval_ms": 100, "group_min_session_timeout_ms": 100}
    runs: dict[str, list[tuple[float, int]]] = {"consumer": [], "classic range": [], "classic cooperative-sticky": []}
    with run_in_thread(data_dir=None, **settings) as served:
        served.call(served.broker.create_topic("kip848-bench", 6))
        for round_ in range(args.rounds):
            for label, protocol, strategy in (
                ("consumer", "consumer", None),
                ("classic range", "classic", "range"),
                ("classic cooperative-sticky", "classic", "cooperative-sticky"),
            ):
                runs[label].append(join_seconds(served.bootstrap, f"bench-{label}-{round_}", protocol, strategy))
    print("\n| protocol | join to settled, median (s) | rounds (s) | partitions revoked from the others, median |")
    print("|---|---:|---|---:|")
    for label, results in runs.items():
        seconds = [r[0] for r in results]
        revoked = statistics.median(r[1] for r in results)
        rounds = ", ".join(f"{x:.3f}" for x in seconds)
        print(f"| {label} | {statistics.median(seconds):.3f} | {rounds} | {revoked:g} |")


if __name__ == "__main__":
    main()
