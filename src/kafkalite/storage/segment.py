"""One log segment: `<base offset, 20 digits>.log`, `.index` and `.timeindex`, in Kafka's formats.

`.log` holds RecordBatch v2 batches back to back, exactly as producers sent them with the base offset patched; the
first batch's base offset is the segment's base offset and each next batch starts at the previous last offset + 1,
except in a segment the log cleaner wrote (`compactor`): its batches keep their offsets, with gaps between them, and
its first batch may start above its base offset. Recovery requires contiguous offsets (a bit flipped in a base
offset, which the CRC does not cover, is caught so) except where `gaps_allowed`: in segments the cleaner wrote.
`.index` and `.timeindex` are described in `offset_index` and `time_index`; their entries are kept in memory and
written to the files at roll, close and flush (`write_pending_index_entries`), so after a roll or close both files
hold exactly Kafka's entries and nothing else.

Descriptors (so a broker can hold tens of thousands of partitions): no index file stays open; it is opened for the
write and closed again. `.log` is open while the segment is active; an inactive segment's is opened on the first read
that needs it and closed by `release_log_fd` (the partition log keeps a few open for reads). fsync takes its own
descriptor (`open_for_flush`), which on Linux flushes every dirty page of the file whoever wrote it.

Invariants: `size` is the length of the valid batches in `.log` (the file is truncated back to it when a write fails,
and reads never look past it); every index entry points inside `size`. Writes use `pwrite` or `pwritev` at `size`,
reads `pread`, so no seek position is shared between readers and a failed write cannot shift the next one.

Reads: the batch holding an offset is found from the index's last entry at or below it, by a forward scan of batch
headers read `SCAN_CHUNK_BYTES` at a time; the active segment also remembers the position of its last
`RECENT_BATCHES` to twice as many batches, so the read a consumer that keeps up makes needs no scan. Those positions
are set by `append` and dropped by every cut (`_cut`) and when the segment stops being active (`become_inactive`).
They are read and written on the event loop only: the one read made off it (the open-transaction scan in a worker
thread) runs at start-up, before anything is appended.

Durability is the caller's business: `PartitionLog.sync` fsyncs `.log` files off the event loop, and the three files
(`open_for_flush()`) are fsynced together when the segment is rolled or the log closed. Indexes are derived data, so
they are neither written nor fsynced per append: recovery rebuilds an index that does not match its log, and after an
unclean shutdown rebuilds the indexes of every segment not yet known durable (`recover(..., full=True)`), which always
includes the active segment, the only one whose index files may lag its entries.
"""

from __future__ import annotations

import logging
import os
import struct
from array import array
from bisect import bisect_left
from pathlib import Path
from typing import Literal, NamedTuple, overload

from kafkalite.errors import StorageError
from kafkalite.protocol.records import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    iter_records,
    rebased,
    unpack_header,
    valid_prefix,
)
from kafkalite.storage.file_ops import FileOps
from kafkalite.storage.file_records import ZERO_COPY_MIN_BYTES, FileRecords, HandedOut, copy_prefix_aside
from kafkalite.storage.offset_index import OffsetIndex
from kafkalite.storage.time_index import NO_TIMESTAMP, TimeIndex

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
RECOVERY_CHUNK_BYTES = 4 << 20
SCAN_CHUNK_BYTES = 16 << 10  # what a read's scan from its index entry reads at a time (the default interval is 4 KiB)
RECENT_BATCHES = 32  # the last batches appended whose positions are remembered (up to twice as many; see `_scan_to`)

_BATCH_LENGTH = struct.Struct(">i")
_SCAN_FIELDS = struct.Struct(">qi11xi")  # what a scan reads of a header: base offset, batch length, last offset delta
_BATCH_LENGTH_AT = 8
Buffer = bytes | bytearray | memoryview

logger = logging.getLogger("kafkalite.storage")


def segment_path(directory: Path, base_offset: int, suffix: str) -> Path:
    return directory / f"{base_offset:020d}{suffix}"


