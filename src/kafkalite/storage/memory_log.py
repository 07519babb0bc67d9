"""`MemoryLog`: the in-memory twin of the file engine, for embedded test brokers and `--storage=memory`.

Same semantics as `PartitionLog`, segments included, so one test-suite runs over both engines: batches are grouped
into segments that roll and expire by the same rules (`policy`), and a read returns whole batches from the one
segment holding the offset. Each segment keeps its batches (immutable `bytes`, base offset already patched) in a list
with a parallel sorted list of base offsets, so a lookup is two binary searches (segment, then batch). The offset
bookkeeping of truncation, DeleteRecords and retention is `SegmentedLog`'s, shared with the file engine.

Invariants: segment base offsets strictly increase; within a segment, batch base offsets strictly increase and are
contiguous (each batch starts at the previous one's last offset + 1) unless a cleaning left gaps; the last segment is
the active one and ends at `log_end_offset`. Nothing here blocks, and `sync` has nothing to do.

Compaction: the same passes as the file engine (`compactor`), run in the cleaner thread over the cleanable segments'
batch lists (immutable `bytes`, listed on the loop when the cleaning is prepared), build new segment objects that
`finish_cleaning` puts in place of the old ones on the loop.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from kafkalite.errors import ClosedError, OffsetOutOfRangeError
from kafkalite.protocol.records import BatchHeader, iter_records, read_header, rebased
from kafkalite.storage.base import LogConfig
from kafkalite.storage.compaction_policy import CleaningStats
from kafkalite.storage.compactor import (
    CleaningContext,
    CleaningJob,
    CleaningOutcome,
    SourceSegment,
    Throttle,
    run_cleaning,
)
from kafkalite.storage.policy import DEFAULT_CONFIG, NO_TIMESTAMP, wall_clock_ms
from kafkalite.storage.segmented_log import SegmentedLog
from kafkalite.storage.transaction_index import TransactionIndex


class _MemorySegment:
    """The batches of one segment and what rolling and retention need to know about them."""

    __slots__ = (
        "base_offset",
        "base_offsets",
        "batches",
        "created_ms",
        "last_modified_ms",
        "max_timestamp",
        "max_timestamps",
        "size_bytes",
    )

    def __init__(self, base_offset: int, now_ms: int) -> None:
        self.base_offset = base_offset
        self.batches: list[bytes] = []
        self.base_offsets: list[int] = []
        self.max_timestamps: list[int] = []
        self.size_bytes = 0
        self.max_timestamp = NO_TIMESTAMP
        self.created_ms = now_ms
        self.last_modified_ms = now_ms

    @property
    def first_batch_max_timestamp(self) -> int:
        return self.max_timestamps[0] if self.max_timestamps else NO_TIMESTAMP

    @property
    def largest_timestamp(self) -> int:
        return self.max_timestamp if self.max_timestamp >= 0 else self.last_modified_ms

    def add(self, batch: bytes, base_offset: int, max_timestamp: int, now_ms: int) -> None:
        self.batches.append(batch)
        self.base_offsets.append(base_offset)
        self.max_timestamps.append(max_timestamp)
        self.size_bytes += len(batch)
        self.max_timestamp = max(self.max_timestamp, max_timestamp)
        self.last_modified_ms = now_ms

    def truncate_to(self, offset: int, now_ms: int) -> None:
        """Forget the batches at and after `offset`, which must be the base offset of one of them."""
        batch_index = bisect_left(self.base_offsets, offset)
        if batch_index == len(self.base_offsets) or self.base_offsets[batch_index] != offset:
            raise ValueError(f"offset {offset} is not a batch boundary")
        del self.batches[batch_index:], self.base_offsets[batch_index:], self.max_timestamps[batch_index:]
        self.size_bytes = sum(len(batch) for batch in self.batches)
        self.max_timestamp = max(self.max_timestamps, default=NO_TIMESTAMP)
        if not self.batches:
            self.created_ms = now_ms


class MemoryLog(SegmentedLog[_MemorySegment]):
    """A partition log held in memory; see the module docstring."""

    def __init__(
        self, config: LogConfig = DEFAULT_CONFIG, *, clock: Callable[[], int] = wall_clock_ms, start_offset: int = 0
    ) -> None:
        self.config = config
        self._clock = clock
        self._segments = [_MemorySegment(start_offset, clock())]
        self._segment_bases = [start_offset]
        self._log_start = start_offset
        self._log_end = start_offset
        self._txn_index = TransactionIndex()
        self._closed = False

    def append(self, batch: bytes | bytearray | memoryview, header: BatchHeader) -> tuple[int, int]:
        self._check_open()
        active, base, last, now_ms = self._segment_for_append(len(batch), header)
        active.add(b"".join(rebased(batch, base)), base, header.max_timestamp, now_ms)  # the log's own copy
        self._log_end = last + 1
        return base, last

    def read_file_records(self, offset: int, max_bytes: int) -> bytes:
        """The batches are in memory already: what `read` returns."""
        return self.read(offset, max_bytes)

    def read(self, offset: int, max_bytes: int) -> bytes:
        self._check_open()
        self._check_readable(offset)
        if offset == self._log_end:
            return b""
        for number in range(bisect_right(self._segment_bases, offset) - 1, len(self._segments)):
            segment = self._segments[number]
            first = max(bisect_right(segment.base_offsets, offset) - 1, 0)
            if first < len(segment.batches) and read_header(segment.batches[first]).last_offset < offset:
                first += 1  # the offset is in a gap a cleaning left after this batch
            if first == len(segment.batches):
                continue
            end = first + 1
            total = len(segment.batches[first])
            while end < len(segment.batches) and total + len(segment.batches[end]) <= max_bytes:
                total += len(segment.batches[end])
                end += 1
            return b"".join(segment.batches[first:end])
        return b""

    def prepare_cleaning(self, now_ms: int, context: CleaningContext) -> CleaningJob | None:
        stats = self.cleaning_stats(now_ms, context.first_unstable_offset)
        if stats is None:
            return None
        count = stats.cleanable_segments
        sources = [
            _MemorySource(segment.base_offset, end, segment.size_bytes, list(segment.batches))
            for segment, end in zip(self._segments[:count], self._segment_bases[1 : count + 1], strict=True)
        ]
        return _MemoryCleaningJob(
            self.config, context, stats, list(self._segments[:count]), sources, now_ms, self._structure_version
        )

    def finish_cleaning(self, job: CleaningJob) -> bool:
        assert isinstance(job, _MemoryCleaningJob)
        outcome = job.outcome
        if outcome is None or not self._cleaning_applies(job.version, job.members, prepared=True):
            job.discard()
            return False
        rewritten = sum(outcome.groups)
        self._segments[:rewritten] = job.cleaned or []
        self._segment_bases = [segment.base_offset for segment in self._segments]
        self._txn_index.regroup(self._segment_bases, dropped=outcome.dropped_markers)
        self._first_dirty = outcome.first_dirty
        self._earliest_horizon = outcome.earliest_horizon
        return True

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        self._check_open()
        for segment in self._segments:
            if segment.max_timestamp < timestamp_ms:
                continue
            for batch, max_timestamp in zip(segment.batches, segment.max_timestamps, strict=True):
                if max_timestamp < timestamp_ms:
                    continue
                for record in iter_records(batch):
                    if record.offset >= self._log_start and record.timestamp >= timestamp_ms:
                        return record.offset, record.timestamp
        return None

    async def sync(self) -> None:
        self._check_open()

    async def checkpointed(self) -> None:
        """Nothing lags in memory: every rolled segment may be cleaned at once."""

    def close(self) -> None:
        self._closed = True
        self._segments = []
        self._segment_bases = []

    def _new_segment(self, base_offset: int, now_ms: int) -> _MemorySegment:
        return _MemorySegment(base_offset, now_ms)

    def _check_readable(self, offset: int) -> None:
        if offset < self._log_start or offset > self._log_end:
            raise OffsetOutOfRangeError(offset, self._log_start, self._log_end)

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("the log is closed")


@dataclass(slots=True)
class _MemorySource:
    """A snapshot of one segment's batches (`compactor.SourceSegment`)."""

    base_offset: int
    end_offset: int
    size_bytes: int
    batch_list: list[bytes]

    def batches(self) -> Iterator[tuple[bytes | memoryview, int, BatchHeader]]:
        for batch in self.batch_list:
            yield batch, 0, read_header(batch)


