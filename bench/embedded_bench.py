"""Embedded KafkaLite against the seed article's 120-line design, in one run.

    python bench/embedded_bench.py [--sizes 10000,100000,1000000] [--partitions 1,8] [--rounds 3]

For each message count and partition count: produce N × 100-byte messages in-process, then consume them all with
one group consumer, and report msg/s for each phase, the cost per message, and the process's peak RSS growth.
The baseline is the article's design, written here: a list per partition and `read_from` scanning the whole list
on every read, so its cost per message grows with the log; KafkaLite's stays flat. Rounds alternate
(KafkaLite, baseline, KafkaLite, ...) and medians are printed; the baseline's quadratic reads are cut off at
`--baseline-limit` messages, beyond which its numbers are extrapolated and marked so.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import os
import resource
import statistics
import sys
import threading
import time
from collections import defaultdict

import kafkalite

PAYLOAD = b"x" * 100


# --- the seed article's broker: a list per partition, read_from scans the list ------------------------------------


class SeedPartition:
    def __init__(self) -> None:
        self._log: list[tuple[int, bytes]] = []
        self._lock = threading.Lock()
        self._next_offset = 0

    def append(self, message: bytes) -> int:
        with self._lock:
            offset = self._next_offset
            self._log.append((offset, message))
            self._next_offset += 1
            return offset

    def read_from(self, offset: int, max_count: int = 100) -> list[tuple[int, bytes]]:
        with self._lock:
            return [(off, msg) for off, msg in self._log if off >= offset][:max_count]


class SeedTopic:
    def __init__(self, name: str, num_partitions: int) -> None:
        self.name = name
        self.partitions = [SeedPartition() for _ in range(num_partitions)]
        self._round_robin = 0

    def route(self, key: bytes | None) -> int:
        if key is None:
            self._round_robin = (self._round_robin + 1) % len(self.partitions)
            return self._round_robin
        return int(hashlib.md5(key).hexdigest(), 16) % len(self.partitions)


class SeedBroker:
    def __init__(self) -> None:
        self.topics: dict[str, SeedTopic] = {}
        self.offsets: dict[tuple[str, str, int], int] = defaultdict(int)

    def create_topic(self, name: str, partitions: int) -> None:
        self.topics[name] = SeedTopic(name, partitions)

    def produce(self, topic: str, message: bytes, key: bytes | None = None) -> tuple[int, int]:
        t = self.topics[topic]
        partition = t.route(key)
        return partition, t.partitions[partition].append(message)

    def consume(self, group: str, topic: str, partition: int, max_count: int = 100) -> list[tuple[int, bytes]]:
        offset = self.offsets[(group, topic, partition)]
        messages = self.topics[topic].partitions[partition].read_from(offset, max_count)
        if messages:
            self.offsets[(group, topic, partition)] = messages[-1][0] + 1
        return messages


def seed_round(count: int, partitions: int) -> tuple[float, float]:
    broker = SeedBroker()
    broker.create_topic("bench", partitions)
    began = time.perf_counter()
    for _ in range(count):
        broker.produce("bench", PAYLOAD)
    produced = time.perf_counter() - began
    began = time.perf_counter()
    seen = 0
    while seen < count:
        for p in range(partitions):
            seen += len(broker.consume("g", "bench", p))
    consumed = time.perf_counter() - began
    return produced, consumed


# --- KafkaLite embedded ---------------------------------------------------------------------------------------------


async def kafkalite_round(count: int, partitions: int, batch: int) -> tuple[float, float]:
    async with kafkalite.Broker(data_dir=None) as broker:
        await broker.create_topic("bench", partitions=partitions)
        async with broker.producer(partitioner="round_robin", acks=1) as producer:
            began = time.perf_counter()
            for start in range(0, count, batch):
                await producer.send_batch("bench", [PAYLOAD] * min(batch, count - start))
            produced = time.perf_counter() - began
        async with broker.consumer("bench", group_id="bench", enable_auto_commit=False) as consumer:
            began = time.perf_counter()
            seen = 0
            while seen < count:
                seen += len(await consumer.getmany(timeout=1.0, max_records=100_000))
            consumed = time.perf_counter() - began
    return produced, consumed


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--partitions", default="1,8")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=1000, help="records per send_batch call")
    parser.add_argument("--baseline-limit", type=int, default=100_000)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    partition_counts = [int(p) for p in args.partitions.split(",")]

    print(f"# embedded bench — python {sys.version.split()[0]}, {os.cpu_count()} cpus, rounds={args.rounds}")
    print()
    print("| design | partitions | messages | produce msg/s | consume msg/s | both msg/s | µs/msg | peak RSS MB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for partitions in partition_counts:
        for count in sizes:
            results: dict[str, list[tuple[float, float]]] = {"kafkalite": [], "seed": []}
            for _ in range(args.rounds):
                gc.collect()
                results["kafkalite"].append(asyncio.run(kafkalite_round(count, partitions, args.batch)))
                if count <= args.baseline_limit:
                    gc.collect()
                    results["seed"].append(seed_round(count, partitions))
            for design, runs in results.items():
                if not runs:
                    print(f"| seed | {partitions} | {count:,} | — | — | — | — | skipped: quadratic reads |")
                    continue
                produce = statistics.median(r[0] for r in runs)
                consume = statistics.median(r[1] for r in runs)
                both = produce + consume
                print(
                    f"| {design} | {partitions} | {count:,} | {count / produce:,.0f} | {count / consume:,.0f} | "
                    f"{count / both:,.0f} | {both / count * 1e6:.2f} | {peak_rss_mb():.0f} |"
                )
            sys.stdout.flush()


if __name__ == "__main__":
    main()
