"""What a cleaning does to batches, the same for both engines: the offset map, the record filter, the I/O throttle.

A cleaning (Kafka's `Cleaner.doClean`) makes two passes over the cleanable part of a log:
  1. `OffsetMap`: over the dirty section, key → offset of the key's latest record. Records of aborted transactions
     and control batches add nothing. The map is bounded (`CleaningContext.max_keys`); the engine stops adding
     segments once it is full, and the cleaning then ends there (the rest stays dirty for the next one).
  2. `BatchFilter`: every batch from the log start to the end of the mapped section, in offset order, becomes the
     bytes to write in its place (the original bytes when nothing changes), or nothing. A record survives when
       - it has a key (a compacted topic refuses keyless records; any found, from before the topic was compacted,
         are dropped, as Kafka's cleaner drops them), and
       - no later record of its key is in the map (its offset is at least the mapped one), and
       - it is not a tombstone (null value) whose batch's delete horizon has passed, and
       - it is not data of an aborted transaction.
     A batch that keeps every record is written as it was; one that loses some is rebuilt (`batch_rewrite`) with
     its base offset, last offset delta, producer id, epoch and base sequence; one that loses all is dropped,
     except a producer's last batch (`CleaningContext.producer_last_offsets`), kept as a header-only batch so the
     producer's sequence and epoch survive a restart. A batch that keeps a tombstone without a horizon yet gets one.
     A control batch (transaction marker) is kept, stamped with a horizon, until the horizon has passed and no data
     of its transaction was met in this pass before it; a producer's marker named in `producer_last_offsets` (one
     that wrote no data at the marker's epoch) is kept too, its epoch fencing zombies, as Kafka keeps it. An abort
     whose marker goes leaves the transaction index with it (`CleaningOutcome.dropped_markers`).

Offsets never change: survivors keep theirs, so the log gains gaps, which readers skip.

Concurrency: everything here runs in the cleaner thread, on bytes the engine read for it; nothing here touches a
log. `Throttle` sleeps that thread to bound the cleaner's I/O rate (read plus written bytes per second), and shares
the GIL with the event loop, which answers producers and goes first: after each millisecond of its own CPU time the
cleaner gives the GIL back (`sleep(0)`), so the loop does not wait a whole switch interval (5 ms) for it. Giving it
back has a price under a busy loop: to get the GIL again the thread must win a race it loses each time the loop
releases and retakes it (every `select`), so a cleaner that always yields can starve (a 19 KB cleaning took 9 s
under steady produce). Hence the floor: while the cleaner got less than `MIN_SHARE` of the wall time in the current
second, it keeps the GIL until the interpreter's switch interval takes it, and catches up. That needs the GIL first,
which a loop that releases it for microseconds at a time (every `select` that finds work) can keep from the thread
for as long as it stays busy; the event loop's side of the floor, `broker.log_cleaner.GilLender`, blocks the loop for
a moment when the cleaner thread got less than its share.
"""

from __future__ import annotations

import logging
import time
from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kafkalite.errors import CorruptRecordError
from kafkalite.protocol.batch_rewrite import delete_horizon, empty_batch, rebuild_batch
from kafkalite.protocol.records import BatchHeader, Record, RecordColumns, decode_columns, read_header
from kafkalite.storage.base import LogConfig
from kafkalite.storage.compaction_policy import CleaningStats, horizon_passed, new_delete_horizon

INT32_MAX = (1 << 31) - 1
DEFAULT_MAX_KEYS = 1_000_000  # Kafka sizes its map in bytes (log.cleaner.dedupe.buffer.size); a key count here
YIELD_EVERY_S = 0.001  # of the cleaner's CPU time between two GIL hand-backs
MIN_SHARE = 0.1  # of wall time the cleaner keeps under a loop that is never idle
SHARE_WINDOW_S = 1.0  # the share is measured per window, so neither credit nor debt lasts

logger = logging.getLogger("kafkalite.cleaner")


class CleaningAborted(Exception):
    """The cleaning was asked to stop (the broker is closing, or the log changed under it)."""


class AbortedTxn(Protocol):
    """One aborted transaction of a producer: its data lies in [first_offset, last_offset] (the abort marker).

    A protocol, so the entries of the partition's aborted-transaction index can be handed over as they are.
    """

    @property
    def producer_id(self) -> int: ...

    @property
    def first_offset(self) -> int: ...

    @property
    def last_offset(self) -> int: ...


