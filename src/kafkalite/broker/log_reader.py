"""Walking a partition log from an offset: batch headers only (cheap) or decoded records (when we must).

The broker decodes records only for its own internal topics (`__consumer_offsets`, dead letters) and to rebuild
state on start; the produce and fetch paths never call these.
"""

from __future__ import annotations

from collections.abc import Iterator

from kafkalite.protocol.records import BatchHeader, Record, iter_records, read_header
from kafkalite.storage import Log

READ_CHUNK = 1 << 20


def scan_batches(log: Log, start_offset: int) -> Iterator[tuple[bytes, int, BatchHeader]]:
    """(chunk, position, header) of every batch holding an offset >= `start_offset`, in order."""
    offset = max(start_offset, log.log_start_offset)
    while offset < log.log_end_offset:
        chunk = log.read(offset, READ_CHUNK)
        if not chunk:
            return
        pos = 0
        while pos < len(chunk):
            header = read_header(chunk, pos)
            if header.last_offset >= offset:
                yield chunk, pos, header
            pos += header.size
        offset = header.last_offset + 1


def scan_records(log: Log, start_offset: int) -> Iterator[Record]:
    """Every record at or after `start_offset`, decoded; control batches (transaction markers) are not records."""
    for chunk, pos, header in scan_batches(log, start_offset):
        if header.is_control:
            continue
        for record in iter_records(chunk, pos):
            if record.offset >= start_offset:
                yield record
