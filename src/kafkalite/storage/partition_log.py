"""`PartitionLog`: the durable log of one partition, a directory of Kafka segments (`segment.Segment`).

Directory `<data_dir>/<topic>-<partition>/` (the caller passes it) holds, for each segment,
`<base offset, 20 digits>.log|.index|.timeindex` (and `.txnindex` once an abort marker lands in it: see
`transaction_index`; loaded on open, cut to the recovered log end), and these small files, each replaced atomically
(`file_ops.replace_atomically`: write `<name>.tmp`, fsync, rename, fsync the directory):
  * `log-start-offset`, when DeleteRecords moved the log start inside a segment: the offset in decimal and a newline.
    Kafka keeps the same fact in `log-start-offset-checkpoint` at the data-dir level; one file per partition keeps
    partitions independent. On open the log start is max(first segment base, checkpoint), never past the log end.
  * `recovery-point`: an offset in decimal and a newline (Kafka's `recovery-point-offset-checkpoint`, per partition
    here). Invariant: every batch below it is on disk, and so are all three files of every segment that ends at or
    below it. Written (1) after a roll, by a background task that fsyncs the rolled segment's three files (with any
    earlier rolled segment not flushed yet) and the directory in a worker thread, then replaces the file: once per
    segment, never per sync round; (2) by `open`, once recovery has fsynced what it checked; (3) by `close`, as the
    log end offset; (4) by `truncate_to`, lowered before a cut below it.
  * `cleaner-offset`: where the last cleaning of a compacted log ended (its first dirty offset), in decimal and a
    newline (Kafka's `cleaner-offset-checkpoint`, per partition here). Written durably before a cleaning's swap
    commits (`file_cleaning`), since it also tells recovery which segments may hold offset gaps: those whose base
    offset lies below it.
  * `clean-shutdown`: an empty marker (Kafka's `.kafka_cleanshutdown`, kept per partition because a log opens and
    closes on its own, without knowing the data dir). `close` writes it last, after fsyncing every segment file and
    writing `recovery-point`; `open` removes it, and makes the removal durable before any append can follow.

Invariants: segment base offsets strictly increase and each segment ends where the next begins; the last segment is
the active one (appends go there) and ends at `log_end_offset`; `_segment_bases` mirrors the segments for bisect, so
a read costs a bisect over segments, a binary search of that segment's offset index, and a forward scan of at most
`index_interval_bytes` of batch headers.

Descriptors: the active segment's `.log` stays open; an inactive segment's is opened by the read that needs it and
closed again once more than `_OPEN_INACTIVE_LOGS` inactive segments hold one (least recently read first), so a
partition costs one descriptor plus what its readers of old segments hold (see `segment` for the indexes).
How truncation, DeleteRecords and retention move the offsets is `SegmentedLog`'s rule, shared with `MemoryLog`;
this engine adds the files (deleting segments, `log-start-offset`, lowering `recovery-point` before a cut).

Durability (group commit): `append` writes to the page cache and bumps `_write_sequence`. `sync()` waits until a
completed fsync round covers the caller's sequence: a round snapshots the sequence and the segments written since the
last round, and fsyncs their `.log` files (plus the directory when segments were created or deleted) in a worker
thread (`group_commit`: one thread runs the rounds of every log in batches), on duplicated file descriptors, so the
event loop never blocks and closing a segment cannot pull a descriptor away from a running fsync. Each caller waits
on a future of its own, listed with its sequence; one task (`_sync_rounds`) runs round after round while any caller
is left whose sequence no finished round covers, and resolves each caller as a round covers it (a caller that
appended after a round took its snapshot waits for the next one, which every caller waiting at that moment shares).
A failed round passes its error to every caller waiting then; a cancelled caller leaves the rounds alone, and the
callers of a cancelled rounds task are cancelled with it. `fsync=False` turns `sync` into a no-op and every fsync
above into nothing (the checkpoint files are still renamed into place, which is enough for kill -9).
A failed fsync stops the log for writes (appends and syncs raise `StorageError`; reads go on) until it is reopened:
the kernel may have dropped the dirty pages and would let a later fsync succeed over the hole.
Index files are fsynced only when their segment is rolled or the log closed: they are derived from the log, so
recovery may always rebuild them. A roll outside a running event loop leaves the rolled segment queued; the next
roll, `sync()` or `checkpointed()` under a loop, or `close`, flushes it. A checkpoint whose fsync fails stops the log
as a failed sync round does; one that fails otherwise (writing `recovery-point`) is logged and retried at the next
one, the recovery point lagging, which costs recovery time, never data. A stopped log starts no checkpoint and is
not cleaned, and its `close` writes neither `recovery-point` nor `clean-shutdown`, so the next open checks every batch
past the last good recovery point.

Recovery on open (`open`):
  * with `clean-shutdown` (the fast path): each segment's indexes are checked (entries increasing, inside the log)
    and rebuilt from the log when missing or insane; the last segment is scanned from its last index entry.
  * without it (kill -9, power loss, a crash): segments ending at or below `recovery-point` get the fast path's
    index check; the segment holding it and every later one (always at least the last) are recovered fully, every
    batch from the segment start checked (length, CRC, offset continuity) and both indexes rebuilt from the log,
    since power loss may have torn or zero-filled any unflushed file. Then those segments are fsynced, so the
    recovery point moves to the log end. A directory without the file (written before it existed) is recovered
    fully once.
Either way the log is cut at the first bad or partial batch (a WARNING names the file, position, bytes and reason);
a cut in an older segment, or a segment that runs past the next one's base, deletes every later segment. Before any
of that, a cleaning a crash interrupted is completed or discarded (`file_cleaning`).

Compaction (`file_cleaning`): a cleaning rewrites a prefix of segments that all end at or below the recovery point
(so every file it reads is durable), in the cleaner thread, and `finish_cleaning` swaps the result in on the event
loop; reads then skip the gaps the cleaning left, moving on to the next segment when a segment has nothing at or
after the offset asked for.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import threading
import time
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from kafkalite.errors import ClosedError, OffsetOutOfRangeError, StorageError
from kafkalite.protocol.records import BatchHeader
from kafkalite.stats import SyncStats
from kafkalite.storage.atomic_file import read_file
from kafkalite.storage.base import LogConfig
from kafkalite.storage.compaction_policy import CleaningStats
from kafkalite.storage.compactor import CleaningContext, CleaningJob
from kafkalite.storage.file_cleaning import (
    FileCleaningJob,
    read_cleaner_checkpoint,
    recover_interrupted_cleaning,
    swap_in,
)
from kafkalite.storage.file_ops import FileOps, replace_atomically
from kafkalite.storage.file_records import TRUNCATED_SUFFIX, FileRecords
from kafkalite.storage.group_commit import run_fsync_job
from kafkalite.storage.policy import DEFAULT_CONFIG, wall_clock_ms
from kafkalite.storage.segment import LOG_SUFFIX, Segment, storage_error
from kafkalite.storage.segmented_log import SegmentedLog
from kafkalite.storage.transaction_index import AbortedTxn, TransactionIndex, txn_index_path

LOG_START_CHECKPOINT = "log-start-offset"
RECOVERY_POINT_CHECKPOINT = "recovery-point"

CLEAN_SHUTDOWN_MARKER = "clean-shutdown"
_SEGMENT_NAME_DIGITS = 20
ReadT = TypeVar("ReadT", bytes, FileRecords | bytes)
REFUSED_APPENDS_REMINDER_MS = 60_000  # while appends keep failing, how often the log says so again
_OPEN_INACTIVE_LOGS = 2  # a consumer catching up reads one old segment after another: enough to avoid reopen churn

logger = logging.getLogger("kafkalite.storage")


class PartitionLog(SegmentedLog[Segment]):
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
        txn_index: TransactionIndex | None = None,
    ) -> None:
        self.directory = directory
        self._txn_index = txn_index or TransactionIndex(directory, file_ops)
        self.config = config
        self._segments = segments
        self._segment_bases = [segment.base_offset for segment in segments]
        self._log_start = log_start_offset
        self._log_end = log_end_offset
        self._fsync = fsync
        self._clock = clock
        self._ops = file_ops
        self._closed = False
        self._fsync_failure: StorageError | None = None  # set by a failed fsync: the log then refuses writes
        self._stop_said = False  # whether the ERROR line that the log refuses writes was logged
        self._refused_appends = 0  # failed appends since the last one that succeeded (`_note_refused_append`)
        self._refusals_began_ms = self._refusals_logged_ms = 0
        self._write_sequence = 1  # opening may have created or cut files: the first sync covers that
        self._synced_sequence = 0
        self._unsynced_segments: dict[int, Segment] = {segments[-1].base_offset: segments[-1]}
        self._unsynced_txn_index: set[Path] = set()  # `.txnindex` files an abort was appended to since the last round
        self._directory_unsynced = True
        self._sync_task: asyncio.Task[None] | None = None  # `_sync_rounds`, while callers of `sync` wait
        self._sync_waiters: list[tuple[int, asyncio.Future[None]]] = []  # (sequence awaited, its caller's future)
        self.sync_stats: SyncStats | None = None  # the broker's fsync-round counters (`/metrics`), when it keeps them
        # Recovery point: `open` leaves everything below the log end on disk. Rolled segments wait in `_rolled` (with
        # the offset they end at) until the checkpoint task has flushed them; `_checkpoint_lock` makes "is this value
        # still true, then write it" one step between that worker thread and `truncate_to`/`close`, which bump
        # `_checkpoint_epoch` so an in-flight checkpoint computed before them is dropped rather than written after.
        self._recovery_point = log_end_offset
        self._rolled: list[tuple[Segment, int]] = []
        self._checkpoint_task: asyncio.Task[None] | None = None
        self._checkpoint_moved: asyncio.Event | None = None  # set (and replaced) each time the checkpoint task steps
        self._checkpoint_lock = threading.Lock()
        self._checkpoint_epoch = 0
        self._open_inactive: OrderedDict[int, Segment] = OrderedDict()  # by id(segment), least recently read first
        for segment in segments[:-1]:
            segment.release_log_fd()

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
            directory.mkdir(parents=True)
            fresh = True  # a new partition (CreateTopics of thousands): nothing to look for
        except FileExistsError:
            fresh = False
        except OSError as exc:
            raise StorageError(f"open {directory} failed: {exc.strerror or exc}") from exc
        try:
            names = [] if fresh else os.listdir(directory)
            if recover_interrupted_cleaning(directory, names, ops, fsync=fsync):
                names = os.listdir(directory)
            for name in names:  # a cut that a crash interrupted while it copied a segment aside: the copy is garbage
                if name.endswith(TRUNCATED_SUFFIX):
                    ops.remove(directory / name)
            bases = _segment_bases(names)
            clean = CLEAN_SHUTDOWN_MARKER in names
        except OSError as exc:
            raise StorageError(f"open {directory} failed: {exc.strerror or exc}") from exc
        checkpoint = None if fresh else read_file(directory / LOG_START_CHECKPOINT)
        cleaned_to = read_cleaner_checkpoint(directory) if not fresh else 0
        checkpointed_start = int(checkpoint) if checkpoint else 0
        # Segments from the one holding the recovery point on were not known durable: recover them fully.
        recovery_point = 0 if fresh else _read_recovery_point(directory)
        full_from = max((base for base in bases if base <= recovery_point), default=-1)
        segments: list[Segment] = []
        recovered: list[Segment] = []
        log_end = checkpointed_start
        try:
            for number, base in enumerate(bases):
                segment, rebuild_reason = Segment.load(directory, base, ops)
                segment.gaps_allowed = base < cleaned_to
                segments.append(segment)
                is_last = number == len(bases) - 1
                full = not clean and base >= full_from
                if not is_last and rebuild_reason is None and not full:
                    continue
                log_end = segment.recover(
                    config.index_interval_bytes, rebuild_reason=rebuild_reason, now_ms=clock(), full=full
                )
                if full or rebuild_reason is not None:
                    recovered.append(segment)
                if is_last:
                    continue
                segment.become_inactive()
                next_base = bases[number + 1]
                gap = log_end < next_base and not segment.gaps_allowed
                if log_end > next_base or gap or segment.cut_by_recovery:
                    logger.warning(
                        "%s ends at offset %d, the next segment starts at %d: deleting every later segment",
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
        log = cls(
            directory,
            config,
            segments,
            log_start_offset=log_start,
            log_end_offset=log_end,
            fsync=fsync,
            clock=clock,
            file_ops=ops,
            txn_index=None if fresh else _load_txn_index(directory, segments, log_end, ops, fsync=fsync),
        )
        log._first_dirty = cleaned_to
        try:
            log._settle_after_open(recovered, clean=clean, recovery_point=recovery_point)
        except BaseException:
            for segment in segments:
                segment.close()
            raise
        return log

    def _settle_after_open(self, recovered: list[Segment], *, clean: bool, recovery_point: int) -> None:
        """Make what recovery checked and rewrote durable, so the recovery point can be the log end; drop the marker.

        Recovery may have read bytes a killed process left in the page cache, cut files and rebuilt indexes: none of
        that is on disk yet. Flushing it here (blocking, like the recovery reads before it) keeps the invariant simple.
        An empty log whose recovery point already reads 0 (absent means 0: a new partition) writes nothing.
        The marker goes last, and its removal is made durable before any append: were it to reappear after a power
        cut, the next open would trust segments written after this one.
        """
        try:
            if recovered and self._fsync:
                self._fsync_descriptors(self._dup_files(recovered), sync_directory=True)
            if not clean:
                if self._log_end != 0 or recovery_point != 0:
                    self._write_recovery_point(self._log_end)
            else:
                self._ops.remove(self.directory / CLEAN_SHUTDOWN_MARKER)
                if self._fsync:
                    self._ops.fsync_directory(self.directory)
        except OSError as exc:
            raise StorageError(f"open {self.directory} failed: {exc.strerror or exc}") from exc

    # --- the Log interface ------------------------------------------------------------------------------------

    def append(self, batch: bytes | bytearray | memoryview, header: BatchHeader) -> tuple[int, int]:
        self._check_writable()
        try:
            active, base, last, now_ms = self._segment_for_append(len(batch), header)
            active.append(batch, last, header.max_timestamp, self.config.index_interval_bytes, now_ms, base)
        except StorageError as exc:
            self._note_refused_append(exc)
            raise
        if self._refused_appends:
            logger.warning("appends to %s succeed again, after %d refused", self.directory, self._refused_appends)
            self._refused_appends = 0
        self._log_end = last + 1
        self._unsynced_segments[active.base_offset] = active
        self._write_sequence += 1
        return base, last

    def append_aborted_transaction(self, entry: AbortedTxn) -> None:
        """Index the abort, and make its `.txnindex` file part of the next sync round: the marker is synced by
        that round, and the start-up replay re-indexes only the log's tail, so the entry is made as durable."""
        self._check_open()
        base = self._segments[-1].base_offset
        path = txn_index_path(self.directory, base)
        created = self._fsync and path not in self._unsynced_txn_index and not path.exists()
        try:
            self._txn_index.append(base, entry)
        except OSError as exc:
            raise storage_error("append to", path, exc) from exc
        if self._fsync:
            self._unsynced_txn_index.add(path)
            self._directory_unsynced |= created
            self._write_sequence += 1

    def _note_refused_append(self, exc: StorageError) -> None:
        """Log a failed append (a full disk, an I/O error) when a streak of them starts, then a reminder with the
        count every `REFUSED_APPENDS_REMINDER_MS` while it lasts; the append that ends it says so (`append`). A full
        disk fails every request, and a line for each would bury the log."""
        now_ms = self._clock()
        self._refused_appends += 1
        if self._refused_appends == 1:
            self._refusals_logged_ms = self._refusals_began_ms = now_ms
            logger.error(
                "appends to %s fail, and are refused with KAFKA_STORAGE_ERROR until one succeeds: %s",
                self.directory,
                exc,
            )
        elif now_ms - self._refusals_logged_ms >= REFUSED_APPENDS_REMINDER_MS:
            self._refusals_logged_ms = now_ms
            logger.error(
                "appends to %s still fail: %d refused in %d s, the last: %s",
                self.directory,
                self._refused_appends,
                (now_ms - self._refusals_began_ms) // 1000,
                exc,
            )

    def read(self, offset: int, max_bytes: int) -> bytes:
        return self._read_with(Segment.read, offset, max_bytes)

    def read_file_records(self, offset: int, max_bytes: int) -> FileRecords | bytes:
        """`read`, as a range of the segment file to send without copying it (`file_records`) when it is large."""
        return self._read_with(Segment.read_file_records, offset, max_bytes)

    def _read_with(self, read: Callable[[Segment, int, int], ReadT], offset: int, max_bytes: int) -> ReadT | bytes:
        self._check_open()
        if offset < self._log_start or offset > self._log_end:
            raise OffsetOutOfRangeError(offset, self._log_start, self._log_end)
        if offset == self._log_end:
            return b""
        for number in range(bisect_right(self._segment_bases, offset) - 1, len(self._segments)):
            segment = self._segments[number]
            data = read(segment, offset, max_bytes)
            self._note_read(segment)
            if data:
                return data
        return b""

    # --- compaction (see file_cleaning) -----------------------------------------------------------------------

    def cleaning_stats(self, now_ms: int, first_unstable_offset: int | None = None) -> CleaningStats | None:
        """As every log's, but None once this one stopped after a failed fsync: a cleaning's swap writes and fsyncs
        files, and no fsync of a stopped log is trusted. The restart that recovers the log cleans it again."""
        if self._fsync_failure is not None:
            self._check_open()
            return None
        return super().cleaning_stats(now_ms, first_unstable_offset)

    def prepare_cleaning(self, now_ms: int, context: CleaningContext) -> CleaningJob | None:
        stats = self.cleaning_stats(now_ms, context.first_unstable_offset)
        if stats is None:
            return None
        count = stats.cleanable_segments
        for segment in self._segments[:count]:
            segment.write_pending_index_entries()
        return FileCleaningJob(
            self.directory,
            self._ops,
            self.config,
            context,
            stats,
            list(self._segments[:count]),
            self._segment_bases[1 : count + 1],
            now_ms,
            self._fsync,
            self._structure_version,
        )

    def finish_cleaning(self, job: CleaningJob) -> bool:
        assert isinstance(job, FileCleaningJob)
        outcome = job.outcome
        applies = self._cleaning_applies(job.version, job.members, prepared=True)
        if outcome is None or not applies or self._fsync_failure is not None:  # stopped while the cleaning ran
            job.discard()
            return False
        rewritten = job.members[: sum(outcome.groups)]
        cleaned = job.cleaned or []
        try:
            swap_in(job)
        except StorageError:
            if not job.committed:
                job.discard()
                raise
            # Durable on disk, half done in the directory: the next open completes it; until then, no writes.
            self._stop_writes(StorageError(f"a cleaning of {self.directory} could not be completed"))
            raise
        gone = {id(segment) for segment in rewritten}
        self._rolled = [entry for entry in self._rolled if id(entry[0]) not in gone]
        for segment in rewritten:
            self._unsynced_segments.pop(segment.base_offset, None)
            self._open_inactive.pop(id(segment), None)
        self._segments[: len(rewritten)] = cleaned
        self._segment_bases = [segment.base_offset for segment in self._segments]
        try:
            self._txn_index.regroup(self._segment_bases, dropped=outcome.dropped_markers, fsync=self._fsync)
        except OSError as exc:  # the segments are swapped in; the next open regroups the index from its files
            failure = StorageError(f"regrouping the transaction index of {self.directory} failed: {exc}")
            self._stop_writes(failure)
            raise failure from exc
        self._directory_unsynced = True  # the removes and renames after the commit point: the next round syncs them
        self._write_sequence += 1
        self._first_dirty = outcome.first_dirty
        self._earliest_horizon = outcome.earliest_horizon
        return True

    def _cleanable_limit(self) -> int:
        return self._recovery_point

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        self._check_open()
        for segment in self._segments:
            if segment.max_timestamp >= timestamp_ms:
                found = segment.find_by_timestamp(timestamp_ms, max(self._log_start, segment.base_offset))
                self._note_read(segment)
                if found is not None:
                    return found
        return None

    async def sync(self) -> None:
        self._check_writable()
        if not self._fsync:
            return
        if self._rolled and self._checkpoint_task is None:  # rolled outside a loop, or the last checkpoint failed
            self._start_checkpoint()
        target = self._write_sequence
        if self._synced_sequence >= target:
            return
        loop = asyncio.get_running_loop()
        task = self._sync_task
        if task is not None and not task.done() and task.get_loop() is not loop:
            if task.get_loop().is_running():
                raise RuntimeError(f"{self.directory} is being synced from another event loop")
            # Left pending by a loop that stopped or closed (a server run in a thread): it will never run again.
            self._sync_waiters[:] = [(t, w) for t, w in self._sync_waiters if w.get_loop() is loop]
            task = None
        waiter: asyncio.Future[None] = loop.create_future()  # its own: cancelling it cancels no round
        self._sync_waiters.append((target, waiter))
        if task is None or task.done():
            self._sync_task = loop.create_task(self._sync_rounds())
            self._sync_task.add_done_callback(self._sync_rounds_ended)
        await waiter

    async def checkpointed(self) -> None:
        """Wait until the recovery point covers the segments rolled so far (or their checkpoint failed, which leaves
        it lagging): a cleaning rewrites only segments below it, so a caller that cleans next cleans all it wrote.
        Segments rolled meanwhile are not waited for, so steady rolls cannot keep the caller waiting."""
        if self._closed or self._fsync_failure is not None or not self._rolled:
            return
        target = self._rolled[-1][1]
        self._start_checkpoint()  # none runs when the segments rolled outside a loop or the last checkpoint failed
        while self._recovery_point < target and (task := self._checkpoint_task) is not None and not self._closed:
            if task.get_loop() is not asyncio.get_running_loop():
                return  # a task of a loop that was dropped without finishing it: nothing would wake this one
            if self._checkpoint_moved is None:
                self._checkpoint_moved = asyncio.Event()
            await self._checkpoint_moved.wait()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._segments[-1].become_inactive()
            if self._fsync and self._fsync_failure is None:  # a stopped log fsyncs nothing more (see below)
                unflushed = [segment for segment, _ in self._rolled]
                unflushed += [*self._unsynced_segments.values(), self._segments[-1]]
                unique = list({id(segment): segment for segment in unflushed}.values())
                files = self._dup_files(unique) + self._open_txn_indexes(list(self._unsynced_txn_index))
                self._fsync_descriptors(files, sync_directory=True)
            with self._checkpoint_lock:
                self._checkpoint_epoch += 1  # an in-flight roll checkpoint must not overwrite what follows
                if self._recorded_fsync_failure() is not None:
                    # Stopped before, or another thread's fsync failed while this one flushed: pages a failed fsync
                    # dropped may lie under a later one that succeeds, so no marker and no new recovery point, and
                    # the next open checks every batch from the last good recovery point on.
                    return
                try:
                    self._write_recovery_point(self._log_end)
                    replace_atomically(self._ops, self.directory / CLEAN_SHUTDOWN_MARKER, b"", fsync=self._fsync)
                except OSError as exc:
                    raise storage_error("write", self.directory / CLEAN_SHUTDOWN_MARKER, exc) from exc
        finally:
            for segment in self._segments:
                segment.close()
            self._wake_checkpoint_waiters()

    # --- internals --------------------------------------------------------------------------------------------

    def _note_read(self, segment: Segment) -> None:
        """Keep the `.log` of at most `_OPEN_INACTIVE_LOGS` inactive segments open, the most recently read ones."""
        if segment is self._segments[-1] or not segment.log_fd_open:
            return
        self._open_inactive[id(segment)] = segment
        self._open_inactive.move_to_end(id(segment))
        while len(self._open_inactive) > _OPEN_INACTIVE_LOGS:
            self._open_inactive.popitem(last=False)[1].release_log_fd()

    def _roll(self, base_offset: int, now_ms: int) -> Segment:
        rolled = self._segments[-1]
        rolled.become_inactive()
        rolled.release_log_fd()
        segment = super()._roll(base_offset, now_ms)
        self._directory_unsynced = True
        self._rolled.append((rolled, base_offset))
        self._start_checkpoint()
        return segment

    # --- SegmentedLog hooks -----------------------------------------------------------------------------------

    def _new_segment(self, base_offset: int, now_ms: int) -> Segment:
        return Segment.create(self.directory, base_offset, self._ops, now_ms)

    def _before_truncate(self, offset: int) -> None:
        self._lower_recovery_point(offset)
        # Segments ending at or below `offset` stay rolled; the one holding it becomes active, later ones go.
        self._rolled = [entry for entry in self._rolled if entry[1] <= offset]

    def _delete_segments(self, segments: list[Segment]) -> None:
        deleted = {id(segment) for segment in segments}
        self._rolled = [entry for entry in self._rolled if id(entry[0]) not in deleted]
        for segment in segments:
            self._unsynced_segments.pop(segment.base_offset, None)
            self._open_inactive.pop(id(segment), None)
            segment.delete()
        if segments:
            self._directory_unsynced = True
            self._write_sequence += 1

    def _log_start_moved(self) -> None:
        """Persist the log start in `log-start-offset`."""
        path = self.directory / LOG_START_CHECKPOINT
        try:
            replace_atomically(self._ops, path, b"%d\n" % self._log_start, fsync=self._fsync)
        except OSError as exc:
            raise storage_error("write", path, exc) from exc

    # --- recovery point ---------------------------------------------------------------------------------------

    def _write_recovery_point(self, offset: int) -> None:
        """Replace `recovery-point` (raises `OSError`); callers hold `_checkpoint_lock` or run before any task."""
        replace_atomically(self._ops, self.directory / RECOVERY_POINT_CHECKPOINT, b"%d\n" % offset, fsync=self._fsync)
        self._recovery_point = offset

    def _lower_recovery_point(self, offset: int) -> None:
        """Before cutting the log at `offset`: data written there next is not durable, so recovery must check it."""
        with self._checkpoint_lock:
            self._checkpoint_epoch += 1
            if offset >= self._recovery_point:
                return
            try:
                self._write_recovery_point(offset)
            except OSError as exc:
                raise storage_error("write", self.directory / RECOVERY_POINT_CHECKPOINT, exc) from exc

    def _start_checkpoint(self) -> None:
        """Flush the rolled segments and move the recovery point past them: in a worker thread when a loop runs."""
        if self._checkpoint_task is not None or not self._rolled or self._fsync_failure is not None:
            return  # one runs already, nothing to flush, or the log stopped (a later fsync could hide a hole)
        if not self._fsync:  # no fsync to wait for, only a rename: cheap enough to do right here, once per roll
            try:
                self._write_recovery_point(self._rolled[-1][1])
            except OSError as exc:
                logger.error("cannot write the recovery point of %s: %s", self.directory, exc)
                return
            self._rolled.clear()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop to hand the fsyncs to; the next roll or sync under one, or close, flushes them
        self._checkpoint_task = loop.create_task(self._checkpoint_rolled())

    async def _checkpoint_rolled(self) -> None:
        """Until none is left: fsync the rolled segments' files and the directory, then persist the recovery point."""
        try:
            while self._rolled and not self._closed and self._fsync_failure is None:
                batch = list(self._rolled)
                epoch = self._checkpoint_epoch
                try:
                    files = self._dup_files([segment for segment, _ in batch])
                    await asyncio.to_thread(self._flush_and_checkpoint, files, batch[-1][1], epoch)
                except (OSError, StorageError) as exc:
                    failure = self._recorded_fsync_failure()
                    if failure is not None:  # its fsync or a round's failed meanwhile: pages may be gone, so it stops
                        self._stop_writes(failure)
                    else:  # writing `recovery-point` failed: it only lags; the next roll or sync retries
                        logger.error(
                            "checkpoint of %s failed, recovery point stays at %d: %s",
                            self.directory,
                            self._recovery_point,
                            exc,
                        )
                    return
                # By the segment's identity and end: truncate_to or retention may have edited the list meanwhile, and
                # a compiled build makes a new tuple object each time an entry is read, so the entry's own id is no key.
                flushed = {(id(segment), end) for segment, end in batch}
                self._rolled = [entry for entry in self._rolled if (id(entry[0]), entry[1]) not in flushed]
                self._wake_checkpoint_waiters()
        finally:
            self._checkpoint_task = None
            self._wake_checkpoint_waiters()

    def _recorded_fsync_failure(self) -> StorageError | None:
        """The failed fsync that stopped this log, read afresh. A method, not the field: in `_checkpoint_rolled` the
        loop's condition narrows `_fsync_failure` to None, and the compiled build checks that type when it reads the
        field there, though the fsync thread has set it since (a TypeError where the log should stop)."""
        return self._fsync_failure

    def _wake_checkpoint_waiters(self) -> None:
        """Let every `checkpointed` caller look at the recovery point again."""
        moved, self._checkpoint_moved = self._checkpoint_moved, None
        if moved is not None:
            moved.set()

    def _flush_and_checkpoint(self, files: list[tuple[int, Path]], recovery_point: int, epoch: int) -> None:
        """Runs in a worker thread: the fsyncs first, so the recovery point never covers bytes that are not on disk
        (a failed one marks the log stopped as it raises: `_fsync_descriptors`)."""
        self._fsync_descriptors(files, sync_directory=True)
        with self._checkpoint_lock:
            if epoch == self._checkpoint_epoch and self._fsync_failure is None:  # no recovery point over a hole
                self._write_recovery_point(recovery_point)

    def _open_txn_indexes(self, paths: list[Path]) -> list[tuple[int, Path]]:
        """Descriptors of the `.txnindex` files `paths` (those an abort was appended to since the last sync round),
        for `_fsync_descriptors`; a file whose segment left the log since is skipped."""
        opened: list[tuple[int, Path]] = []
        for path in paths:
            try:
                opened.append((self._ops.open(path, os.O_WRONLY), path))
            except FileNotFoundError:  # retention, truncation or a cleaning took its segment
                continue
            except OSError as exc:
                for fd, _ in opened:
                    self._ops.close(fd)
                raise storage_error("flush", path, exc) from exc
        return opened

    def _dup_files(self, segments: list[Segment]) -> list[tuple[int, Path]]:
        """Descriptors of our own of every file of `segments` (closed again by `_fsync_descriptors`)."""
        opened: list[tuple[int, Path]] = []
        try:
            for segment in segments:
                opened += segment.open_for_flush()
        except BaseException:
            for fd, _ in opened:
                self._ops.close(fd)
            raise
        return opened

    async def _sync_rounds(self) -> None:
        """Run rounds until no caller of `sync` is left waiting, resolving each one as a round covers its sequence."""
        waiters = self._sync_waiters
        while waiters:
            try:
                await self._run_sync_round()
            except Exception as exc:  # every caller waiting now had the round that failed as its next one
                _end_waits(waiters, exc)
                return
            synced = self._synced_sequence
            left = []
            for target, waiter in waiters:
                if waiter.done():  # cancelled: nobody to tell
                    continue
                if target <= synced:
                    waiter.set_result(None)
                else:
                    left.append((target, waiter))
            waiters[:] = left

    def _sync_rounds_ended(self, task: asyncio.Task[None]) -> None:
        """The rounds task is done: callers still listed end with it when it was cancelled (the loop closing; also
        before its first step, when its body never ran) or failed; a newer task, if any, serves them instead."""
        if self._sync_task is not task:
            return
        self._sync_task = None
        if task.cancelled():
            _end_waits(self._sync_waiters, None)
        elif (error := task.exception()) is not None:
            _end_waits(self._sync_waiters, error)

    async def _run_sync_round(self) -> None:
        """One group-commit round: fsync what was written before it started, in a worker thread."""
        sequence = self._write_sequence
        segments = list(self._unsynced_segments.values())
        txn_indexes = list(self._unsynced_txn_index)
        sync_directory = self._directory_unsynced
        self._unsynced_segments.clear()
        self._unsynced_txn_index.clear()
        self._directory_unsynced = False
        fds: list[tuple[int, Path]] = []
        try:
            for segment in segments:
                fds.append((segment.open_log_for_flush(), segment.log_path))
            fds += self._open_txn_indexes(txn_indexes)
        except StorageError:
            for fd, _ in fds:
                self._ops.close(fd)
            self._unsynced_segments.update((segment.base_offset, segment) for segment in segments)
            self._unsynced_txn_index.update(txn_indexes)
            self._directory_unsynced |= sync_directory
            raise
        began = time.perf_counter()
        try:
            await run_fsync_job(functools.partial(self._fsync_descriptors, fds, sync_directory))
        except StorageError as exc:
            # A failed fsync may have dropped dirty pages for good, and a later fsync can succeed over the hole
            # (Linux clears the error once reported). So the log stops: no write is acknowledged on top of bytes
            # that may be gone. Reopening it (a broker restart) recovers from what is really on disk.
            self._stop_writes(exc)
            raise
        else:
            if self._fsync_failure is not None:  # a checkpoint's fsync failed meanwhile: this success proves nothing
                raise self._fsync_failure
            if self.sync_stats is not None:
                self.sync_stats.record(time.perf_counter() - began, sequence - self._synced_sequence)
            self._synced_sequence = max(self._synced_sequence, sequence)

    def _fsync_descriptors(self, fds: list[tuple[int, Path]], sync_directory: bool) -> None:
        """Runs in a worker thread: fsync each duplicated descriptor (then close it) and the directory.

        A failure is recorded the moment it is seen, before the other files are synced: a round and a checkpoint may
        fsync duplicates of the same open file, and the kernel reports a write-back error through it once, so the
        other side's fsync of it may already have succeeded and must find the failure recorded when it looks."""
        failure: StorageError | None = None
        for fd, path in fds:
            try:
                self._ops.fsync(fd)
            except OSError as exc:
                if failure is None:
                    failure = StorageError(f"fsync {path} failed: {exc.strerror or exc}")
                    self._record_fsync_failure(failure)
            finally:
                self._ops.close(fd)
        if sync_directory and failure is None:
            try:
                self._ops.fsync_directory(self.directory)
            except OSError as exc:
                failure = StorageError(f"fsync {self.directory} failed: {exc.strerror or exc}")
                self._record_fsync_failure(failure)
        if failure is not None:
            raise failure

    def _record_fsync_failure(self, failure: StorageError) -> None:
        """At once, from the thread that saw it: no round or checkpoint may trust a later fsync of this log."""
        with self._checkpoint_lock:
            if self._fsync_failure is None:
                self._fsync_failure = failure
            if self.sync_stats is not None:
                self.sync_stats.count_failure()

    def _stop_writes(self, failure: StorageError) -> None:
        """Refuse every write from now on (reads go on) until the log is reopened, and say so once. The first failure
        recorded stays the one writes are refused with (a round and a checkpoint can fail at the same time)."""
        with self._checkpoint_lock:
            if self._fsync_failure is None:
                self._fsync_failure = failure
            if self._stop_said:
                return
            self._stop_said = True
        first = self._recorded_fsync_failure()
        logger.error("%s refuses writes from now on, until the broker restarts: %s", self.directory, first)

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError(f"the log in {self.directory} is closed")

    def _check_writable(self) -> None:
        self._check_open()
        if self._fsync_failure is not None:
            raise StorageError(
                f"{self.directory} refuses writes since an fsync failed ({self._fsync_failure}); "
                "restart the broker to recover the log from disk"
            )


