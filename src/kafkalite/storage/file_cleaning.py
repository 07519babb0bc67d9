"""The file engine's cleaning: replacement segments written aside, swapped in crash-safely with Kafka's steps.

Files, for a group of segments B, B2 .. Bk cleaned into one segment with base offset B (names as Kafka's):
  1. `B.log.cleaned`, `B.index.cleaned`, `B.timeindex.cleaned`: written by the cleaner thread (`FileCleaningJob`),
     then fsynced. Nothing refers to them yet: a crash here leaves garbage that `recover_interrupted_cleaning`
     deletes.
  2. Still in the cleaner thread, the partition's `cleaner-offset` checkpoint is replaced durably: recovery allows
     offset gaps in segments whose base lies below it, so it must be on disk before any cleaned segment is. Should
     the cleaning then be discarded (or the process die before step 3), the old segments below it count as cleaned:
     the next cleaning does not map their keys again, so older duplicates there may stay; the latest record of every
     key always does.
  3. The files are renamed to `.swap` (indexes first, `.log` last) and the directory is fsynced: `B.log.swap`
     existing is the commit point. From here on, recovery completes the swap.
  4. Every file of B .. Bk is removed and the `.swap` files are renamed to the live names (indexes first). The
     directory is not fsynced here: either state is one recovery completes, and the log's next sync round (or its
     roll checkpoint, or close) fsyncs the directory.
Steps 3 and 4 run on the event loop under the partition's append lock (`PartitionLog.finish_cleaning`), after a
check that the log has not moved or removed segments since the cleaning was prepared: only a cleaning of the log as it
still is may become durable. Their cost there is a few renames and removes and one directory fsync, and when the
cleaned segments held aborts and the log fsyncs, an fsync of each rewritten `.txnindex` and one more of the directory
(`TransactionIndex.regroup`).

Recovery (`recover_interrupted_cleaning`, at open, before segments are loaded): every `.cleaned` file is deleted;
for each `B.log.swap`, whose content is whole (it was fsynced before it got that name), the segments it replaces
are those whose base offset lies in [B, L], L being the swap's last offset (B alone when it is empty): their files
are removed, then the `.swap` files renamed as in step 3 (a missing index is rebuilt by the segment's recovery); an
index `.swap` without its `.log.swap` is deleted. A group's trailing segments whose records were all superseded
lie above L: should a crash undo their removal in step 4 while `B.log.swap` survives, they stay, holding only older
values of keys that have later ones, which the next cleaning removes again.
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from kafkalite.errors import CorruptRecordError, StorageError
from kafkalite.protocol.records import HEADER_SIZE, LOG_OVERHEAD, BatchHeader, read_header
from kafkalite.storage.atomic_file import read_file
from kafkalite.storage.base import LogConfig
from kafkalite.storage.compaction_policy import CleaningStats
from kafkalite.storage.compactor import (
    CleaningContext,
    CleaningOutcome,
    SourceSegment,
    Throttle,
    run_cleaning,
)
from kafkalite.storage.file_ops import FileOps, replace_atomically
from kafkalite.storage.segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, Segment, segment_path

CLEANER_CHECKPOINT = "cleaner-offset"
CLEANED = ".cleaned"
SWAP = ".swap"
READ_CHUNK = 4 << 20
_SEGMENT_NAME_DIGITS = 20
_BATCH_LENGTH = struct.Struct(">i")
_BASE_OFFSET = struct.Struct(">q")
_DELTA = struct.Struct(">i")

logger = logging.getLogger("kafkalite.cleaner")


class _FileSource:
    """A segment read through a descriptor of the cleaner's own (`SourceSegment`)."""

    def __init__(self, segment: Segment, end_offset: int, ops: FileOps) -> None:
        self.base_offset = segment.base_offset
        self.end_offset = end_offset
        self.size_bytes = segment.size
        self.path = segment.log_path
        self._ops = ops

    def batches(self) -> Iterator[tuple[bytes | memoryview, int, BatchHeader]]:
        try:
            fd = self._ops.open(self.path, os.O_RDONLY)
        except OSError as exc:
            raise StorageError(f"the cleaner cannot open {self.path}: {exc.strerror or exc}") from exc
        try:
            position = 0
            while position < self.size_bytes:
                chunk = self._ops.pread(fd, min(READ_CHUNK, self.size_bytes - position), position)
                if len(chunk) < LOG_OVERHEAD:
                    raise StorageError(f"short read at {position} of {self.path}")
                pos = 0
                while pos + LOG_OVERHEAD <= len(chunk):
                    size = read_header_length(chunk, pos)
                    if pos + size > len(chunk):
                        break  # cut by the chunk's end: the next chunk starts with it
                    header = read_header(chunk, pos)
                    yield chunk, pos, header
                    pos += size
                if pos == 0:  # one batch bigger than a chunk
                    whole = self._ops.pread(fd, read_header_length(chunk, 0), position)
                    header = read_header(whole, 0)
                    yield whole, 0, header
                    pos = header.size
                position += pos
        except (OSError, CorruptRecordError) as exc:
            raise StorageError(f"the cleaner cannot read {self.path}: {exc}") from exc
        finally:
            self._ops.close(fd)


