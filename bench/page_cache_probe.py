"""What keeping a produced byte costs this machine before any broker code runs: the CPU time (user + system, this
process) per KiB, and the rate, of writing 1 MiB chunks into memory that is new and into memory that is reused.

    .venv/bin/python -m bench.page_cache_probe [--dir DIR] [--gib 2]

Four writes of `--gib` GiB each, in this order:
- `memory, first touch`: into a new anonymous mapping, which stays mapped until the end (a broker that keeps every
  record in its own memory: KafkaLite's memory engine, Tansu's `memory://`);
- `page cache, growing`: `pwrite` into new files that stay, so the page cache takes memory it does not hold yet
  (how a broker's log grows: KafkaLite's file engine, Kafka);
- `page cache, just freed`: those files deleted, the same again into new files, so the kernel hands back the pages
  it has just freed;
- `memory, rewritten`: into the first mapping again (a broker that keeps a bounded window and reuses it:
  librdkafka's mock cluster keeps at most 5 MiB and 100,000 batches per partition and drops the oldest).

The first two take memory nothing in this process has used yet; they come first so that neither lands on pages
the other has just freed. No `fsync`: the files are deleted at the end, before any writeback was asked for. The
figures depend on what the machine did since it booted (memory the guest of a virtual machine touches for the
first time can cost the host a fault per page), so compare the four within one run.
"""

from __future__ import annotations

import argparse
import mmap
import os
import resource
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

CHUNK = 1024 * 1024


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(write: Callable[[], int]) -> tuple[float, float]:
    """(GB/s, µs of CPU per KiB) of one call of `write`, which returns the bytes it wrote."""
    cpu, began = _cpu_seconds(), time.perf_counter()
    written = write()
    elapsed, used = time.perf_counter() - began, _cpu_seconds() - cpu
    return written / elapsed / 1e9, used / (written / 1024) * 1e6


def _files_writer(directory: Path, prefix: str, total: int, data: bytes) -> Callable[[], int]:
    def write() -> int:
        per_file = 256 * CHUNK
        for n in range(total // per_file):
            fd = os.open(directory / f"{prefix}-{n}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            try:
                for position in range(0, per_file, CHUNK):
                    os.pwrite(fd, data, position)
            finally:
                os.close(fd)
        return total // per_file * per_file

    return write


def _mapping_writer(mapping: mmap.mmap, data: bytes) -> Callable[[], int]:
    def write() -> int:
        for position in range(0, len(mapping), CHUNK):
            mapping[position : position + CHUNK] = data
        return len(mapping)

    return write


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", default=".", help="directory on the disk to write to (default: here; not a tmpfs)")
    parser.add_argument("--gib", type=int, default=2, help="GiB per write (at least 1)")
    args = parser.parse_args()
    if args.gib < 1:
        parser.error("--gib must be at least 1")
    total = args.gib * 1024 * CHUNK
    data = os.urandom(CHUNK)
    rows: list[tuple[str, tuple[float, float]]] = []
    mapping = mmap.mmap(-1, total)
    try:
        rows.append(("memory, first touch", measure(_mapping_writer(mapping, data))))
        with tempfile.TemporaryDirectory(dir=args.dir, prefix="page-cache-probe-") as scratch:
            directory = Path(scratch)
            rows.append(("page cache, growing", measure(_files_writer(directory, "growing", total, data))))
            for path in directory.iterdir():
                path.unlink()
            rows.append(("page cache, just freed", measure(_files_writer(directory, "again", total, data))))
        rows.append(("memory, rewritten", measure(_mapping_writer(mapping, data))))
    finally:
        mapping.close()
    print(f"| {args.gib} GiB in 1 MiB writes | GB/s | CPU per KiB (µs) |\n|---|---:|---:|")
    for name, (rate, cpu_per_kib) in rows:
        print(f"| {name} | {rate:.2f} | {cpu_per_kib:.3f} |")


if __name__ == "__main__":
    main()
