"""Helpers shared by the compaction tests: compacted logs of either engine, keyed batches, a cleaning run in place."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kafkalite.protocol.records import (
    Compression,
    Record,
    RecordToWrite,
    build_batch,
    iter_records,
    read_batches,
    read_header,
)
from kafkalite.storage import Log, LogConfig, MemoryLog, PartitionLog
from kafkalite.storage.compactor import CleaningContext, Throttle
from kafkalite.storage.file_ops import FileOps

from .logkit import FakeClock

COMPACTED = LogConfig(
    segment_bytes=1024,
    index_interval_bytes=128,
    compact=True,
    delete=False,
    min_cleanable_dirty_ratio=0.0,
    delete_retention_ms=1000,
)


def open_log(
    engine: str, directory: Path, clock: FakeClock, config: LogConfig = COMPACTED, ops: FileOps | None = None
) -> Log:
    """A log whose rolled segments are cleanable at once: the file engine without fsync moves its recovery point
    at each roll (with fsync it waits for the roll checkpoint, which needs a running loop)."""
    if engine == "memory":
        return MemoryLog(config, clock=clock)
    return PartitionLog.open(directory, config, clock=clock, fsync=False, file_ops=ops)


def keyed_batch(
    items: Sequence[tuple[bytes | None, bytes | None]],
    *,
    timestamp: int = 1_000,
    compression: Compression = Compression.NONE,
    producer: tuple[int, int, int] | None = None,
) -> bytearray:
    """One batch of (key, value) records; `producer` = (id, epoch, base sequence) for an idempotent one."""
    pid, epoch, sequence = producer if producer is not None else (-1, -1, -1)
    records = [RecordToWrite(value, key, timestamp=timestamp + n) for n, (key, value) in enumerate(items)]
    return bytearray(
        build_batch(
            records,
            now_ms=timestamp,
            compression=compression,
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=sequence,
        )
    )


def put(log: Log, items: Sequence[tuple[bytes | None, bytes | None]], **options: object) -> tuple[int, int]:
    batch = keyed_batch(items, **options)  # type: ignore[arg-type]
    return log.append(batch, read_header(batch))


def clean(log: Log, now_ms: int, context: CleaningContext | None = None) -> bool:
    """One whole cleaning, as the broker's cleaner runs it but on this thread; False when nothing was cleanable."""
    job = log.prepare_cleaning(now_ms, context or CleaningContext())
    if job is None:
        return False
    job.run(Throttle(None), lambda: False)
    return log.finish_cleaning(job)


def read_all(log: Log) -> list[tuple[int, bytes]]:
    """(base offset, bytes) of every batch from the log start, CRC-checked, moving past each batch's last offset."""
    batches: list[tuple[int, bytes]] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        chunk = log.read(offset, 1 << 20)
        if not chunk:
            break
        for position, header in read_batches(chunk):
            if header.last_offset >= offset:
                batches.append((header.base_offset, chunk[position : position + header.size]))
            offset = max(offset, header.last_offset + 1)
    return batches


def records_of(log: Log) -> list[Record]:
    return [record for _, batch in read_all(log) for record in iter_records(batch)]


def latest_per_key(records: Sequence[Record]) -> dict[bytes, bytes | None]:
    latest: dict[bytes, bytes | None] = {}
    for record in records:
        assert record.key is not None
        latest[record.key] = record.value
    return latest