@dataclass(frozen=True, slots=True)
class CleaningContext:
    """What the broker knows that storage does not, handed to each cleaning.

    `producer_last_offsets`: producer id → last offset of the batch holding its state (its last data batch, or its
    last marker when it wrote no data at the marker's epoch), for the producers the partition still knows.
    `aborted`: the aborted transactions of the partition (from the transaction index).
    `first_unstable_offset`: the first offset of an open transaction; nothing from its segment on is rewritten.
    """

    producer_last_offsets: Mapping[int, int] = field(default_factory=dict)
    aborted: Sequence[AbortedTxn] = ()
    first_unstable_offset: int | None = None
    max_keys: int = DEFAULT_MAX_KEYS


@dataclass(slots=True)
class CleaningTotals:
    """What one cleaning did, for its log line and the bench."""

    bytes_read: int = 0
    bytes_written: int = 0
    batches_read: int = 0
    records_read: int = 0
    records_kept: int = 0
    keys_mapped: int = 0


class Throttle:
    """Sleep the calling thread so that the bytes reported stay under `bytes_per_second` (None: no limit), and hand
    the GIL back to the event loop after each `YIELD_EVERY_S` of CPU time unless the thread got less than
    `min_share` of the wall time in the current window (see the module docstring)."""

    def __init__(
        self,
        bytes_per_second: float | None,
        *,
        clock: Callable[[], float] = time.monotonic,
        cpu_clock: Callable[[], float] = time.thread_time,
        sleep: Callable[[float], None] = time.sleep,
        min_share: float = MIN_SHARE,
    ) -> None:
        if bytes_per_second is not None and bytes_per_second <= 0:
            raise ValueError(f"the cleaner I/O rate must be positive, got {bytes_per_second}")
        self._rate = bytes_per_second
        self._clock = clock
        self._cpu_clock = cpu_clock
        self._sleep = sleep
        self._min_share = min_share
        self._start = clock()
        self._bytes = 0
        self._window_wall = self._start
        self._window_cpu = self._last_yield_cpu = cpu_clock()
        self.resting = False  # True while sleeping for the I/O rate (so a GIL lender knows it is not starved)

    def consume(self, size: int) -> None:
        """Account for `size` bytes read or written; sleep as the rate requires, else share the GIL."""
        if self._rate is not None:
            self._bytes += size
            due = self._start + self._bytes / self._rate
            now = self._clock()
            if due > now:
                self.resting = True
                try:
                    self._sleep(due - now)
                finally:
                    self.resting = False
                return
            if now - self._start > 1.0:  # idle or slow: do not bank credit for a later burst
                self._start, self._bytes = now, 0
        self._share_the_gil()

    def _share_the_gil(self) -> None:
        cpu = self._cpu_clock()
        if cpu - self._last_yield_cpu < YIELD_EVERY_S:
            return
        self._last_yield_cpu = cpu
        wall = self._clock()
        if wall - self._window_wall > SHARE_WINDOW_S:
            self._window_wall, self._window_cpu = wall, cpu
            return
        if cpu - self._window_cpu >= self._min_share * (wall - self._window_wall):
            self._sleep(0)


class _AbortedIndex:
    """Lookup of aborted transactions by producer id and offset."""

    def __init__(self, aborted: Sequence[AbortedTxn]) -> None:
        ranges: dict[int, list[tuple[int, int]]] = {}
        for txn in aborted:
            ranges.setdefault(txn.producer_id, []).append((txn.first_offset, txn.last_offset))
        self._firsts = {pid: [first for first, _ in sorted(spans)] for pid, spans in ranges.items()}
        self._lasts = {pid: [last for _, last in sorted(spans)] for pid, spans in ranges.items()}

    def is_aborted(self, header: BatchHeader) -> bool:
        if not header.is_transactional or header.is_control:
            return False
        firsts = self._firsts.get(header.producer_id)
        if firsts is None:
            return False
        at = bisect_right(firsts, header.base_offset) - 1
        return at >= 0 and header.base_offset <= self._lasts[header.producer_id][at]


def _columns(data: bytes | memoryview, pos: int) -> RecordColumns | None:
    try:
        return decode_columns(data, pos)
    except CorruptRecordError as exc:  # CRC-checked when appended: keep what cannot be decoded rather than lose it
        logger.warning("cleaner keeps an undecodable batch as it is: %s", exc)
        return None


