"""Storage engine benchmark: append and read throughput, group commit, and read cost against log size.

Run: `python bench/storage_bench.py [--dir DIR]` (DIR defaults to the system temp directory; its disk is what is
measured). Prints a markdown table; every figure is the median of several runs. Temporary logs (about 2 GB at peak)
are deleted before it exits.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from kafkalite.protocol.records import BatchHeader, RecordToWrite, build_batch, read_batches, read_header
from kafkalite.storage import LogConfig, PartitionLog

KiB, MiB = 1 << 10, 1 << 20
SIZES = [("1 KiB", KiB), ("16 KiB", 16 * KiB), ("1 MiB", MiB)]
APPEND_BYTES = 512 * MiB  # per sync-off run
GROUP_COMMIT_BYTES = 256 * MiB  # per group-commit run
WRITERS = 64
RUNS = 3
RANDOM_READS = 20_000


def make_batch(size: int) -> tuple[bytearray, BatchHeader]:
    """One batch of `size` bytes total: 1 KiB records, or a single record for smaller sizes."""
    record_value = 1_000 if size > 2 * KiB else size - 80
    count = max(1, size // 1_024)
    batch = bytearray(build_batch([RecordToWrite(b"x" * record_value)] * count, now_ms=int(time.time() * 1000)))
    return batch, read_header(batch)


def median_of(runs: int, measure: Callable[[], float]) -> float:
    return statistics.median(measure() for _ in range(runs))


def fresh_directory(root: Path, name: str) -> Path:
    directory = root / name
    shutil.rmtree(directory, ignore_errors=True)
    return directory


def append_rate(root: Path, size: int) -> float:
    """MB/s appending `APPEND_BYTES` of `size`-byte batches, sync off."""
    directory = fresh_directory(root, "append-0")
    log = PartitionLog.open(directory, LogConfig(), fsync=False)
    batch, header = make_batch(size)
    count = APPEND_BYTES // len(batch)
    started = time.perf_counter()
    for _ in range(count):
        log.append(batch, header)
    elapsed = time.perf_counter() - started
    log.close()
    shutil.rmtree(directory)
    return count * len(batch) / elapsed / 1e6


def group_commit_rate(root: Path, size: int) -> float:
    """MB/s with `WRITERS` concurrent writers each doing append + await sync(), fsync on."""
    directory = fresh_directory(root, "group-0")
    log = PartitionLog.open(directory, LogConfig(), fsync=True)
    batch, header = make_batch(size)
    per_writer = min(GROUP_COMMIT_BYTES // len(batch) // WRITERS, 500)  # 1 KiB: 500 rounds of 64 is plenty

    async def writer() -> None:
        for _ in range(per_writer):
            log.append(bytearray(batch), header)
            await log.sync()

    async def run() -> float:
        started = time.perf_counter()
        await asyncio.gather(*(writer() for _ in range(WRITERS)))
        return time.perf_counter() - started

    elapsed = asyncio.run(run())
    log.close()
    shutil.rmtree(directory)
    return per_writer * WRITERS * len(batch) / elapsed / 1e6


def build_log(directory: Path, total_bytes: int, size: int) -> PartitionLog:
    log = PartitionLog.open(directory, LogConfig(), fsync=False)
    batch, header = make_batch(size)
    for _ in range(total_bytes // len(batch)):
        log.append(batch, header)
    return log


def sequential_read_rate(log: PartitionLog) -> float:
    started = time.perf_counter()
    offset, total = log.log_start_offset, 0
    while offset < log.log_end_offset:
        chunk = log.read(offset, MiB)
        total += len(chunk)
        offset = read_batches(chunk, check_crc=False)[-1][1].last_offset + 1
    return total / (time.perf_counter() - started) / 1e6


def random_read_cost_us(log: PartitionLog) -> float:
    """Median of runs of the mean µs per `read(random offset, 1 byte)` (one batch back)."""
    rng = random.Random(7)

    def one_run() -> float:
        offsets = [rng.randrange(log.log_start_offset, log.log_end_offset) for _ in range(RANDOM_READS)]
        started = time.perf_counter()
        for offset in offsets:
            log.read(offset, 1)
        return (time.perf_counter() - started) / RANDOM_READS * 1e6

    return median_of(5, one_run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="kafkalite-bench-", dir=args.dir))
    rows: list[str] = []
    try:
        for label, size in SIZES:
            sync_off = median_of(RUNS, lambda size=size: append_rate(root, size))
            group = median_of(RUNS, lambda size=size: group_commit_rate(root, size))
            log = build_log(fresh_directory(root, "read-0"), 256 * MiB, size)
            read = median_of(RUNS, lambda log=log: sequential_read_rate(log))
            log.close()
            rows.append(f"| {label} | {sync_off:,.0f} | {group:,.0f} ({group / sync_off:.2f}x) | {read:,.0f} |")
        small = build_log(fresh_directory(root, "small-0"), 10 * MiB, KiB)
        large = build_log(fresh_directory(root, "large-0"), 1_000 * MiB, KiB)
        small_cost, large_cost = random_read_cost_us(small), random_read_cost_us(large)
        small.close()
        large.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"| batch | append, sync off (MB/s) | append, group commit x{WRITERS} writers (MB/s) | sequential read (MB/s) |"
    )
    print("|---|---:|---:|---:|")
    print("\n".join(rows))
    print()
    print("| log size (1 KiB batches) | random read of one batch (µs, median of 5 x 20k reads) |")
    print("|---|---:|")
    print(f"| 10 MB | {small_cost:.1f} |")
    print(f"| 1 GB | {large_cost:.1f} |")


if __name__ == "__main__":
    main()
