"""Writer process for the crash test: append batches whose content follows from their base offset, sync, report.

Usage: python crash_writer.py DIRECTORY. After each `await sync()` it prints the last synced offset, one per line;
the test SIGKILLs it at a random moment and checks every printed offset survived.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from kafkalite.protocol.records import RecordToWrite, build_batch, read_header
from kafkalite.storage import LogConfig, PartitionLog

CONFIG = LogConfig(segment_bytes=256 * 1024, index_interval_bytes=4096)


def expected_values(base_offset: int) -> list[bytes]:
    """The record values of the batch appended at `base_offset`."""
    count = 1 + base_offset % 5
    return [b"%d:%d;" % (base_offset, n) * (1 + (base_offset * 7919 + n) % 120) for n in range(count)]


async def main(directory: Path) -> None:
    log = PartitionLog.open(directory, CONFIG)
    while True:
        for _ in range(1 + log.log_end_offset % 7):
            base = log.log_end_offset
            batch = bytearray(build_batch([RecordToWrite(v) for v in expected_values(base)], now_ms=base))
            log.append(batch, read_header(batch))
        await log.sync()
        print(log.log_end_offset - 1, flush=True)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
