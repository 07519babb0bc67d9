"""`PartitionLog`: the durable log of one partition, a directory of Kafka segments (`segment.Segment`).

Directory `<data_dir>/<topic>-<partition>/` (the caller passes it) holds, for each segment,
`<base offset, 20 digits>.log|.index|.timeindex`, plus `log-start-offset` when DeleteRecords moved the log start
inside a segment: that file holds the offset in decimal and a newline, replaced atomically (`atomic_file`). Kafka keeps
the same fact in `log-start-offset-checkpoint` at the data-dir level; one file per partition keeps partitions
independent. On open the log start is max(first segment base, checkpoint), never past the log end.

Invariants: segment base offsets strictly increase and each segment ends where the next begins; the last segment is
the active one (appends go there) and ends at `log_end_offset`; `_segment_bases` mirrors the segments for bisect, so
a read costs a bisect over segments, a binary search of that segment's offset index, and a forward scan of at most
`index_interval_bytes` of batch headers.

Durability (group commit): `append` writes to the page cache and bumps `_write_sequence`. `sync()` waits until a
completed fsync round covers the caller's sequence: a round snapshots the sequence and the segments written since the
last round, and fsyncs them (plus the directory when segments were created or deleted) in a worker thread, on
duplicated file descriptors, so the event loop never blocks and closing a segment cannot pull a descriptor away from
a running fsync. A caller arriving while a round is in flight waits for it, then for the next round, which one of
those waiting starts; every caller waiting at that moment shares it. `fsync=False` turns `sync` into a no-op.

Recovery on open (`open`): each segment's indexes are checked (entries increasing, inside the log) and rebuilt from
the log when missing or insane; the last segment is scanned from its last index entry, every batch's length, CRC and
offset checked, and the log is cut at the first bad or partial batch (a WARNING names the file, position, bytes and
reason). A corrupt batch found while rebuilding an older segment cuts there and deletes every later segment.
"""

from __future__ import annotations

import asyncio
import logging
from bisect import bisect_right
from collections.abc import Callable
from pathlib import Path

from kafkalite.errors import ClosedError, OffsetOutOfRangeError, StorageError
from kafkalite.protocol.records import BatchHeader, patch_base_offset
from kafkalite.storage.atomic_file import read_file, write_atomically
from kafkalite.storage.base import LogConfig
from kafkalite.storage.file_ops import FileOps
from kafkalite.storage.policy import DEFAULT_CONFIG, count_expired_segments, should_roll, wall_clock_ms
from kafkalite.storage.segment import LOG_SUFFIX, Segment

LOG_START_CHECKPOINT = "log-start-offset"
_SEGMENT_NAME_DIGITS = 20

logger = logging.getLogger("kafkalite.storage")