def storage_error(action: str, path: Path, exc: OSError) -> StorageError:
    return StorageError(f"{action} {path} failed: {exc.strerror or exc}")


class _Found(NamedTuple):
    """A read's batch: where it starts, its header, and the chunk of `.log` its scan read (starting at `chunk_at`)."""

    position: int
    header: BatchHeader
    chunk: bytes
    chunk_at: int


class _IndexPlan(NamedTuple):
    """What appending one batch changes besides the log bytes; applied only once the bytes are written."""

    offset_entry: bytes | None
    time_entry: bytes | None
    max_timestamp: int
    offset_of_max_timestamp: int


def _found(position: int, header: BatchHeader, chunk: bytes, chunk_at: int) -> _Found:
    """`_Found(...)` made with `tuple.__new__`: a named tuple's own `__new__` is Python code even in this module's
    compiled form, about a thousand instructions a read (as `partition._produce_result` says)."""
    return tuple.__new__(_Found, (position, header, chunk, chunk_at))


def _index_plan(
    offset_entry: bytes | None, time_entry: bytes | None, max_timestamp: int, offset_of_max_timestamp: int
) -> _IndexPlan:
    """`_IndexPlan(...)`, made as `_found` makes its tuple, once an append."""
    return tuple.__new__(_IndexPlan, (offset_entry, time_entry, max_timestamp, offset_of_max_timestamp))


