"""Embedded KafkaLite against the seed article's 120-line design, in one run.

    python bench/embedded_bench.py [--sizes 10000,100000,1000000] [--partitions 1,8] [--rounds 3]

For each message count and partition count: produce N × 100-byte messages in-process (`send_batch` of `--batch`
values, round robin, acks=1, in-memory broker), then consume them all with one group consumer (`getmany`), and
report msg/s for each phase and for both together, the wall-clock and CPU cost per message, and peak RSS.
The baseline is the article's design, written here: a list per partition and `read_from` scanning the whole list
on every read, so its cost per message grows with the log; KafkaLite's stays flat. Rounds alternate
(KafkaLite, baseline, KafkaLite, ...) and medians are printed; the baseline's quadratic reads make it too slow past
`--baseline-limit` messages, where its row says so.

Every round runs in a fresh child process (`--child`), after an untimed 2,000-message warm-up round, so "peak RSS" is
that run's own high-water mark (interpreter included, about 30 MB) and no round inherits another's heap.
"CPU µs/msg" is the child's process CPU time over the timed phases: on a shared machine it moves less than wall
time when other processes compete for the cores.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict

import kafkalite

PAYLOAD = b"x" * 100
WARM_UP = 2_000


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


Timings = tuple[float, float, float]  # produce wall seconds, consume wall seconds, CPU seconds of both


def seed_round(count: int, partitions: int, batch: int) -> Timings:
    broker = SeedBroker()
    broker.create_topic("bench", partitions)
    cpu = time.process_time()
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
    return produced, consumed, time.process_time() - cpu


# --- KafkaLite embedded ---------------------------------------------------------------------------------------------


async def kafkalite_round(count: int, partitions: int, batch: int) -> Timings:
    async with kafkalite.Broker(data_dir=None) as broker:
        await broker.create_topic("bench", partitions=partitions)
        async with broker.producer(partitioner="round_robin", acks=1) as producer:
            cpu = time.process_time()
            began = time.perf_counter()
            for start in range(0, count, batch):
                await producer.send_batch("bench", [PAYLOAD] * min(batch, count - start))
            produced = time.perf_counter() - began
            cpu = time.process_time() - cpu
        async with broker.consumer("bench", group_id="bench", enable_auto_commit=False) as consumer:
            cpu2 = time.process_time()
            began = time.perf_counter()
            seen = 0
            last = None
            while seen < count:
                messages = await consumer.getmany(timeout=1.0, max_records=100_000)
                seen += len(messages)
                last = messages[-1] if messages else last
            consumed = time.perf_counter() - began
            cpu += time.process_time() - cpu2
    if seen != count or last is None or last.value != PAYLOAD:
        raise AssertionError(f"consumed {seen} of {count} messages, last {last!r}")
    return produced, consumed, cpu


def child(design: str, count: int, partitions: int, batch: int) -> None:
    """One round in this (fresh) process, after a 2,000-message warm-up round of the same design (so the timed
    round measures steady state, not first calls); print its timings and peak RSS as JSON."""
    for n in (WARM_UP, count):
        gc.collect()
        if design == "kafkalite":
            timings = asyncio.run(kafkalite_round(n, partitions, batch))
        else:
            timings = seed_round(n, partitions, batch)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"timings": timings, "peak_rss_mb": peak_mb}))


def run_child(design: str, count: int, partitions: int, batch: int) -> tuple[Timings, float]:
    command = [sys.executable, __file__, "--child", design, str(count), str(partitions), str(batch)]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    result = json.loads(out)
    produced, consumed, cpu = result["timings"]
    return (produced, consumed, cpu), result["peak_rss_mb"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--partitions", default="1,8")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=1000, help="records per send_batch call")
    parser.add_argument("--baseline-limit", type=int, default=100_000)
    parser.add_argument("--child", nargs=4, metavar=("DESIGN", "COUNT", "PARTITIONS", "BATCH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        design, count, partitions, batch = args.child
        child(design, int(count), int(partitions), int(batch))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    partition_counts = [int(p) for p in args.partitions.split(",")]

    print(f"# embedded bench — python {sys.version.split()[0]}, {os.cpu_count()} cpus, rounds={args.rounds}")
    print()
    print(
        "| design | partitions | messages | produce msg/s | consume msg/s | both msg/s | wall µs/msg | CPU µs/msg |"
        " peak RSS MB |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for partitions in partition_counts:
        for count in sizes:
            results: dict[str, list[tuple[Timings, float]]] = {"kafkalite": [], "seed": []}
            for _ in range(args.rounds):
                results["kafkalite"].append(run_child("kafkalite", count, partitions, args.batch))
                if count <= args.baseline_limit:
                    results["seed"].append(run_child("seed", count, partitions, args.batch))
            for design, runs in results.items():
                if not runs:
                    print(f"| seed | {partitions} | {count:,} | — | — | — | — | — | not run: quadratic reads |")
                    continue
                produce = statistics.median(t[0] for t, _ in runs)
                consume = statistics.median(t[1] for t, _ in runs)
                both = statistics.median(t[0] + t[1] for t, _ in runs)
                cpu = statistics.median(t[2] for t, _ in runs)
                rss = max(peak for _, peak in runs)
                print(
                    f"| {design} | {partitions} | {count:,} | {count / produce:,.0f} | {count / consume:,.0f} | "
                    f"{count / both:,.0f} | {both / count * 1e6:.2f} | {cpu / count * 1e6:.2f} | {rss:.0f} |"
                )
            sys.stdout.flush()


if __name__ == "__main__":
    main()
