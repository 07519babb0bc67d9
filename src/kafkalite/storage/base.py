"""What every partition log engine offers: the file engine (`PartitionLog`) and the memory twin (`MemoryLog`).

A log is a sequence of RecordBatch v2 batches with consecutive offsets. Offsets are per record, not per batch:
a batch holding records [b, b + last_offset_delta] moves the log end offset to b + last_offset_delta + 1.

    log_start_offset <= every readable offset < log_end_offset

Concurrency: a log is driven from one asyncio event loop. `append` and `read` are plain calls that never block on
the disk for long (writes land in the page cache); `sync` is the only coroutine, and is where fsync happens, off
the loop. Callers serialise appends per partition (the broker's per-partition lock); reads may interleave freely.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from kafkalite.protocol.records import BatchHeader
from kafkalite.storage.transaction_index import AbortedTxn

if TYPE_CHECKING:
    from kafkalite.storage.compaction_policy import CleaningStats
    from kafkalite.storage.compactor import CleaningContext, CleaningJob
    from kafkalite.storage.file_records import FileRecords

GiB = 1 << 30
DAY_MS = 24 * 3600 * 1000
NO_LIMIT_MS = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Per-partition storage settings, named after Kafka's topic configs."""

    segment_bytes: int = GiB  # segment.bytes: roll the active segment past this size
    segment_ms: int = 7 * 24 * 3600 * 1000  # segment.ms: roll the active segment after this age
    retention_ms: int = 7 * 24 * 3600 * 1000  # retention.ms: -1 keeps segments forever
    retention_bytes: int = -1  # retention.bytes: -1 means no size limit
    index_interval_bytes: int = 4096  # index.interval.bytes: one index entry per this many log bytes
    delete: bool = True  # cleanup.policy holds "delete": retention removes old segments
    compact: bool = False  # cleanup.policy holds "compact": the cleaner keeps the latest record per key
    min_cleanable_dirty_ratio: float = 0.5  # min.cleanable.dirty.ratio
    min_compaction_lag_ms: int = 0  # min.compaction.lag.ms: records younger than this are never compacted
    max_compaction_lag_ms: int = NO_LIMIT_MS  # max.compaction.lag.ms: dirty records older than this force a cleaning
    delete_retention_ms: int = (
        DAY_MS  # delete.retention.ms: tombstones and markers outlive their first cleaning this long
    )


class Log(Protocol):
    """The interface the broker codes against; `tests/storage` runs one suite over every engine."""

    config: LogConfig  # replaceable at run time (IncrementalAlterConfigs); takes effect at the next roll/retention

    @property
    def log_start_offset(self) -> int:
        """The first offset still readable (moved by retention and `delete_records_before`)."""

    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record will get."""

    @property
    def size_bytes(self) -> int:
        """Bytes of batches currently held."""

    def append(self, batch: bytes | bytearray | memoryview, header: BatchHeader) -> tuple[int, int]:
        """Append one validated batch with its base offset set to `log_end_offset`; return (base, last).

        `batch` is left as it is (the engines write or keep the new base offset in their own bytes), so the caller
        may hand in a view of the request it arrived in.
        """

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding `offset`, up to `max_bytes` but always at least one batch.

        Empty at the log end; `OffsetOutOfRangeError` below the log start or past the end.
        """

    def read_file_records(self, offset: int, max_bytes: int) -> FileRecords | bytes:
        """What `read` returns, for sending to a socket: the file engine hands out a large range as `FileRecords`
        (sent without copying, see `file_records`); the memory engine and small ranges answer `bytes`."""

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record whose timestamp is >= `timestamp_ms`, or None."""

    async def sync(self) -> None:
        """Make every appended byte durable; concurrent callers share one fsync (group commit)."""

    async def checkpointed(self) -> None:
        """Wait until every segment rolled so far may be cleaned (the file engine's recovery point covers them), or
        their flush failed; `LogCleaner.clean_once` waits for this, so a cleaning right after a write cleans all it
        could. Never raises."""

    def append_aborted_transaction(self, entry: AbortedTxn) -> None:
        """Index an aborted transaction whose abort marker was just appended (into the active segment's index)."""

    def aborted_transactions(self, start: int, end: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [start, end) (from the log start on), in abort-marker order."""

    def has_aborted_transaction(self, last_offset: int) -> bool:
        """Whether the abort marker at `last_offset` is indexed (start-up replay re-adds missing entries)."""

    def truncate_to(self, offset: int) -> None:
        """Drop every record at or after `offset` (whole batches; `offset` must be a batch boundary)."""

    def delete_records_before(self, offset: int) -> None:
        """Advance the log start offset to `offset` (DeleteRecords); whole segments below it are removed."""

    def apply_retention(self, now_ms: int) -> int:
        """Delete whole old segments per `retention_ms` / `retention_bytes`; return how many were deleted."""

    def cleaning_stats(self, now_ms: int, first_unstable_offset: int | None = None) -> CleaningStats | None:
        """The log's clean and dirty sections per `compaction_policy`; None when it is not compacted or has no
        segment a cleaning may rewrite."""

    def prepare_cleaning(self, now_ms: int, context: CleaningContext) -> CleaningJob | None:
        """A cleaning of the cleanable segments, to `run` off the loop and hand back to `finish_cleaning` (None:
        nothing to clean)."""

    def finish_cleaning(self, job: CleaningJob) -> bool:
        """Swap the job's segments in (True), or discard them when the log changed since it was prepared (False).
        Callers hold the partition's append lock, so the swap sits between two appends."""

    def close(self) -> None:
        """Flush and release files; the log is unusable afterwards."""
