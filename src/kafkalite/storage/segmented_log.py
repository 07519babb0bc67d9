"""`SegmentedLog`: the offset bookkeeping both engines share (`PartitionLog` on files, `MemoryLog` in memory).

An engine is a list of segments (`_segments`, with `_segment_bases` mirroring their base offsets for bisect) and a
log start and end offset. How those move when the log is cut (`truncate_to`), records are deleted
(`delete_records_before`) or old segments expire (`apply_retention`) is one rule, written here once; an engine adds
what its storage needs through three hooks: `_delete_segments` (segments are leaving the list: delete their files),
`_log_start_moved` (persist the new log start) and `_before_truncate` (the log is about to be cut). Appends choose
their segment here too (`_segment_for_append`: the roll rule), and an engine extends `_roll` with what a roll costs it.
The aborted-transaction index (`transaction_index`, one per engine, files or memory) follows the same rule here:
entries go to the active segment, and leave with their segment or when the log is cut below their abort marker.

Invariants: segment base offsets strictly increase and each segment ends where the next begins (its last batch may
end before that: a cleaning leaves gaps); the last segment is the active one and ends at `log_end_offset`; deletion
only ever removes a prefix of whole segments, never the active one, and moves the log start up to the first base
offset left when it was below it.

Compaction bookkeeping (the mechanism is the engine's, the rules `compaction_policy`'s): `_first_dirty` is where the
last cleaning ended (the cleaner checkpoint), `_earliest_horizon` the first delete horizon still ahead in the cleaned
section (None when unknown, as after a restart), and `_structure_version` counts the changes that move or remove
segments (truncation, DeleteRecords, retention): a cleaning prepared at one version is swapped in only if the log is
still at it, so a cleaning never resurrects what one of those removed.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from kafkalite.errors import OffsetOutOfRangeError
from kafkalite.protocol.records import BatchHeader
from kafkalite.storage.base import LogConfig
from kafkalite.storage.compaction_policy import CleaningStats, cleaning_stats
from kafkalite.storage.policy import ActiveSegmentStats, count_expired_segments, should_roll
from kafkalite.storage.transaction_index import AbortedTxn, TransactionIndex


class LogSegment(ActiveSegmentStats, Protocol):
    """What the shared bookkeeping needs of an engine's segment."""

    def truncate_to(self, offset: int, now_ms: int) -> None:
        """Drop the batches at and after `offset`, which must be the base offset of one of them (else ValueError)."""
        ...


SegmentT = TypeVar("SegmentT", bound=LogSegment)