class PartitionLog:
    """A partition's segments on disk; build one with `PartitionLog.open`. See the module docstring."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        segments: list[Segment],
        *,
        log_start_offset: int,
        log_end_offset: int,
        fsync: bool,
        clock: Callable[[], int],
        file_ops: FileOps,
    ) -> None:
        self.directory = directory
        self.config = config
        self._segments = segments
        self._segment_bases = [segment.base_offset for segment in segments]
        self._log_start = log_start_offset
        self._log_end = log_end_offset
        self._fsync = fsync
        self._clock = clock
        self._ops = file_ops
        self._closed = False
        self._write_sequence = 1  # opening may have created or cut files: the first sync covers that
        self._synced_sequence = 0
        self._unsynced_segments: dict[int, Segment] = {segments[-1].base_offset: segments[-1]}
        self._directory_unsynced = True
        self._sync_round: asyncio.Task[None] | None = None

    # --- opening and recovery ---------------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        directory: Path,
        config: LogConfig = DEFAULT_CONFIG,
        *,
        fsync: bool = True,
        clock: Callable[[], int] = wall_clock_ms,
        file_ops: FileOps | None = None,
    ) -> PartitionLog:
        """Open (creating when absent) and recover the log in `directory`; see the module docstring."""
        ops = FileOps() if file_ops is None else file_ops
        try:
            directory.mkdir(parents=True, exist_ok=True)
            bases = sorted(
                int(path.stem)
                for path in directory.glob(f"*{LOG_SUFFIX}")
                if len(path.stem) == _SEGMENT_NAME_DIGITS and path.stem.isdigit()
            )
        except OSError as exc:
            raise StorageError(f"open {directory} failed: {exc.strerror or exc}") from exc
        checkpoint = read_file(directory / LOG_START_CHECKPOINT)
        checkpointed_start = int(checkpoint) if checkpoint else 0
        segments: list[Segment] = []
        log_end = checkpointed_start
        try:
            for number, base in enumerate(bases):
                segment, rebuild_reason = Segment.load(directory, base, ops)
                segments.append(segment)
                is_last = number == len(bases) - 1
                if not is_last and rebuild_reason is None:
                    continue
                log_end = segment.recover(config.index_interval_bytes, rebuild_reason=rebuild_reason, now_ms=clock())
                if is_last:
                    continue
                segment.become_inactive()
                next_base = bases[number + 1]
                if log_end != next_base:
                    logger.warning(
                        "%s ends at offset %d but the next segment starts at %d: deleting every later segment",
                        segment.log_path,
                        log_end,
                        next_base,
                    )
                    for later in bases[number + 1 :]:
                        Segment.load(directory, later, ops)[0].delete()
                    break
            if not segments:
                segments.append(Segment.create(directory, checkpointed_start, ops, clock()))
        except BaseException:
            for segment in segments:
                segment.close()
            raise
        log_start = min(max(segments[0].base_offset, checkpointed_start), log_end)
        return cls(
            directory,
            config,
            segments,
            log_start_offset=log_start,
            log_end_offset=log_end,
            fsync=fsync,
            clock=clock,
            file_ops=ops,
        )

    # --- the Log interface ------------------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start

    @property
    def log_end_offset(self) -> int:
        return self._log_end

    @property
    def size_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    @property
    def segment_count(self) -> int:
        return len(self._segments)

    def append(self, batch: bytearray, header: BatchHeader) -> tuple[int, int]:
        self._check_open()
        base = self._log_end
        last = base + header.last_offset_delta
        now_ms = self._clock()
        active = self._segments[-1]
        if should_roll(
            self.config,
            segment_size=active.size,
            segment_base_offset=active.base_offset,
            first_batch_max_timestamp=active.first_batch_max_timestamp,
            created_ms=active.created_ms,
            batch_size=len(batch),
            batch_max_timestamp=header.max_timestamp,
            batch_last_offset=last,
            now_ms=now_ms,
        ):
            active = self._roll(base, now_ms)
        patch_base_offset(batch, 0, base)
        active.append(batch, last, header.max_timestamp, self.config.index_interval_bytes, now_ms)
        self._log_end = last + 1
        self._unsynced_segments[active.base_offset] = active
        self._write_sequence += 1
        return base, last

    def read(self, offset: int, max_bytes: int) -> bytes:
        self._check_open()
        if offset < self._log_start or offset > self._log_end:
            raise OffsetOutOfRangeError(offset, self._log_start, self._log_end)
        if offset == self._log_end:
            return b""
        return self._segments[bisect_right(self._segment_bases, offset) - 1].read(offset, max_bytes)

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        self._check_open()
        for segment in self._segments:
            if segment.max_timestamp >= timestamp_ms:
                found = segment.find_by_timestamp(timestamp_ms, max(self._log_start, segment.base_offset))
                if found is not None:
                    return found
        return None

    async def sync(self) -> None:
        self._check_open()
        if not self._fsync:
            return
        target = self._write_sequence
        while self._synced_sequence < target:
            if self._sync_round is None:
                self._sync_round = asyncio.get_running_loop().create_task(self._run_sync_round())
            await asyncio.shield(self._sync_round)

    def truncate_to(self, offset: int) -> None:
        self._check_open()
        if offset >= self._log_end:
            return
        now_ms = self._clock()
        if offset < self._segments[0].base_offset:
            self._delete_segments(self._segments)
            self._segments = [Segment.create(self.directory, offset, self._ops, now_ms)]
            self._segment_bases = [offset]
            self._log_start = self._log_end = offset
            self._write_log_start_checkpoint()
            return
        holding = bisect_right(self._segment_bases, offset) - 1
        self._segments[holding].truncate_to(offset, now_ms)
        self._delete_segments(self._segments[holding + 1 :])
        del self._segments[holding + 1 :], self._segment_bases[holding + 1 :]
        self._log_end = offset
        if offset < self._log_start:
            self._log_start = offset
            self._write_log_start_checkpoint()

    def delete_records_before(self, offset: int) -> None:
        self._check_open()
        if offset > self._log_end:
            raise OffsetOutOfRangeError(offset, self._log_start, self._log_end)
        if offset <= self._log_start:
            return
        self._log_start = offset
        self._write_log_start_checkpoint()
        self._delete_oldest(bisect_right(self._segment_bases, offset) - 1)

    def apply_retention(self, now_ms: int) -> int:
        self._check_open()
        expired = count_expired_segments(self.config, self._segments, now_ms)
        self._delete_oldest(expired)
        return expired

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._segments[-1].become_inactive()
            if self._fsync:
                self._fsync_now(list(self._unsynced_segments.values()), sync_directory=self._directory_unsynced)
        finally:
            for segment in self._segments:
                segment.close()

    # --- internals --------------------------------------------------------------------------------------------

    def _roll(self, base_offset: int, now_ms: int) -> Segment:
        self._segments[-1].become_inactive()
        segment = Segment.create(self.directory, base_offset, self._ops, now_ms)
        self._segments.append(segment)
        self._segment_bases.append(base_offset)
        self._directory_unsynced = True
        return segment

    def _delete_oldest(self, count: int) -> None:
        if count <= 0:
            return
        self._delete_segments(self._segments[:count])
        del self._segments[:count], self._segment_bases[:count]
        self._log_start = max(self._log_start, self._segment_bases[0])

    def _delete_segments(self, segments: list[Segment]) -> None:
        for segment in segments:
            self._unsynced_segments.pop(segment.base_offset, None)
            segment.delete()
        if segments:
            self._directory_unsynced = True
            self._write_sequence += 1

    def _write_log_start_checkpoint(self) -> None:
        write_atomically(self.directory / LOG_START_CHECKPOINT, b"%d\n" % self._log_start, fsync=self._fsync)

    async def _run_sync_round(self) -> None:
        """One group-commit round: fsync what was written before it started, in a worker thread."""
        sequence = self._write_sequence
        segments = list(self._unsynced_segments.values())
        sync_directory = self._directory_unsynced
        self._unsynced_segments.clear()
        self._directory_unsynced = False
        try:
            fds = [(self._ops.dup(segment.log_fd), segment.log_path) for segment in segments]
        except OSError as exc:
            self._sync_round = None
            self._unsynced_segments.update((segment.base_offset, segment) for segment in segments)
            self._directory_unsynced |= sync_directory
            raise StorageError(f"fsync of {self.directory} failed: {exc.strerror or exc}") from exc
        try:
            await asyncio.to_thread(self._fsync_descriptors, fds, sync_directory)
        except StorageError:
            for segment in segments:  # retry them in the next round (the caller decides whether to go on)
                self._unsynced_segments.setdefault(segment.base_offset, segment)
            self._directory_unsynced |= sync_directory
            raise
        else:
            self._synced_sequence = max(self._synced_sequence, sequence)
        finally:
            self._sync_round = None

    def _fsync_descriptors(self, fds: list[tuple[int, Path]], sync_directory: bool) -> None:
        """Runs in a worker thread: fsync each duplicated descriptor (then close it) and the directory."""
        failure: StorageError | None = None
        for fd, path in fds:
            try:
                self._ops.fsync(fd)
            except OSError as exc:
                failure = failure or StorageError(f"fsync {path} failed: {exc.strerror or exc}")
            finally:
                self._ops.close(fd)
        if sync_directory and failure is None:
            try:
                self._ops.fsync_directory(self.directory)
            except OSError as exc:
                failure = StorageError(f"fsync {self.directory} failed: {exc.strerror or exc}")
        if failure is not None:
            raise failure

    def _fsync_now(self, segments: list[Segment], *, sync_directory: bool) -> None:
        self._fsync_descriptors([(self._ops.dup(s.log_fd), s.log_path) for s in segments], sync_directory)

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError(f"the log in {self.directory} is closed")
