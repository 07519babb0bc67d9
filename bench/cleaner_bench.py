"""Log cleaner benchmark: cleaning throughput, and what a running cleaning costs the produce path.

Run: `python bench/cleaner_bench.py [--dir DIR] [--dirty-mb N] [--rounds N] [--io-rate BYTES_PER_S]`.

1. Cleaner throughput: a compacted file log (fsync off) of `--dirty-mb` MB of keyed records (20 records of 200 bytes
   per batch, 20,000 keys, so most records are superseded), segments of 4 MiB, is cleaned once; the figure is the
   dirty bytes cleaned per second of the whole cleaning (both passes, the writes, the fsyncs and the swap).
2. Produce while cleaning: a broker (file engine, fsync on, so every produce is acks=all with group commit) and
   `WRITERS` concurrent producers appending one-record batches to the compacted topic for `PRODUCE_S` seconds, once
   with the cleaner idle and once while the cleaner thread cleans that topic's dirty section (filled beforehand the
   same way both times). Reported: produce throughput and the p99 produce latency of each, alternated over
   `--rounds` rounds in one process; medians, and the ratio with ÷ without.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from kafkalite.broker import Broker
from kafkalite.protocol.records import RecordToWrite, build_batch, read_header
from kafkalite.storage import LogConfig, PartitionLog
from kafkalite.storage.compactor import CleaningContext, Throttle

MiB = 1 << 20
KEYS = 20_000
RECORDS_PER_BATCH = 20
VALUE = 200
SEGMENT_BYTES = 4 * MiB
WRITERS = 16
PRODUCE_S = 4.0
TOPIC_CONFIG = {
    "cleanup.policy": "compact",
    "segment.bytes": str(SEGMENT_BYTES),
    "min.cleanable.dirty.ratio": "0.01",
}


def dirty_batches(total_bytes: int, rng: random.Random) -> list[bytes]:
    batches: list[bytes] = []
    size = 0
    now = int(time.time() * 1000)
    while size < total_bytes:
        records = [
            RecordToWrite(rng.randbytes(VALUE), b"key-%d" % rng.randrange(KEYS)) for _ in range(RECORDS_PER_BATCH)
        ]
        batch = build_batch(records, now_ms=now)
        batches.append(batch)
        size += len(batch)
    return batches


def cleaner_throughput(root: Path, batches: list[bytes]) -> tuple[float, int, float]:
    """(MB/s of dirty bytes, dirty bytes, kept share of bytes) of one cleaning of a fresh log."""
    directory = root / "throughput"
    shutil.rmtree(directory, ignore_errors=True)
    config = LogConfig(segment_bytes=SEGMENT_BYTES, compact=True, delete=False, min_cleanable_dirty_ratio=0.0)
    log = PartitionLog.open(directory, config, fsync=False)
    for batch in batches:
        data = bytearray(batch)
        log.append(data, read_header(data))
    started = time.perf_counter()
    job = log.prepare_cleaning(int(time.time() * 1000), CleaningContext())
    assert job is not None
    job.run(Throttle(None), lambda: False)
    assert log.finish_cleaning(job)
    seconds = time.perf_counter() - started
    assert job.outcome is not None
    totals = job.outcome.totals
    log.close()
    shutil.rmtree(directory, ignore_errors=True)
    return job.stats.dirty_bytes / seconds / 1e6, job.stats.dirty_bytes, totals.bytes_written / totals.bytes_read


async def produce_for(broker: Broker, topic: str, seconds: float) -> tuple[float, float]:
    """(records per second, p99 latency in ms) of `WRITERS` producers appending for `seconds`."""
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds
    value = b"v" * VALUE

    async def writer(number: int) -> None:
        n = 0
        while time.perf_counter() < deadline:
            batch = build_batch([RecordToWrite(value, b"live-%d-%d" % (number, n % 500))], now_ms=0)
            began = time.perf_counter()
            await broker.produce(topic, 0, batch, acks=-1)
            latencies.append(time.perf_counter() - began)
            n += 1

    started = time.perf_counter()
    await asyncio.gather(*(writer(n) for n in range(WRITERS)))
    elapsed = time.perf_counter() - started
    latencies.sort()
    return len(latencies) / elapsed, latencies[int(len(latencies) * 0.99)] * 1000


async def fill(broker: Broker, topic: str, batches: list[bytes]) -> None:
    for batch in batches:
        await broker.produce(topic, 0, batch, acks=1)
    await broker.make_durable(topic, 0)


async def produce_with_and_without(
    root: Path, batches: list[bytes], rounds: int, io_rate: float | None
) -> list[tuple[float, float, float, float, float]]:
    """Per round: (rate without, p99 without, rate with, p99 with, seconds the cleaning took)."""
    results = []
    async with Broker(root / "broker", log_cleaner_enable=False, log_cleaner_io_max_bytes_per_second=io_rate) as broker:
        cleaner = broker.cleaner
        assert cleaner is not None
        for number in range(rounds):
            quiet, busy = f"quiet-{number}", f"busy-{number}"
            for topic in (quiet, busy):
                await broker.create_topic(topic, 1, TOPIC_CONFIG)
                await fill(broker, topic, batches)
            rate_without, p99_without = await produce_for(broker, quiet, PRODUCE_S)
            await broker.delete_topic(quiet)  # so the cleaner takes the topic being produced to
            cleaning = asyncio.create_task(cleaner.clean_once())
            await asyncio.sleep(0)
            rate_with, p99_with = await produce_for(broker, busy, PRODUCE_S)
            report = await cleaning
            assert report is not None
            assert (report.swapped, report.topic) == (True, busy)
            results.append((rate_without, p99_without, rate_with, p99_with, report.seconds))
            await broker.delete_topic(busy)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--dirty-mb", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--io-rate", type=float, default=None, help="log.cleaner.io.max.bytes.per.second")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="cleaner-bench-", dir=args.dir))
    try:
        batches = dirty_batches(args.dirty_mb * MiB, random.Random(7))
        throughput = [cleaner_throughput(root, batches) for _ in range(args.rounds)]
        rate = statistics.median(t[0] for t in throughput)
        print(
            f"| cleaner throughput | {rate:.1f} MB/s of dirty log ({throughput[0][1] / 1e6:.0f} MB dirty, "
            f"{throughput[0][2]:.0%} of the bytes kept) | runs: {', '.join(f'{t[0]:.1f}' for t in throughput)} |"
        )
        produce_batches = dirty_batches(args.dirty_mb * MiB // 2, random.Random(8))
        rounds = asyncio.run(produce_with_and_without(root, produce_batches, args.rounds, args.io_rate))
        without = statistics.median(r[0] for r in rounds)
        with_ = statistics.median(r[2] for r in rounds)
        p99_without = statistics.median(r[1] for r in rounds)
        p99_with = statistics.median(r[3] for r in rounds)
        print(f"| produce, cleaner idle | {without:,.0f} records/s | p99 {p99_without:.2f} ms |")
        print(
            f"| produce, while cleaning | {with_:,.0f} records/s ({with_ / without:.2f}x) | p99 {p99_with:.2f} ms "
            f"({p99_with / p99_without:.2f}x) |"
        )
        for number, r in enumerate(rounds):
            print(
                f"round {number}: without {r[0]:,.0f}/s p99 {r[1]:.2f} ms; with {r[2]:,.0f}/s p99 {r[3]:.2f} ms; "
                f"cleaning took {r[4]:.1f} s"
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