def read_header_length(data: bytes, pos: int) -> int:
    """The total size of the batch at `pos`, from its length field alone (the header is checked when parsed)."""
    return int(_BATCH_LENGTH.unpack_from(data, pos + 8)[0]) + LOG_OVERHEAD


class _CleanedSink:
    """The `.cleaned` segment replacing one group (`SegmentSink`)."""

    def __init__(self, directory: Path, first: SourceSegment, ops: FileOps, index_interval: int, now_ms: int) -> None:
        self.segment = Segment.create(directory, first.base_offset, ops, now_ms, CLEANED)
        self._index_interval = index_interval
        self._now_ms = now_ms

    def write(self, batch: bytes, header: BatchHeader) -> None:
        self.segment.append(batch, header.last_offset, header.max_timestamp, self._index_interval, self._now_ms)


@dataclass(slots=True)
class FileCleaningJob:
    """A cleaning of a `PartitionLog`'s first `stats.cleanable_segments` segments (`compactor.CleaningJob`)."""

    directory: Path
    ops: FileOps
    config: LogConfig
    context: CleaningContext
    stats: CleaningStats
    members: list[Segment]
    ends: list[int]
    now_ms: int
    fsync: bool
    version: int
    outcome: CleaningOutcome | None = None
    cleaned: list[Segment] | None = None
    committed: bool = False  # `swap_in` passed the commit point: the swap is durable, whatever follows

    def run(self, throttle: Throttle, stopping: Callable[[], bool]) -> None:
        sources = [_FileSource(segment, end, self.ops) for segment, end in zip(self.members, self.ends, strict=True)]
        sinks: list[_CleanedSink] = []

        def open_sink(first: SourceSegment) -> _CleanedSink:
            sink = _CleanedSink(self.directory, first, self.ops, self.config.index_interval_bytes, self.now_ms)
            sinks.append(sink)
            return sink

        self.cleaned = []
        try:
            outcome = run_cleaning(
                self.config,
                self.context,
                sources,
                first_dirty=self.stats.first_dirty,
                now_ms=self.now_ms,
                open_sink=open_sink,
                throttle=throttle,
                stopping=stopping,
            )
            self.cleaned = [sink.segment for sink in sinks]
            start = 0
            for size, segment in zip(outcome.groups, self.cleaned, strict=True):
                group = self.members[start : start + size]
                segment.created_ms = max(member.created_ms for member in group)
                segment.last_modified_ms = max(member.last_modified_ms for member in group)
                segment.become_inactive()
                if self.fsync:
                    for fd, path in segment.open_for_flush():
                        try:
                            self.ops.fsync(fd)
                        except OSError as exc:
                            raise StorageError(f"fsync {path} failed: {exc.strerror or exc}") from exc
                        finally:
                            self.ops.close(fd)
                segment.release_log_fd()
                start += size
            checkpoint = self.directory / CLEANER_CHECKPOINT
            try:
                replace_atomically(self.ops, checkpoint, b"%d\n" % outcome.first_dirty, fsync=self.fsync)
            except OSError as exc:
                raise StorageError(f"write {checkpoint} failed: {exc.strerror or exc}") from exc
        except BaseException:
            self.cleaned = [sink.segment for sink in sinks]
            self.discard()
            raise
        self.outcome = outcome

    def discard(self) -> None:
        for segment in self.cleaned or ():
            try:
                segment.delete()
            except StorageError as exc:  # leftovers: the next open deletes every `.cleaned` file
                logger.warning("could not remove a cleaned segment: %s", exc)
        self.cleaned = []
        self.outcome = None


def read_cleaner_checkpoint(directory: Path) -> int:
    """Where the last cleaning ended; 0 when the log was never cleaned (or the file is unreadable)."""
    data = read_file(directory / CLEANER_CHECKPOINT)
    return int(data) if data is not None and data.strip().isdigit() else 0