class SegmentedLog(Generic[SegmentT]):
    """Base of both engines; see the module docstring. Subclasses set the attributes below in `__init__`."""

    config: LogConfig
    _clock: Callable[[], int]
    _segments: list[SegmentT]
    _segment_bases: list[int]
    _log_start: int
    _log_end: int
    _closed: bool
    _first_dirty = 0
    _earliest_horizon: int | None = None
    _structure_version = 0
    _txn_index: TransactionIndex

    @property
    def log_start_offset(self) -> int:
        return self._log_start

    @property
    def log_end_offset(self) -> int:
        return self._log_end

    @property
    def size_bytes(self) -> int:
        return sum(segment.size_bytes for segment in self._segments)

    @property
    def segment_count(self) -> int:
        return len(self._segments)

    def cleaning_stats(self, now_ms: int, first_unstable_offset: int | None = None) -> CleaningStats | None:
        """Where a cleaning of this log could go now, per `compaction_policy` (None: not compacted or nothing to do)."""
        self._check_open()
        limit = self._cleanable_limit()
        if first_unstable_offset is not None:
            limit = min(limit, first_unstable_offset)
        return cleaning_stats(
            self.config,
            self._segments,
            first_dirty=self.first_dirty_offset,
            limit_offset=limit,
            earliest_horizon=self._earliest_horizon,
            now_ms=now_ms,
        )

    def _cleaning_applies(self, version: int, members: list[SegmentT], prepared: bool) -> bool:
        """Whether a cleaning of `members`, prepared at structure `version` and run to the end (`prepared`), may
        still be swapped in: the log is open and its first segments are still exactly those."""
        return (
            prepared
            and not self._closed
            and version == self._structure_version
            and self._segments[: len(members)] == members
        )

    @property
    def first_dirty_offset(self) -> int:
        """The cleaner checkpoint, or the log start when it is not inside the log (never cleaned, or cut since)."""
        if self._log_start <= self._first_dirty <= self._log_end:
            return self._first_dirty
        return self._log_start

    def append_aborted_transaction(self, entry: AbortedTxn) -> None:
        self._check_open()
        self._txn_index.append(self._segments[-1].base_offset, entry)

    def aborted_transactions(self, start: int, end: int) -> list[AbortedTxn]:
        return self._txn_index.aborted_transactions(max(start, self._log_start), end)

    def has_aborted_transaction(self, last_offset: int) -> bool:
        return self._txn_index.contains(last_offset)

    def truncate_to(self, offset: int) -> None:
        self._check_open()
        if offset >= self._log_end:
            return
        self._structure_version += 1
        now_ms = self._clock()
        self._before_truncate(offset)
        self._txn_index.truncate_to(offset)
        if offset < self._segments[0].base_offset:
            self._txn_index.drop_segments(self._segment_bases)
            self._delete_segments(self._segments)
            self._segments = [self._new_segment(offset, now_ms)]
            self._segment_bases = [offset]
            self._log_start = self._log_end = offset
            self._log_start_moved()
            return
        holding = bisect_right(self._segment_bases, offset) - 1
        self._segments[holding].truncate_to(offset, now_ms)
        self._txn_index.drop_segments(self._segment_bases[holding + 1 :])
        self._delete_segments(self._segments[holding + 1 :])
        del self._segments[holding + 1 :], self._segment_bases[holding + 1 :]
        self._log_end = offset
        if offset < self._log_start:
            self._log_start = offset
            self._log_start_moved()

    def delete_records_before(self, offset: int) -> None:
        self._check_open()
        if offset > self._log_end:
            raise OffsetOutOfRangeError(offset, self._log_start, self._log_end)
        if offset <= self._log_start:
            return
        self._structure_version += 1
        self._log_start = offset
        self._log_start_moved()
        self._delete_oldest(bisect_right(self._segment_bases, offset) - 1)

    def apply_retention(self, now_ms: int) -> int:
        self._check_open()
        expired = count_expired_segments(self.config, self._segments, now_ms)
        self._delete_oldest(expired)
        return expired

    def _segment_for_append(self, batch_size: int, header: BatchHeader) -> tuple[SegmentT, int, int, int]:
        """(segment, base offset, last offset, now) for the next batch: the active segment, or a new one when the
        roll rule (`policy.should_roll`) says the batch must start one."""
        base = self._log_end
        last = base + header.last_offset_delta
        now_ms = self._clock()
        active = self._segments[-1]
        if should_roll(
            self.config,
            active,
            batch_size=batch_size,
            batch_max_timestamp=header.max_timestamp,
            batch_last_offset=last,
            now_ms=now_ms,
        ):
            active = self._roll(base, now_ms)
        return active, base, last, now_ms

    def _roll(self, base_offset: int, now_ms: int) -> SegmentT:
        segment = self._new_segment(base_offset, now_ms)
        self._segments.append(segment)
        self._segment_bases.append(base_offset)
        return segment

    def _delete_oldest(self, count: int) -> None:
        if count <= 0:
            return
        self._txn_index.drop_segments(self._segment_bases[:count])
        self._structure_version += 1
        self._delete_segments(self._segments[:count])
        del self._segments[:count], self._segment_bases[:count]
        self._log_start = max(self._log_start, self._segment_bases[0])

    # --- what each engine supplies ----------------------------------------------------------------------------

    def _check_open(self) -> None:
        raise NotImplementedError

    def _new_segment(self, base_offset: int, now_ms: int) -> SegmentT:
        raise NotImplementedError

    def _cleanable_limit(self) -> int:
        """No segment ending past this offset may be rewritten by a cleaning (the file engine: its recovery point)."""
        return self._log_end

    def _delete_segments(self, segments: list[SegmentT]) -> None:
        """`segments` are about to leave the list (the list itself is the caller's to edit)."""

    def _log_start_moved(self) -> None:
        """`_log_start` has just changed by `truncate_to` or `delete_records_before` (not by retention)."""

    def _before_truncate(self, offset: int) -> None:
        """The log is about to be cut at `offset` (which is below the log end)."""