def _end_waits(waiters: list[tuple[int, asyncio.Future[None]]], error: BaseException | None) -> None:
    """Fail every caller still waiting with `error`, or cancel them (None), and forget them all."""
    for _, waiter in waiters:
        if not waiter.done():
            if error is None:
                waiter.cancel()
            else:
                waiter.set_exception(error)
    waiters.clear()


def _load_txn_index(
    directory: Path, segments: list[Segment], log_end: int, ops: FileOps, *, fsync: bool
) -> TransactionIndex:
    try:
        bases = (segment.base_offset for segment in segments)
        return TransactionIndex.load(directory, bases, log_end, ops, fsync=fsync)
    except OSError as exc:
        raise StorageError(f"open {directory} failed: {exc.strerror or exc}") from exc


def _segment_bases(names: list[str]) -> list[int]:
    """Base offsets of the segments among a directory's file `names`, ascending."""
    stems = (name[: -len(LOG_SUFFIX)] for name in names if name.endswith(LOG_SUFFIX))
    return sorted(int(stem) for stem in stems if len(stem) == _SEGMENT_NAME_DIGITS and stem.isdigit())


def _read_recovery_point(directory: Path) -> int:
    """The checkpointed recovery point; 0 (recover everything) when the file is absent or unreadable."""
    data = read_file(directory / RECOVERY_POINT_CHECKPOINT)
    if data is None:
        return 0
    try:
        return int(data)
    except ValueError:
        logger.warning(
            "%s holds %r, not an offset: recovering every segment", directory / RECOVERY_POINT_CHECKPOINT, data
        )
        return 0
