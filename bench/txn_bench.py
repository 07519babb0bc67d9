"""Transactions: what they cost a producer and a read_committed consumer, against librdkafka's mock cluster.

    .venv/bin/python bench/txn_bench.py [--rounds 3] [--transactions 20] [--size 100] [--baseline plain]

Producer: confluent-kafka sends `transactions` x 1,000 messages of `size` bytes to one partition with acks=all and
linger.ms=5, once as an idempotent producer (the same producer without transactions: a transactional producer is
always idempotent, so at most 5 requests in flight) and once as a transactional producer (one transaction per 1,000
messages: begin, produce, commit_transaction; the median commit_transaction time, which includes flushing what is
still in flight, is reported too). `--baseline plain` makes the baseline a non-idempotent acks=all producer instead
(unbounded requests in flight). Each is timed from the first produce to the last
delivery (plain: flush; transactional: the last commit), against `kafkalite serve --fsync always` (the default),
`kafkalite serve --fsync never`, and librdkafka's mock cluster (`test.mock.num.brokers=1`, in memory, which serves
transactions too), each started fresh per round (bench.brokers). Medians over `rounds`.

Consumer: on KafkaLite (fsync never) the transactionally written topic (committed transactions only: data plus one
commit marker per 1,000 messages, no aborts) is read from the start to the end by a confluent-kafka consumer with
isolation.level read_uncommitted and with read_committed, alternating (u, c, c, u per round, so neither always runs
first); messages per second, medians over every read.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import confluent_kafka

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.brokers import PEERS, QUIET

BATCH = 1000


def produce(
    bootstrap: str,
    topic: str,
    transactions: int,
    size: int,
    *,
    transactional: bool,
    commits: list[float],
    idempotent: bool = True,
) -> float:
    """Messages per second for `transactions` x BATCH messages; each commit_transaction's seconds go to `commits`."""
    config = {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "enable.idempotence": idempotent, **QUIET}
    if transactional:
        config["transactional.id"] = f"bench-{time.monotonic_ns()}"
    producer = confluent_kafka.Producer(config)
    if transactional:
        producer.init_transactions(60)
    value = b"x" * size
    began = time.perf_counter()
    for _ in range(transactions):
        if transactional:
            producer.begin_transaction()
        for _ in range(BATCH):
            while True:
                try:
                    producer.produce(topic, value, partition=0)
                    break
                except BufferError:
                    producer.poll(0.01)
            producer.poll(0)
        if transactional:
            committing = time.perf_counter()
            producer.commit_transaction(60)  # flushes what is still in flight, then EndTxn
            commits.append(time.perf_counter() - committing)
    if not transactional:
        assert producer.flush(60) == 0
    return transactions * BATCH / (time.perf_counter() - began)


def consume(bootstrap: str, topic: str, count: int, isolation: str) -> float:
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{time.monotonic_ns()}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 10,
            **QUIET,
        }
    )
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
    got = 0
    began = time.perf_counter()
    while got < count:
        for message in consumer.consume(1000, 1.0):
            if message.error() is None:
                got += 1
    elapsed = time.perf_counter() - began
    consumer.close()
    return count / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--transactions", type=int, default=20)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--baseline", choices=("idempotent", "plain"), default="idempotent")
    args = parser.parse_args()
    peers = {peer.name: peer for peer in PEERS}
    produced: dict[tuple[str, bool], list[float]] = {}
    commit_s: dict[str, list[float]] = {}
    consumed: dict[str, list[float]] = {}
    for round_ in range(args.rounds):
        for name in ("kafkalite", "kafkalite-nofsync", "mock"):
            with peers[name].start() as running:
                for transactional in (False, True):
                    topic = f"t-{round_}-{int(transactional)}"
                    running.create_topic(topic, 1)
                    rate = produce(
                        running.bootstrap,
                        topic,
                        args.transactions,
                        args.size,
                        transactional=transactional,
                        commits=commit_s.setdefault(name, []),
                        idempotent=transactional or args.baseline == "idempotent",
                    )
                    produced.setdefault((name, transactional), []).append(rate)
                    print(f"round {round_} {name} transactional={transactional}: {rate:,.0f} msg/s", flush=True)
                if name == "kafkalite-nofsync":
                    count = args.transactions * BATCH
                    for isolation in ("read_uncommitted", "read_committed", "read_committed", "read_uncommitted"):
                        rate = consume(running.bootstrap, f"t-{round_}-1", count, isolation)
                        consumed.setdefault(isolation, []).append(rate)
                        print(f"round {round_} consume {isolation}: {rate:,.0f} msg/s", flush=True)
    print(
        f"\n| broker | {args.baseline}, acks=all (msg/s) | transactional (msg/s) | ratio | commit_transaction (ms) |"
        "\n|---|---:|---:|---:|---:|"
    )
    for name in ("kafkalite", "kafkalite-nofsync", "mock"):
        plain = statistics.median(produced[(name, False)])
        txn = statistics.median(produced[(name, True)])
        commit_ms = 1000 * statistics.median(commit_s[name])
        print(f"| {peers[name].label} | {plain:,.0f} | {txn:,.0f} | {txn / plain:.2f}x | {commit_ms:.1f} |")
    uncommitted = statistics.median(consumed["read_uncommitted"])
    committed = statistics.median(consumed["read_committed"])
    print(
        "\n| consumer on KafkaLite fsync=never | msg/s |\n|---|---:|\n"
        f"| read_uncommitted | {uncommitted:,.0f} |\n| read_committed | {committed:,.0f} "
        f"({committed / uncommitted:.2f}x) |"
    )


if __name__ == "__main__":
    main()