class _MemorySink:
    """The segment replacing one group (`compactor.SegmentSink`)."""

    def __init__(self, first: SourceSegment, now_ms: int) -> None:
        self.segment = _MemorySegment(first.base_offset, now_ms)
        self._now_ms = now_ms

    def write(self, batch: bytes, header: BatchHeader) -> None:
        self.segment.add(batch, header.base_offset, header.max_timestamp, self._now_ms)


@dataclass(slots=True)
class _MemoryCleaningJob:
    """A cleaning of a `MemoryLog`'s first `stats.cleanable_segments` segments (`compactor.CleaningJob`)."""

    config: LogConfig
    context: CleaningContext
    stats: CleaningStats
    members: list[_MemorySegment]
    sources: list[_MemorySource]
    now_ms: int
    version: int
    outcome: CleaningOutcome | None = None
    cleaned: list[_MemorySegment] | None = None

    def run(self, throttle: Throttle, stopping: Callable[[], bool]) -> None:
        sinks: list[_MemorySink] = []

        def open_sink(first: SourceSegment) -> _MemorySink:
            sinks.append(_MemorySink(first, self.now_ms))
            return sinks[-1]

        outcome = run_cleaning(
            self.config,
            self.context,
            self.sources,
            first_dirty=self.stats.first_dirty,
            now_ms=self.now_ms,
            open_sink=open_sink,
            throttle=throttle,
            stopping=stopping,
        )
        start = 0
        for size, sink in zip(outcome.groups, sinks, strict=True):
            group = self.members[start : start + size]
            sink.segment.created_ms = max(member.created_ms for member in group)
            sink.segment.last_modified_ms = max(member.last_modified_ms for member in group)
            start += size
        self.cleaned = [sink.segment for sink in sinks]
        self.outcome = outcome

    def discard(self) -> None:
        self.cleaned = None
        self.outcome = None
