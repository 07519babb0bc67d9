"""`MemoryLog`: the in-memory twin of the file engine, for embedded test brokers and `--storage=memory`.

Same semantics as `PartitionLog`, segments included, so one test-suite runs over both engines: batches are grouped
into segments that roll and expire by the same rules (`policy`), and a read returns whole batches from the one
segment holding the offset. Each segment keeps its batches (immutable `bytes`, base offset already patched) in a list
with a parallel sorted list of base offsets, so a lookup is two binary searches (segment, then batch). The offset
bookkeeping of truncation, DeleteRecords and retention is `SegmentedLog`'s, shared with the file engine.

Invariants: segment base offsets strictly increase; within a segment, batch base offsets strictly increase and are
contiguous (each batch starts at the previous one's last offset + 1); the last segment is the active one and ends at
`log_end_offset`. Nothing here blocks, and `sync` has nothing to do.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable

from kafkalite.errors import ClosedError, OffsetOutOfRangeError
from kafkalite.protocol.records import BatchHeader, iter_records, patch_base_offset
from kafkalite.storage.base import LogConfig
from kafkalite.storage.policy import DEFAULT_CONFIG, NO_TIMESTAMP, wall_clock_ms
from kafkalite.storage.segmented_log import SegmentedLog


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
        self._closed = False

    def append(self, batch: bytearray, header: BatchHeader) -> tuple[int, int]:
        self._check_open()
        active, base, last, now_ms = self._segment_for_append(len(batch), header)
        patch_base_offset(batch, 0, base)
        active.add(bytes(batch), base, header.max_timestamp, now_ms)
        self._log_end = last + 1
        return base, last

    def read(self, offset: int, max_bytes: int) -> bytes:
        self._check_open()
        self._check_readable(offset)
        if offset == self._log_end:
            return b""
        segment = self._segments[bisect_right(self._segment_bases, offset) - 1]
        first = bisect_right(segment.base_offsets, offset) - 1
        end = first + 1
        total = len(segment.batches[first])
        while end < len(segment.batches) and total + len(segment.batches[end]) <= max_bytes:
            total += len(segment.batches[end])
            end += 1
        return b"".join(segment.batches[first:end])

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