class Segment:
    """One segment's files and the state appends, reads and retention need; see the module docstring."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        ops: FileOps,
        log_fd: int | None,
        offset_index: OffsetIndex,
        time_index: TimeIndex,
        *,
        size: int,
        created_ms: int,
        last_modified_ms: int,
        extension: str = "",
    ) -> None:
        self.base_offset = base_offset
        self.log_path = segment_path(directory, base_offset, LOG_SUFFIX + extension)
        self.index_path = segment_path(directory, base_offset, INDEX_SUFFIX + extension)
        self.time_index_path = segment_path(directory, base_offset, TIME_INDEX_SUFFIX + extension)
        self._ops = ops
        self._log_fd = log_fd
        self.offset_index = offset_index
        self.time_index = time_index
        self.size = size
        self.created_ms = created_ms
        self.last_modified_ms = last_modified_ms
        self.max_timestamp, self.offset_of_max_timestamp = time_index.last_entry()
        self.first_batch_max_timestamp = NO_TIMESTAMP
        self.bytes_since_index_entry = 0
        self.gaps_allowed = False  # set by the partition log for segments below its cleaner checkpoint
        self.cut_by_recovery = False  # `recover` dropped bad bytes: whatever followed this segment is suspect
        # How many bytes of each index are in its file; the entries after that are written by the next flush.
        self._index_bytes_written = offset_index.size_bytes
        self._time_index_bytes_written = time_index.size_bytes
        # Ranges handed out for sending and not sent yet: a cut preserves the ones it would change (`file_records`).
        self._handed_out = HandedOut()
        # The last offset and position of the batches appended last (`RECENT_BATCHES` to twice as many), oldest
        # first: a read of one of them, as by a consumer that keeps up, needs no scan from an index entry. Arrays of
        # int64, not lists of ints: 16 bytes a batch, for every active segment of a broker with many partitions.
        self._recent_lasts = array("q")
        self._recent_positions = array("q")

    # --- lifecycle --------------------------------------------------------------------------------------------

    @classmethod
    def create(cls, directory: Path, base_offset: int, ops: FileOps, now_ms: int, extension: str = "") -> Segment:
        """A new empty segment (any files of that name are emptied); its `.log` stays open.

        `extension` names a segment being built beside the live ones (the cleaner's `.cleaned`), see `rename_files`.
        """
        flags = os.O_RDWR | os.O_CREAT | os.O_TRUNC
        log_fd = _open(ops, segment_path(directory, base_offset, LOG_SUFFIX + extension), flags)
        try:
            for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                ops.close(_open(ops, segment_path(directory, base_offset, suffix + extension), flags))
        except BaseException:
            ops.close(log_fd)
            raise
        return cls(
            directory,
            base_offset,
            ops,
            log_fd,
            OffsetIndex(base_offset),
            TimeIndex(base_offset),
            size=0,
            created_ms=now_ms,
            last_modified_ms=now_ms,
            extension=extension,
        )

    @classmethod
    def load(cls, directory: Path, base_offset: int, ops: FileOps) -> tuple[Segment, str | None]:
        """Open an existing segment (its `.log` stays open); also return why its indexes must be rebuilt (None when
        they look sane)."""
        index_paths = [segment_path(directory, base_offset, s) for s in (INDEX_SUFFIX, TIME_INDEX_SUFFIX)]
        index_missing = [path.name for path in index_paths if not path.exists()]
        log_path = segment_path(directory, base_offset, LOG_SUFFIX)
        log_fd = _open(ops, log_path, os.O_RDWR | os.O_CREAT)
        try:
            size = ops.size(log_fd)
            modified_ms = ops.modified_ms(log_fd)
            offset_index = OffsetIndex(base_offset, _read_whole(ops, index_paths[0]))
            time_index = TimeIndex(base_offset, _read_whole(ops, index_paths[1]))
        except OSError as exc:
            ops.close(log_fd)
            raise storage_error("load", log_path, exc) from exc
        segment = cls(
            directory,
            base_offset,
            ops,
            log_fd,
            offset_index,
            time_index,
            size=size,
            created_ms=modified_ms,
            last_modified_ms=modified_ms,
        )
        if index_missing:
            return segment, f"missing {', '.join(index_missing)}"
        problem = offset_index.problem(size)
        if problem is not None:
            return segment, f"offset index: {problem}"
        problem = time_index.problem()
        return segment, None if problem is None else f"time index: {problem}"

    def rename_files(self, extension: str) -> None:
        """Rename the three files to their names with `extension` ("" for the live names): the indexes first, so the
        `.log` (which recovery looks for) moves last. The open `.log` descriptor, if any, follows the file."""
        targets = [
            segment_path(path.parent, self.base_offset, suffix + extension)
            for path, suffix in (
                (self.index_path, INDEX_SUFFIX),
                (self.time_index_path, TIME_INDEX_SUFFIX),
                (self.log_path, LOG_SUFFIX),
            )
        ]
        for source, target in zip((self.index_path, self.time_index_path, self.log_path), targets, strict=True):
            try:
                self._ops.rename(source, target)
            except OSError as exc:
                raise storage_error("rename", source, exc) from exc
        self.index_path, self.time_index_path, self.log_path = targets

    def become_inactive(self) -> None:
        """Record the segment's max timestamp in the time index (Kafka does this on roll and close), then write every
        pending index entry to the files."""
        entry = self.time_index.encode_entry_if_newer(self.max_timestamp, self.offset_of_max_timestamp)
        if entry is not None:
            self.time_index.append(entry)
        self.write_pending_index_entries()
        self._forget_recent()

    def write_pending_index_entries(self) -> None:
        """Append the index entries made since the last write to `.index` and `.timeindex` (open, write, close)."""
        if self._index_bytes_written < self.offset_index.size_bytes:
            self._index_bytes_written = self._append_to_index(
                self.index_path, self.offset_index.entries, self._index_bytes_written
            )
        if self._time_index_bytes_written < self.time_index.size_bytes:
            self._time_index_bytes_written = self._append_to_index(
                self.time_index_path, self.time_index.entries, self._time_index_bytes_written
            )

    def _append_to_index(self, path: Path, entries: bytearray, written: int) -> int:
        try:
            fd = self._ops.open(path, os.O_WRONLY | os.O_CREAT)
            try:
                self._ops.pwrite(fd, entries[written:], written)
            finally:
                self._ops.close(fd)
        except OSError as exc:  # the file keeps a prefix of the entries at worst: recovery checks and rebuilds it
            raise storage_error("write", path, exc) from exc
        return len(entries)

    def open_for_flush(self) -> list[tuple[int, Path]]:
        """Fresh descriptors of `.log`, `.index` and `.timeindex` (pending index entries written first), for the
        caller to fsync and close: what flushing the whole segment means."""
        self.write_pending_index_entries()
        opened = [(self.open_log_for_flush(), self.log_path)]
        try:
            for path in (self.index_path, self.time_index_path):
                opened.append((_open(self._ops, path, os.O_WRONLY | os.O_CREAT), path))
        except BaseException:
            for fd, _ in opened:
                self._ops.close(fd)
            raise
        return opened

    def open_log_for_flush(self) -> int:
        """A descriptor of `.log` of the caller's own (a duplicate of the open one, else a new one) to fsync, close."""
        if self._log_fd is None:
            return _open(self._ops, self.log_path, os.O_WRONLY)
        try:
            return self._ops.dup(self._log_fd)
        except OSError as exc:
            raise storage_error("flush", self.log_path, exc) from exc

    @property
    def log_fd_open(self) -> bool:
        return self._log_fd is not None

    def release_log_fd(self) -> None:
        """Close `.log` until the next read or append needs it (an inactive segment's descriptor is not kept)."""
        if self._log_fd is not None:
            fd, self._log_fd = self._log_fd, None
            self._ops.close(fd)

    def _log(self) -> int:
        if self._log_fd is None:
            self._log_fd = _open(self._ops, self.log_path, os.O_RDWR)
        return self._log_fd

    def close(self) -> None:
        self.release_log_fd()

    def delete(self) -> None:
        """Close and remove the three files."""
        self.close()
        for path in (self.log_path, self.index_path, self.time_index_path):
            try:
                self._ops.remove(path)
            except OSError as exc:
                raise storage_error("delete", path, exc) from exc

    @property
    def largest_timestamp(self) -> int:
        """What retention.ms compares with: the max batch timestamp, or the last-modified time without one."""
        return self.max_timestamp if self.max_timestamp >= 0 else self.last_modified_ms

    @property
    def size_bytes(self) -> int:
        return self.size

    # --- append -----------------------------------------------------------------------------------------------

    def append(self, batch: Buffer, last: int, max_ts: int, index_interval: int, now_ms: int, base: int = -1) -> None:
        """Write one batch (last offset `last`, max timestamp `max_ts`) at the end, with `base` in place of its base
        offset unless -1, leaving `batch` as it is (no copy of a produced batch); on failure the files are as before."""
        position = self.size
        plan = self._plan_index(position, last, max_ts, index_interval)
        log_fd = self._log()
        try:
            if base < 0:
                self._ops.pwrite(log_fd, batch, position)
            else:
                self._ops.pwritev(log_fd, rebased(batch, base), position)
        except OSError as exc:
            self._restore_log_size(log_fd)
            raise storage_error("append to", self.log_path, exc) from exc
        self._apply(plan, len(batch), max_ts if position == 0 else None)
        self.size += len(batch)
        self.last_modified_ms = now_ms
        lasts, positions = self._recent_lasts, self._recent_positions
        lasts.append(last)
        positions.append(position)
        if len(lasts) > 2 * RECENT_BATCHES:
            del lasts[:RECENT_BATCHES]
            del positions[:RECENT_BATCHES]

    def _forget_recent(self) -> None:
        del self._recent_lasts[:]
        del self._recent_positions[:]

    def _plan_index(self, position: int, last_offset: int, max_timestamp: int, index_interval: int) -> _IndexPlan:
        """Kafka's `LogSegment.append` bookkeeping: max timestamp so far, and an index entry per interval."""
        if max_timestamp > self.max_timestamp:
            new_max, new_max_offset = max_timestamp, last_offset
        else:
            new_max, new_max_offset = self.max_timestamp, self.offset_of_max_timestamp
        if self.bytes_since_index_entry <= index_interval:
            return _index_plan(None, None, new_max, new_max_offset)
        return _index_plan(
            self.offset_index.encode_entry(last_offset, position),
            self.time_index.encode_entry_if_newer(new_max, new_max_offset),
            new_max,
            new_max_offset,
        )

    def _apply(self, plan: _IndexPlan, batch_size: int, first_batch_max_timestamp: int | None) -> None:
        if plan.offset_entry is not None:
            self.offset_index.append(plan.offset_entry)
            self.bytes_since_index_entry = 0
        if plan.time_entry is not None:
            self.time_index.append(plan.time_entry)
        self.bytes_since_index_entry += batch_size
        self.max_timestamp, self.offset_of_max_timestamp = plan.max_timestamp, plan.offset_of_max_timestamp
        if first_batch_max_timestamp is not None:
            self.first_batch_max_timestamp = first_batch_max_timestamp

    def _restore_log_size(self, log_fd: int) -> None:
        """After a failed write: cut `.log` back to what the in-memory state says is valid."""
        try:
            self._ops.truncate(log_fd, self.size)
        except OSError as exc:  # the next pwrite at `size` overwrites the tail anyway; recovery would cut it
            logger.error("could not cut %s back to %d bytes after a failed write: %s", self.log_path, self.size, exc)

    # --- read -------------------------------------------------------------------------------------------------

    def header_at(self, position: int) -> BatchHeader:
        data = self._pread(HEADER_SIZE, position)
        if len(data) < HEADER_SIZE:
            raise StorageError(f"short read of a batch header at {position} in {self.log_path}")
        return unpack_header(data)  # not `read_header`: the batch behind it was validated on append or recovery

    def find_batch(self, offset: int) -> tuple[int, BatchHeader] | None:
        """(position, header) of the batch holding `offset` (or the first after it, past a cleaner's gap); see
        `_scan_to`."""
        found = self._scan_to(offset)
        return None if found is None else (found.position, found.header)

    def _scan_to(self, offset: int) -> _Found | None:
        """The batch holding `offset` (or the first after it, past a cleaner's gap), and the bytes read to find it.

        A batch after the oldest one remembered (`RECENT_BATCHES`, what a consumer that keeps up asks for) is found by
        its position, noted at append. Any other starts from the index's last entry at or below `offset`, at most
        `index.interval.bytes` (and one batch) before it, and the headers between are read `SCAN_CHUNK_BYTES` at a
        time rather than one `pread` each; past a batch of a chunk or more, only the next header is read. Either way
        the read near the log end costs one system call, and its answer none more when it lies in the same chunk
        (`_slice`).
        """
        recent = self._recent_lasts
        after = bisect_left(recent, offset) if recent else 0  # the first recent batch whose last offset >= `offset`
        if after == 0:  # at or before the oldest recent batch (which may start below `offset`): from the index
            position = self.offset_index.lookup(offset)
        elif after == len(recent):  # past the last batch appended
            return None
        else:  # the batch after one ending below `offset`, so the one holding it (or the next, past a gap)
            position = self._recent_positions[after]
        chunk = b""
        chunk_at = position
        batch_length = 0
        while position < self.size:
            at = position - chunk_at
            if at + HEADER_SIZE > len(chunk):
                chunk, chunk_at, at = self._read_ahead(position, HEADER_SIZE, self.size, batch_length), position, 0
            base_offset, batch_length, last_offset_delta = _SCAN_FIELDS.unpack_from(chunk, at)
            if base_offset + last_offset_delta >= offset:
                return _found(position, unpack_header(chunk, at), chunk, chunk_at)
            position += batch_length + LOG_OVERHEAD
        return None

    def _read_ahead(self, position: int, needed: int, limit: int, previous_batch_bytes: int) -> bytes:
        """The next chunk of a forward walk of batches, from `position` and not past `limit`: `SCAN_CHUNK_BYTES`, or
        only the `needed` bytes after a batch of a chunk or more (the next batch is likely as large)."""
        wanted = needed if previous_batch_bytes >= SCAN_CHUNK_BYTES else SCAN_CHUNK_BYTES
        chunk = self._pread(min(wanted, limit - position), position)
        if len(chunk) < needed:
            raise StorageError(f"short read of a batch header at {position} in {self.log_path}")
        return chunk

    def _slice(self, found: _Found, size: int) -> bytes:
        """`size` bytes of `.log` from the batch found: out of the scan's chunk when it holds them, else read."""
        start = found.position - found.chunk_at
        if start + size <= len(found.chunk):
            return found.chunk[start : start + size]
        return self._pread(size, found.position)

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding `offset`, up to `max_bytes` but at least one; empty past the end."""
        found = self._scan_to(offset)
        if found is None:
            return b""
        position, header = found.position, found.header
        data = self._slice(found, min(max(max_bytes, header.size), self.size - position))
        end = header.size
        while end + LOG_OVERHEAD <= len(data):
            next_end = end + _BATCH_LENGTH.unpack_from(data, end + _BATCH_LENGTH_AT)[0] + LOG_OVERHEAD
            if next_end > len(data):
                break
            end = next_end
        return data if end == len(data) else data[:end]

    def read_file_records(self, offset: int, max_bytes: int) -> FileRecords | bytes:
        """What `read` returns, as a range of `.log` to send without copying (`file_records`); `bytes` when the range
        is smaller than `ZERO_COPY_MIN_BYTES` or there is nothing at or after `offset` (then empty)."""
        found = self._scan_to(offset)
        if found is None:
            return b""
        position, header = found.position, found.header
        end = self._end_of_whole_batches(position, header.size, max(max_bytes, header.size))
        if end - position < ZERO_COPY_MIN_BYTES:
            return self._slice(found, end - position)
        try:
            return self._handed_out.open(self._ops.dup(self._log()), position, end - position)
        except OSError as exc:
            raise storage_error("read", self.log_path, exc) from exc

    def _end_of_whole_batches(self, position: int, first_size: int, limit: int) -> int:
        """Where the whole batches from `position` (the first `first_size` long) end within `limit` bytes: the end, or
        a walk of batch lengths from the last index entry inside the limit (≤ `index.interval.bytes`, as a lookup)."""
        if position + limit >= self.size:
            return self.size
        bound = position + limit
        end = max(position + first_size, self.offset_index.last_position_at_most(bound))
        chunk = b""
        chunk_at = end
        batch_bytes = 0
        while end + LOG_OVERHEAD <= bound:
            at = end - chunk_at
            if at + LOG_OVERHEAD > len(chunk):  # lengths are read as a scan reads headers: a chunk at a time
                chunk, chunk_at, at = self._read_ahead(end, LOG_OVERHEAD, bound, batch_bytes), end, 0
            batch_bytes = _BATCH_LENGTH.unpack_from(chunk, at + _BATCH_LENGTH_AT)[0] + LOG_OVERHEAD
            if end + batch_bytes > bound:
                break
            end += batch_bytes
        return end

    def find_by_timestamp(self, timestamp_ms: int, start_offset: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record at or after `start_offset` with a timestamp >= `timestamp_ms`."""
        position = self.offset_index.lookup(max(self.time_index.lookup(timestamp_ms), start_offset))
        while position < self.size:
            header = self.header_at(position)
            if header.max_timestamp >= timestamp_ms and header.base_offset + header.last_offset_delta >= start_offset:
                for record in iter_records(self._pread(header.size, position)):
                    if record.offset >= start_offset and record.timestamp >= timestamp_ms:
                        return record.offset, record.timestamp
            position += header.size
        return None

    def _pread(self, size: int, position: int) -> bytes:
        try:
            return self._ops.pread(self._log(), size, position)
        except OSError as exc:
            raise storage_error("read", self.log_path, exc) from exc

    # --- truncation and recovery ------------------------------------------------------------------------------

    def truncate_to(self, offset: int, now_ms: int) -> None:
        """Drop the batches at and after `offset`, which must be the base offset of one of them."""
        found = self.find_batch(offset)
        if found is None or found[1].base_offset != offset:
            raise ValueError(f"offset {offset} is not a batch boundary")
        self._cut(found[0], offset, now_ms)

    def _cut(self, position: int, next_offset: int, now_ms: int) -> None:
        try:
            if self._handed_out.before_cut(position):  # bytes promised to Fetch answers must not change: move aside
                new_fd = copy_prefix_aside(self._ops, self._log(), self.log_path, position)
                self._ops.close(self._log())
                self._log_fd = new_fd
        except OSError as exc:
            raise storage_error("truncate", self.log_path, exc) from exc
        self.offset_index.truncate_to_position(position)
        self.time_index.truncate_to_offset(next_offset)
        try:
            self._ops.truncate(self._log(), position)
        except OSError as exc:
            raise storage_error("truncate", self.log_path, exc) from exc
        self._index_bytes_written = self._cut_index(
            self.index_path, self.offset_index.size_bytes, self._index_bytes_written
        )
        self._time_index_bytes_written = self._cut_index(
            self.time_index_path, self.time_index.size_bytes, self._time_index_bytes_written
        )
        self.size = position
        self.bytes_since_index_entry = 0
        self._forget_recent()
        self._reload_max_timestamp()
        if position == 0:
            self.first_batch_max_timestamp = NO_TIMESTAMP
            self.created_ms = now_ms

    def _cut_index(self, path: Path, size: int, written: int) -> int:
        """Cut an index file that holds more than `size` bytes back to it; return how many bytes it now holds."""
        if written <= size:
            return written
        try:
            fd = _open(self._ops, path, os.O_WRONLY | os.O_CREAT)
            try:
                self._ops.truncate(fd, size)
            finally:
                self._ops.close(fd)
        except OSError as exc:
            raise storage_error("truncate", path, exc) from exc
        return size

    def _reload_max_timestamp(self) -> None:
        """Max timestamp from the time index's last entry plus the batches after it (Kafka's loadLargestTimestamp)."""
        self.max_timestamp, self.offset_of_max_timestamp = self.time_index.last_entry()
        position = self.offset_index.lookup(self.offset_of_max_timestamp)
        while position < self.size:
            header = self.header_at(position)
            if header.max_timestamp > self.max_timestamp:
                self.max_timestamp = header.max_timestamp
                self.offset_of_max_timestamp = header.base_offset + header.last_offset_delta
            position += header.size

    def recover(self, index_interval: int, *, rebuild_reason: str | None, now_ms: int, full: bool = False) -> int:
        """Check the batches after the last index entry, cut at the first bad one; rebuild the indexes when needed.

        `full` (after an unclean shutdown, for a segment not known durable) or a `rebuild_reason` (insane indexes)
        checks every batch from the start and rebuilds both indexes from the log, since power loss may have left
        any part of an unflushed index stale or zero-filled. Returns the offset after the last good batch. A cut is
        logged as a WARNING naming the file, position, bytes cut and reason.
        """
        rebuild = full or rebuild_reason is not None
        next_offset = None if rebuild else self._resume_scan(index_interval, now_ms)
        if next_offset is None:
            if rebuild_reason is not None:
                logger.warning("rebuilding the indexes of %s: %s", self.log_path, rebuild_reason)
            elif full:
                logger.info("recovering %s after an unclean shutdown", self.log_path)
            self.offset_index = OffsetIndex(self.base_offset)
            self.time_index = TimeIndex(self.base_offset)
            self.max_timestamp, self.offset_of_max_timestamp = NO_TIMESTAMP, self.base_offset
            self.bytes_since_index_entry = 0
            next_offset = self._scan(0, self.base_offset, index_interval, now_ms, resumed=False)
        if self.size:
            self.first_batch_max_timestamp = self.header_at(0).max_timestamp
        return next_offset

    def _resume_scan(self, index_interval: int, now_ms: int) -> int | None:
        """Scan from the last index entry; None when there is none or its batch is not valid (then rebuild)."""
        last_entry = self.offset_index.last_entry()
        if last_entry is None:
            return None
        entry_offset, position = last_entry
        if position + HEADER_SIZE > self.size:
            return None
        header = self.header_at(position)
        if header.base_offset + header.last_offset_delta != entry_offset:
            return None
        return self._scan(position, header.base_offset, index_interval, now_ms, resumed=True)

    @overload
    def _scan(
        self, start: int, next_offset: int, index_interval: int, now_ms: int, *, resumed: Literal[False]
    ) -> int: ...

    @overload
    def _scan(self, start: int, next_offset: int, index_interval: int, now_ms: int, *, resumed: bool) -> int | None: ...

    def _scan(self, start: int, next_offset: int, index_interval: int, now_ms: int, *, resumed: bool) -> int | None:
        """Validate batches from `start`, rebuilding index entries as appends would have made them.

        When `resumed`, the batch at `start` already has its index entry; None means that batch itself is bad.
        """
        position = start
        stop_reason: str | None = None
        while position < self.size and stop_reason is None:
            chunk = self._pread(min(RECOVERY_CHUNK_BYTES, self.size - position), position)
            _, headers, reason = valid_prefix(chunk)
            if not headers and len(chunk) >= LOG_OVERHEAD:
                whole = _BATCH_LENGTH.unpack_from(chunk, _BATCH_LENGTH_AT)[0] + LOG_OVERHEAD
                if len(chunk) < whole <= self.size - position:  # a batch bigger than the chunk: read it whole
                    _, headers, reason = valid_prefix(self._pread(whole, position))
            if not headers:
                stop_reason = reason
            for header in headers:
                if header.base_offset != next_offset and not (self.gaps_allowed and header.base_offset > next_offset):
                    stop_reason = f"base offset {header.base_offset} where {next_offset} was expected"
                    break
                last_offset = header.base_offset + header.last_offset_delta
                if resumed and position == start:
                    self.bytes_since_index_entry = 0  # this batch already has its index entry
                plan = self._plan_index(position, last_offset, header.max_timestamp, index_interval)
                self._apply(plan, header.size, header.max_timestamp if position == 0 else None)
                position += header.size
                next_offset = last_offset + 1
        if resumed and position == start:
            return None
        if position < self.size:
            logger.warning(
                "recovery cut %s at position %d: %d bytes dropped (%s)",
                self.log_path,
                position,
                self.size - position,
                stop_reason,
            )
            self._cut(position, next_offset, now_ms)
            self.cut_by_recovery = True
        self._write_indexes()
        return next_offset

    def _write_indexes(self) -> None:
        """Replace both index files with their in-memory entries (after recovery rebuilt or extended them)."""
        for entries, path in (
            (self.offset_index.entries, self.index_path),
            (self.time_index.entries, self.time_index_path),
        ):
            try:
                fd = self._ops.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                try:
                    self._ops.pwrite(fd, entries, 0)
                finally:
                    self._ops.close(fd)
            except OSError as exc:
                raise storage_error("write", path, exc) from exc
        self._index_bytes_written = self.offset_index.size_bytes
        self._time_index_bytes_written = self.time_index.size_bytes


def _open(ops: FileOps, path: Path, flags: int) -> int:
    try:
        return ops.open(path, flags)
    except OSError as exc:
        raise storage_error("open", path, exc) from exc


def _read_whole(ops: FileOps, path: Path) -> bytes:
    """The content of an index file (empty when it is missing: `load` reports that); raises `OSError`."""
    try:
        fd = ops.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return b""
    try:
        return ops.pread(fd, ops.size(fd), 0)
    finally:
        ops.close(fd)
