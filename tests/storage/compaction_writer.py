"""Writer process for the compaction crash test: append keyed records, sync, clean in a thread, report.

Usage: python compaction_writer.py DIRECTORY. The record at offset o has key `o % KEYS` and a value that follows from
o (every 17th is a tombstone), so the test can check every record it reads. Prints `synced N` after each sync
(N = last synced offset) and `cleaned` after each swapped cleaning; the test SIGKILLs it at a random moment.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from kafkalite.protocol.records import RecordToWrite, build_batch, read_header
from kafkalite.storage import LogConfig, PartitionLog
from kafkalite.storage.compactor import CleaningContext, CleaningJob, Throttle

KEYS = 13
CONFIG = LogConfig(
    segment_bytes=16 * 1024,
    index_interval_bytes=1024,
    compact=True,
    delete=False,
    min_cleanable_dirty_ratio=0.2,
    delete_retention_ms=0,
)


def expected_record(offset: int) -> tuple[bytes, bytes | None]:
    """(key, value) of the record at `offset`."""
    value = None if offset % 17 == 0 else b"%d;" % offset * (1 + offset % 50)
    return b"k%d" % (offset % KEYS), value


async def main(directory: Path) -> None:
    log = PartitionLog.open(directory, CONFIG)
    cleaning: asyncio.Task[None] | None = None
    job: CleaningJob | None = None
    while True:
        for _ in range(1 + log.log_end_offset % 7):
            base = log.log_end_offset
            records = []
            for offset in range(base, base + 1 + base % 4):
                key, value = expected_record(offset)
                records.append(RecordToWrite(value, key))
            batch = bytearray(build_batch(records, now_ms=time.time_ns() // 1_000_000))
            log.append(batch, read_header(batch))
        await log.sync()
        # One write for the whole line: with PYTHONUNBUFFERED, print's separate arguments are separate writes, and a
        # SIGKILL between them would leave the test a "synced" line without its offset.
        sys.stdout.write(f"synced {log.log_end_offset - 1}\n")
        sys.stdout.flush()
        if cleaning is not None and cleaning.done():
            cleaning.result()
            assert job is not None
            if log.finish_cleaning(job):
                print("cleaned", flush=True)
            cleaning = None
        if cleaning is None:
            job = log.prepare_cleaning(time.time_ns() // 1_000_000, CleaningContext())
            if job is not None:
                cleaning = asyncio.create_task(asyncio.to_thread(job.run, Throttle(None), lambda: False))


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