def recover_interrupted_cleaning(directory: Path, names: list[str], ops: FileOps, *, fsync: bool) -> bool:
    """Delete `.cleaned` files, complete every committed swap (see the module docstring); True when anything
    changed (the caller then lists the directory again)."""
    changed = False
    for name in names:
        if name.endswith(CLEANED):
            _remove(ops, directory / name)
            changed = True
    swapped = sorted(
        int(name[:_SEGMENT_NAME_DIGITS]) for name in names if name.endswith(LOG_SUFFIX + SWAP) and _numbered(name)
    )
    live = sorted(int(name[:_SEGMENT_NAME_DIGITS]) for name in names if name.endswith(LOG_SUFFIX) and _numbered(name))
    for base in swapped:
        last = _last_offset(ops, segment_path(directory, base, LOG_SUFFIX + SWAP))
        replaced = [old for old in live if base <= old <= max(base, last)]
        logger.warning(
            "completing the cleaning of %s interrupted by a crash: segment %d replaces %s",
            directory,
            base,
            ", ".join(map(str, replaced)) or "nothing",
        )
        for old in replaced:
            for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                path = segment_path(directory, old, suffix)
                if path.exists():
                    _remove(ops, path)
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, LOG_SUFFIX):
            source = segment_path(directory, base, suffix + SWAP)
            if source.exists():
                _rename(ops, source, segment_path(directory, base, suffix))
        changed = True
    for name in names:  # an index swap whose `.log.swap` never came: step 2 was cut short
        orphan = name.endswith(SWAP) and not name.endswith(LOG_SUFFIX + SWAP) and _numbered(name)
        if orphan and int(name[:_SEGMENT_NAME_DIGITS]) not in swapped and (directory / name).exists():
            _remove(ops, directory / name)
            changed = True
    if changed and fsync:
        try:
            ops.fsync_directory(directory)
        except OSError as exc:
            raise StorageError(f"fsync {directory} failed: {exc.strerror or exc}") from exc
    return changed


def _numbered(name: str) -> bool:
    return name[:_SEGMENT_NAME_DIGITS].isdigit() and name[_SEGMENT_NAME_DIGITS : _SEGMENT_NAME_DIGITS + 1] == "."


def _last_offset(ops: FileOps, path: Path) -> int:
    """The last offset held by a (whole, fsynced) segment file, or -1 when it holds no batch."""
    try:
        fd = ops.open(path, os.O_RDONLY)
    except OSError as exc:
        raise StorageError(f"open {path} failed: {exc.strerror or exc}") from exc
    try:
        size = ops.size(fd)
        position = 0
        last = -1
        while position + HEADER_SIZE <= size:
            head = ops.pread(fd, HEADER_SIZE, position)
            if len(head) < HEADER_SIZE:
                break
            base, last_offset_delta = _BASE_OFFSET.unpack_from(head, 0)[0], _DELTA.unpack_from(head, 23)[0]
            last = base + last_offset_delta
            position += read_header_length(head, 0)
        return last
    except OSError as exc:
        raise StorageError(f"read {path} failed: {exc.strerror or exc}") from exc
    finally:
        ops.close(fd)


def _remove(ops: FileOps, path: Path) -> None:
    try:
        ops.remove(path)
    except OSError as exc:
        raise StorageError(f"remove {path} failed: {exc.strerror or exc}") from exc


def _rename(ops: FileOps, source: Path, target: Path) -> None:
    try:
        ops.rename(source, target)
    except OSError as exc:
        raise StorageError(f"rename {source} failed: {exc.strerror or exc}") from exc


def swap_in(job: FileCleaningJob) -> None:
    """Steps 3 and 4 of the module docstring for every group of `job`. Raises `StorageError`; `committed` tells
    the caller whether the failure came after the commit point (the swap then completes at the next open)."""
    cleaned = job.cleaned or []
    outcome = job.outcome
    assert outcome is not None
    for segment in cleaned:
        segment.rename_files(SWAP)
        segment.gaps_allowed = True
    _fsync_directory(job)
    job.committed = True
    start = 0
    for size, segment in zip(outcome.groups, cleaned, strict=True):
        for member in job.members[start : start + size]:
            member.close()
            for path in (member.log_path, member.index_path, member.time_index_path):
                _remove(job.ops, path)
        segment.rename_files("")
        start += size


def _fsync_directory(job: FileCleaningJob) -> None:
    if not job.fsync:
        return
    try:
        job.ops.fsync_directory(job.directory)
    except OSError as exc:
        raise StorageError(f"fsync {job.directory} failed: {exc.strerror or exc}") from exc