class OffsetMap:
    """Key → offset of its latest record in the dirty section (pass 1, see the module docstring)."""

    def __init__(self, context: CleaningContext, totals: CleaningTotals) -> None:
        self.latest: dict[bytes, int] = {}
        self.capacity = context.max_keys
        self._aborted = _AbortedIndex(context.aborted)
        self._totals = totals

    @property
    def full(self) -> bool:
        return len(self.latest) >= self.capacity

    def add_batch(self, data: bytes | memoryview, pos: int, header: BatchHeader, first_dirty: int) -> None:
        """Map the keyed records at or after `first_dirty` of the batch at `pos` of `data`."""
        if header.is_control or header.record_count == 0 or self._aborted.is_aborted(header):
            return
        columns = _columns(data, pos)
        if columns is None:
            return
        keys, offsets = columns.keys, columns.offsets
        if header.base_offset >= first_dirty and None not in keys:
            self.latest.update(zip(keys, offsets, strict=True))  # type: ignore[arg-type]  # no None key
        else:
            self.latest.update(
                (key, offset)
                for key, offset in zip(keys, offsets, strict=True)
                if key is not None and offset >= first_dirty
            )
        self._totals.keys_mapped = len(self.latest)


class BatchFilter:
    """Pass 2: what to write in place of each batch (see the module docstring). Feed batches in offset order."""

    def __init__(
        self, config: LogConfig, offset_map: OffsetMap, context: CleaningContext, now_ms: int, totals: CleaningTotals
    ) -> None:
        self._latest = offset_map.latest
        self._aborted = _AbortedIndex(context.aborted)
        self._producer_last = context.producer_last_offsets
        self._now_ms = now_ms
        self._new_horizon = new_delete_horizon(config, now_ms)
        self._open_transactions: set[int] = set()  # producers with transactional data met since their last marker
        self._totals = totals
        self.earliest_horizon: int | None = None  # of the batches written that still hold a tombstone or marker
        self.dropped_markers: set[int] = set()  # offsets of the markers this pass removed

    def filter(self, data: bytes | memoryview, pos: int, header: BatchHeader) -> bytes | None:
        """The bytes to write in place of the batch at `pos` of `data`, or None to drop it."""
        totals = self._totals
        totals.batches_read += 1
        totals.bytes_read += header.size
        totals.records_read += header.record_count
        original = bytes(data[pos : pos + header.size])
        horizon = delete_horizon(header)
        last_of_producer = header.producer_id >= 0 and self._producer_last.get(header.producer_id) == header.last_offset
        if header.is_control:
            return self._filter_marker(original, header, horizon, last_of_producer)
        if header.is_transactional:
            self._open_transactions.add(header.producer_id)
        if self._aborted.is_aborted(header):
            return empty_batch(header) if last_of_producer else None
        if header.record_count == 0:  # a header-only batch an earlier cleaning kept for its producer
            return original if last_of_producer else None
        columns = _columns(data, pos)
        if columns is None:
            totals.records_kept += header.record_count
            return original
        expired = horizon is not None and horizon_passed(horizon, self._now_ms)
        get = self._latest.get
        keys, values, offsets = columns.keys, columns.values, columns.offsets
        kept = [
            index
            for index, (key, value, offset) in enumerate(zip(keys, values, offsets, strict=True))
            if key is not None and get(key, -1) <= offset and not (value is None and expired)
        ]
        totals.records_kept += len(kept)
        if not kept:
            return empty_batch(header) if last_of_producer else None
        has_tombstone = any(values[index] is None for index in kept)
        whole = len(kept) == len(keys)
        if whole and (not has_tombstone or delete_horizon(header) is not None):
            if has_tombstone:
                self._note_horizon(horizon)  # type: ignore[arg-type]  # set: delete_horizon(header) is not None
            return original
        if has_tombstone:
            horizon = self._new_horizon if horizon is None else horizon
            self._note_horizon(horizon)
        records = [Record(offsets[i], columns.timestamps[i], keys[i], values[i], columns.headers[i]) for i in kept]
        return rebuild_batch(header, records, horizon_ms=horizon if has_tombstone else None)

    def _filter_marker(
        self, original: bytes, header: BatchHeader, horizon: int | None, last_of_producer: bool
    ) -> bytes | None:
        """Kafka's `onControlBatchRead`: a marker outlives its transaction's data and its horizon."""
        had_data = header.producer_id in self._open_transactions
        self._open_transactions.discard(header.producer_id)
        self._totals.records_kept += header.record_count
        if horizon is None:
            self._note_horizon(self._new_horizon)
            columns = _columns(original, 0)
            if columns is None or not columns.offsets:
                return original
            records = [Record(*fields) for fields in zip(*columns, strict=True)]
            return rebuild_batch(header, records, horizon_ms=self._new_horizon)
        if horizon_passed(horizon, self._now_ms) and not had_data and not last_of_producer:
            self._totals.records_kept -= header.record_count
            self.dropped_markers.add(header.last_offset)
            return None
        self._note_horizon(horizon)
        return original

    def _note_horizon(self, horizon: int) -> None:
        """Remember the earliest horizon still ahead: a passed one kept (a marker whose data remains) forces nothing."""
        if horizon_passed(horizon, self._now_ms):
            return
        if self.earliest_horizon is None or horizon < self.earliest_horizon:
            self.earliest_horizon = horizon


class SourceSegment(Protocol):
    """A segment a cleaning reads: its offsets [base_offset, end_offset), its size, and its batches in order."""

    @property
    def base_offset(self) -> int: ...

    @property
    def end_offset(self) -> int: ...

    @property
    def size_bytes(self) -> int: ...

    def batches(self) -> Iterator[tuple[bytes | memoryview, int, BatchHeader]]:
        """(buffer, position, header) of each batch; the buffer may be shared by several batches."""
        ...


class SegmentSink(Protocol):
    """Where a cleaning writes the batches of one group of segments (the segment that replaces them)."""

    def write(self, batch: bytes, header: BatchHeader) -> None: ...


@dataclass(slots=True)
class CleaningOutcome:
    """The result of `run_cleaning`: how many sources were mapped and rewritten, in `groups` of consecutive ones."""

    groups: list[int]  # sizes of the groups, in order; sum(groups) sources were rewritten
    first_dirty: int  # the next cleaning's first dirty offset: the end of the last rewritten source
    earliest_horizon: int | None
    totals: CleaningTotals
    # markers removed: their aborts leave the transaction index (Kafka indexes only the aborts whose markers it keeps)
    dropped_markers: frozenset[int] = frozenset()


def group_sizes(sources: Sequence[SourceSegment], max_bytes: int) -> list[int]:
    """Kafka's `groupSegmentsBySize`: consecutive segments whose total size stays within `max_bytes` (a segment
    bigger than that goes alone) and whose offsets fit the index's 4-byte relative offsets become one segment."""
    groups: list[int] = []
    start = 0
    while start < len(sources):
        end = start + 1
        total = sources[start].size_bytes
        base = sources[start].base_offset
        while (
            end < len(sources)
            and total + sources[end].size_bytes <= max_bytes
            and sources[end].end_offset - 1 - base <= INT32_MAX
        ):
            total += sources[end].size_bytes
            end += 1
        groups.append(end - start)
        start = end
    return groups


def run_cleaning(
    config: LogConfig,
    context: CleaningContext,
    sources: Sequence[SourceSegment],
    *,
    first_dirty: int,
    now_ms: int,
    open_sink: Callable[[SourceSegment], SegmentSink],
    throttle: Throttle,
    stopping: Callable[[], bool],
) -> CleaningOutcome:
    """Both passes over `sources` (the cleanable segments, oldest first); see the module docstring.

    `open_sink(first)` starts the segment replacing a group whose first source is `first`. Raises
    `CleaningAborted` as soon as `stopping()` says so (checked between batches).
    """
    totals = CleaningTotals()
    offset_map = OffsetMap(context, totals)
    mapped = 0
    for source in sources:
        if source.end_offset > first_dirty:
            for data, pos, header in source.batches():
                if stopping():
                    raise CleaningAborted
                throttle.consume(header.size)
                if header.last_offset >= first_dirty:
                    offset_map.add_batch(data, pos, header, first_dirty)
        mapped += 1
        if offset_map.full:
            break
    rewritten = sources[:mapped]
    groups = group_sizes(rewritten, config.segment_bytes)
    batch_filter = BatchFilter(config, offset_map, context, now_ms, totals)
    start = 0
    for size in groups:
        sink = open_sink(rewritten[start])
        for source in rewritten[start : start + size]:
            for data, pos, header in source.batches():
                if stopping():
                    raise CleaningAborted
                kept = batch_filter.filter(data, pos, header)
                throttle.consume(header.size + (len(kept) if kept else 0))
                if kept is not None:
                    totals.bytes_written += len(kept)
                    sink.write(kept, read_header(kept))
        start += size
    return CleaningOutcome(
        groups,
        rewritten[-1].end_offset if rewritten else first_dirty,
        batch_filter.earliest_horizon,
        totals,
        frozenset(batch_filter.dropped_markers),
    )


class CleaningJob(Protocol):
    """One cleaning of one log: prepared on the event loop, run in the cleaner thread, swapped in on the loop."""

    stats: CleaningStats
    outcome: CleaningOutcome | None  # set by a successful `run`

    def run(self, throttle: Throttle, stopping: Callable[[], bool]) -> None:
        """Both passes, writing the replacement segments aside (in the cleaner thread; touches no shared state)."""
        ...

    def discard(self) -> None:
        """Forget what `run` wrote (the log changed under it, it failed, or the broker is closing)."""
        ...
