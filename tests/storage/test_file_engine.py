"""File-engine specifics: Kafka byte-compatibility, reopen, index rebuild, fault injection, group commit."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import struct
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.memory_records import MemoryRecords

from kafkalite.errors import StorageError
from kafkalite.protocol.records import read_batches
from kafkalite.stats import SyncStats
from kafkalite.storage import AbortedTxn, LogConfig, PartitionLog
from kafkalite.storage.file_ops import FileOps
from kafkalite.storage.file_records import FileRecords
from kafkalite.storage.partition_log import REFUSED_APPENDS_REMINDER_MS
from kafkalite.storage.segment import SCAN_CHUNK_BYTES, Segment

from .logkit import FakeClock, RecordingOps, append, make_batch

CONFIG = LogConfig(segment_bytes=20_000, index_interval_bytes=1_000)


def fill(log: PartitionLog, batches: int, *, first_timestamp: int = 10_000) -> list[tuple[int, int]]:
    return [
        append(log, make_batch(1 + n % 4, timestamp=first_timestamp + 10 * n, value_size=50 + 37 * (n % 9), tag=n))
        for n in range(batches)
    ]


def segment_files(directory: Path, suffix: str) -> list[Path]:
    return sorted(directory.glob(f"*{suffix}"))


def kafka_expected_entries(log_bytes: bytes, interval: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Kafka's LogSegment.append rule, replayed independently: (offset index, time index) entries, absolute offsets."""
    offset_entries: list[tuple[int, int]] = []
    time_entries: list[tuple[int, int]] = []
    since_entry, max_ts, max_ts_offset = 0, -1, 0
    for position, header in read_batches(log_bytes):
        if header.max_timestamp > max_ts:
            max_ts, max_ts_offset = header.max_timestamp, header.last_offset
        if since_entry > interval:
            offset_entries.append((header.last_offset, position))
            if max_ts > (time_entries[-1][0] if time_entries else -1):
                time_entries.append((max_ts, max_ts_offset))
            since_entry = 0
        since_entry += header.size
    if max_ts > (time_entries[-1][0] if time_entries else -1):  # the entry written when the segment goes inactive
        time_entries.append((max_ts, max_ts_offset))
    return offset_entries, time_entries


def test_segments_are_kafka_segments(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "orders-0", CONFIG)
    appended = fill(log, 300)
    log.close()
    logs = segment_files(tmp_path / "orders-0", ".log")
    assert len(logs) > 3
    next_offset = 0
    for log_file in logs:
        base = int(log_file.stem)
        assert log_file.stem == f"{base:020d}"
        assert base == next_offset
        data = log_file.read_bytes()
        records = MemoryRecords(data)
        while records.has_next():
            batch = records.next_batch()
            assert isinstance(batch, DefaultRecordBatch)
            assert batch.validate_crc()
            assert batch.base_offset == next_offset
            assert len(list(batch)) == batch.last_offset_delta + 1
            next_offset = batch.base_offset + batch.last_offset_delta + 1
        assert records.valid_bytes() == len(data)
        offset_entries, time_entries = kafka_expected_entries(data, CONFIG.index_interval_bytes)
        index = log_file.with_suffix(".index").read_bytes()
        assert [(base + r, p) for r, p in struct.iter_unpack(">ii", index)] == offset_entries
        time_index = log_file.with_suffix(".timeindex").read_bytes()
        assert [(t, base + r) for t, r in struct.iter_unpack(">qi", time_index)] == time_entries
    assert next_offset == appended[-1][1] + 1


def test_reopen_sees_everything(tmp_path: Path) -> None:
    clock = FakeClock()
    log = PartitionLog.open(tmp_path / "t-0", CONFIG, clock=clock)
    appended = fill(log, 200)
    log.delete_records_before(7)
    before = (log.read(7, 1 << 20), log.size_bytes, log.offset_for_timestamp(10_500), log.segment_count)
    log.close()
    log = PartitionLog.open(tmp_path / "t-0", CONFIG, clock=clock)
    assert (log.log_start_offset, log.log_end_offset) == (7, appended[-1][1] + 1)
    assert (log.read(7, 1 << 20), log.size_bytes, log.offset_for_timestamp(10_500), log.segment_count) == before
    assert append(log, make_batch(2)) == (appended[-1][1] + 1, appended[-1][1] + 2)
    log.close()


def test_empty_directory_with_a_checkpoint_starts_at_it(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = PartitionLog.open(directory, CONFIG)
    fill(log, 5)
    log.delete_records_before(log.log_end_offset)
    end = log.log_end_offset
    log.truncate_to(0)
    log.close()
    for segment in directory.glob("0*"):
        segment.unlink()
    log = PartitionLog.open(directory, CONFIG)
    assert (log.log_start_offset, log.log_end_offset) == (0, 0)  # truncate_to(0) rewound the checkpoint
    log.close()
    for segment in directory.glob("0*"):
        segment.unlink()
    (directory / "log-start-offset").write_text(f"{end}\n")
    log = PartitionLog.open(directory, CONFIG)
    assert (log.log_start_offset, log.log_end_offset) == (end, end)
    assert append(log, make_batch(1)) == (end, end)
    log.close()
    assert (directory / f"{end:020d}.log").exists()


@pytest.mark.parametrize("damage", ["missing", "garbage", "zeros", "past_end"])
def test_missing_or_insane_indexes_are_rebuilt_identically(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "t-0"
    log = PartitionLog.open(directory, CONFIG)
    fill(log, 300)
    log.close()
    originals = {
        p: p.read_bytes() for p in [*segment_files(directory, ".index"), *segment_files(directory, ".timeindex")]
    }
    for path in originals:
        if damage == "missing":
            path.unlink()
        elif damage == "garbage":
            path.write_bytes(b"\x7f" * 13)
        elif damage == "zeros":
            path.write_bytes(originals[path] + b"\x00" * 24)
        else:
            path.write_bytes(
                originals[path] + (struct.pack(">ii", 1 << 30, 1 << 30) if path.suffix == ".index" else b"")
            )
    caplog.set_level(logging.WARNING, logger="kafkalite.storage")
    log = PartitionLog.open(directory, CONFIG)
    expected = fill(log, 0)
    log.close()
    assert expected == []
    rebuilt = {p: p.read_bytes() for p in originals}
    assert rebuilt == originals
    assert "rebuilding the indexes" in caplog.text


class FailingOps(FileOps):
    """Fails the next `pwrite` (optionally after writing part of it) or the next `fsync`, once."""

    def __init__(self) -> None:
        self.fail_next_write = False
        self.partial_bytes = 0
        self.fail_next_fsync = False
        self.fsyncs = 0
        self.fsync_gate: threading.Event | None = None
        self.fsync_permits: threading.Semaphore | None = None  # one release lets one fsync through
        self.fsync_entered = threading.Semaphore(0)  # released as each fsync starts

    def pwrite(self, fd: int, data: bytes | bytearray | memoryview, position: int) -> None:
        if self.fail_next_write:
            self.fail_next_write = False
            super().pwrite(fd, memoryview(data)[: self.partial_bytes], position)
            raise OSError(28, "No space left on device")
        super().pwrite(fd, data, position)

    def pwritev(self, fd: int, parts: Sequence[bytes | bytearray | memoryview], position: int) -> None:
        self.pwrite(fd, b"".join(parts), position)  # one write, which the failures above apply to

    def fsync(self, fd: int) -> None:
        self.fsync_entered.release()
        if self.fsync_gate is not None:
            self.fsync_gate.wait(5)
        if self.fsync_permits is not None and not self.fsync_permits.acquire(timeout=5):
            raise AssertionError("no fsync permit within 5 s")
        self.fsyncs += 1
        if self.fail_next_fsync:
            self.fail_next_fsync = False
            raise OSError(5, "Input/output error")
        super().fsync(fd)


@pytest.mark.parametrize("partial_bytes", [0, 30, 200])
def test_failed_write_leaves_the_segment_valid(tmp_path: Path, partial_bytes: int) -> None:
    ops = FailingOps()
    log = PartitionLog.open(tmp_path / "t-0", CONFIG, file_ops=ops)
    appended = fill(log, 50)
    size = log.size_bytes
    ops.fail_next_write, ops.partial_bytes = True, partial_bytes
    with pytest.raises(StorageError, match="No space left on device"):
        append(log, make_batch(3, value_size=300))
    assert (log.log_end_offset, log.size_bytes) == (appended[-1][1] + 1, size)
    assert sum(p.stat().st_size for p in (tmp_path / "t-0").glob("*.log")) == size
    nxt = append(log, make_batch(2))
    assert nxt == (appended[-1][1] + 1, appended[-1][1] + 2)
    log.close()
    log = PartitionLog.open(tmp_path / "t-0", CONFIG)
    assert log.log_end_offset == nxt[1] + 1
    assert [h.base_offset for _, h in read_batches(log.read(appended[-1][0], 1 << 20))] == [appended[-1][0], nxt[0]]
    log.close()


def test_failed_index_write_leaves_log_and_index_valid(tmp_path: Path) -> None:
    ops = FailingOps()
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(index_interval_bytes=0), file_ops=ops)
    append(log, make_batch(1))
    ops.fail_next_write, ops.partial_bytes = True, 1 << 20  # the log write goes through, the index entry fails
    original = log.size_bytes
    with pytest.raises(StorageError):
        append(log, make_batch(1))
    assert log.size_bytes == original
    assert (tmp_path / "t-0" / f"{0:020d}.log").stat().st_size == original
    assert append(log, make_batch(1)) == (1, 1)
    log.close()


async def test_failed_fsync_reaches_the_caller_and_stops_writes_until_reopened(tmp_path: Path) -> None:
    """After a failed fsync the kernel may have dropped dirty pages and a retried fsync can succeed over the hole, so
    the log acknowledges nothing more (Kafka takes the log directory offline); reopening recovers from disk."""
    ops = FailingOps()
    log = PartitionLog.open(tmp_path / "t-0", CONFIG, file_ops=ops)
    fill(log, 3)
    end = log.log_end_offset
    ops.fail_next_fsync = True
    with pytest.raises(StorageError, match="Input/output error"):
        await log.sync()
    with pytest.raises(StorageError, match="refuses writes since an fsync failed"):
        await log.sync()
    with pytest.raises(StorageError, match="refuses writes since an fsync failed"):
        append(log, make_batch(1))
    assert log.read(0, 1 << 20)  # reads go on
    log.close()
    # No clean-shutdown marker and no recovery point at the end: the open below checks every batch written.
    assert not (tmp_path / "t-0" / "clean-shutdown").exists()
    assert not (tmp_path / "t-0" / "recovery-point").exists()
    reopened = PartitionLog.open(tmp_path / "t-0", CONFIG, file_ops=ops)
    assert reopened.log_end_offset == end
    assert append(reopened, make_batch(1)) == (end, end)
    await reopened.sync()
    reopened.close()


def storage_records(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "kafkalite.storage"]


def test_refused_appends_are_logged_once_a_streak_with_a_reminder_and_the_recovery(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A full disk fails every append of a partition: the operator reads one ERROR when the streak starts, a
    reminder with the count every `REFUSED_APPENDS_REMINDER_MS`, and a WARNING when writes succeed again, not one
    line per refused request."""
    clock = FakeClock()
    ops = FailingOps()
    directory = tmp_path / "t-0"
    log = PartitionLog.open(directory, CONFIG, file_ops=ops, clock=clock)
    fill(log, 3)
    caplog.set_level(logging.INFO, logger="kafkalite.storage")
    for _ in range(5):
        ops.fail_next_write = True
        with pytest.raises(StorageError, match="No space left on device"):
            append(log, make_batch(1))
    assert storage_records(caplog) == [
        (
            logging.ERROR,
            f"appends to {directory} fail, and are refused with KAFKA_STORAGE_ERROR until one succeeds: "
            f"append to {directory / '00000000000000000000.log'} failed: No space left on device",
        )
    ]
    clock.now_ms += REFUSED_APPENDS_REMINDER_MS - 1
    ops.fail_next_write = True
    with pytest.raises(StorageError):
        append(log, make_batch(1))
    assert len(storage_records(caplog)) == 1  # not yet a minute since the first line
    caplog.clear()
    clock.now_ms += 1
    ops.fail_next_write = True
    with pytest.raises(StorageError):
        append(log, make_batch(1))
    [(level, reminder)] = storage_records(caplog)
    assert level == logging.ERROR
    assert reminder.startswith(f"appends to {directory} still fail: 7 refused in 60 s, the last: append to ")
    caplog.clear()
    append(log, make_batch(1))
    append(log, make_batch(1))
    assert storage_records(caplog) == [(logging.WARNING, f"appends to {directory} succeed again, after 7 refused")]
    caplog.clear()
    ops.fail_next_write = True
    with pytest.raises(StorageError):
        append(log, make_batch(1))
    append(log, make_batch(1))
    assert [level for level, _ in storage_records(caplog)] == [logging.ERROR, logging.WARNING]  # a new streak
    log.close()


async def test_a_failed_fsync_is_logged_when_it_stops_the_log(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ops = FailingOps()
    directory = tmp_path / "t-0"
    log = PartitionLog.open(directory, CONFIG, file_ops=ops)
    fill(log, 3)
    caplog.set_level(logging.INFO, logger="kafkalite.storage")
    ops.fail_next_fsync = True
    with pytest.raises(StorageError):
        await log.sync()
    [(level, message)] = storage_records(caplog)
    assert level == logging.ERROR
    assert message.startswith(f"{directory} refuses writes from now on, until the broker restarts: fsync ")
    assert message.endswith("Input/output error")
    log.close()


async def test_an_abort_entry_is_fsynced_by_the_next_sync_round(tmp_path: Path) -> None:
    """The start-up replay re-indexes only the log's tail: on a log that fsyncs, the `.txnindex` an abort was
    appended to is fsynced with the marker's round (and the directory, the first time the file appears)."""
    ops = RecordingOps()
    directory = tmp_path / "t-0"
    log = PartitionLog.open(directory, CONFIG, file_ops=ops)
    fill(log, 3)
    await log.sync()
    txn_index = "00000000000000000000.txnindex"
    for round_number in range(2):
        ops.calls.clear()
        append(log, make_batch(1))
        log.append_aborted_transaction(AbortedTxn(7, 0, log.log_end_offset - 1, log.log_end_offset))
        await log.sync()
        assert ("fsync", txn_index) in ops.calls
        assert (("fsync_directory", "t-0") in ops.calls) == (round_number == 0)  # the file was new
    log.close()


async def test_group_commit_shares_fsyncs(tmp_path: Path) -> None:
    ops = FailingOps()
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(), file_ops=ops)
    await log.sync()
    ops.fsyncs = 0

    async def produce(n: int) -> int:
        _base, last = append(log, make_batch(1, tag=n))
        await log.sync()
        return last

    assert sorted(await asyncio.gather(*(produce(n) for n in range(64)))) == list(range(64))
    assert ops.fsyncs == 1  # every writer appended before the one round started

    ops.fsyncs = 0
    ops.fsync_gate = threading.Event()
    first_wave = asyncio.gather(*(produce(n) for n in range(10)))
    await asyncio.sleep(0.05)  # the first round is now blocked inside fsync
    second_wave = asyncio.gather(*(produce(n) for n in range(10)))
    await asyncio.sleep(0.05)
    ops.fsync_gate.set()
    await first_wave
    await second_wave
    assert ops.fsyncs == 2  # writers arriving during a round share the next one
    await log.sync()
    assert ops.fsyncs == 2  # nothing new to sync
    log.close()


async def _log_with_gated_fsyncs(tmp_path: Path) -> tuple[PartitionLog, FailingOps]:
    """A synced log whose next fsyncs each wait for a release of `ops.fsync_permits` (`_fsync_started` sees one
    begin)."""
    ops = FailingOps()
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(), file_ops=ops)
    await log.sync()
    ops.fsyncs, ops.fsync_permits, ops.fsync_entered = 0, threading.Semaphore(0), threading.Semaphore(0)
    return log, ops


def _close_ungated(log: PartitionLog, ops: FailingOps) -> None:
    ops.fsync_permits = None  # closing fsyncs too
    log.close()


async def _fsync_started(ops: FailingOps) -> None:
    assert await asyncio.to_thread(ops.fsync_entered.acquire, True, 5), "no fsync started within 5 s"


async def test_each_round_returns_the_callers_it_covers_and_the_next_starts_at_once(tmp_path: Path) -> None:
    """Callers that appended before a round began return when it ends; those that appended during it wait for the
    next, which starts as soon as the first ends, without a caller of its own having to start it."""
    log, ops = await _log_with_gated_fsyncs(tmp_path)

    async def produce(n: int) -> int:
        _base, last = append(log, make_batch(1, tag=n))
        await log.sync()
        return last

    first = asyncio.gather(*(produce(n) for n in range(5)))
    await _fsync_started(ops)  # round 1 covers the first five
    second = asyncio.gather(*(produce(n) for n in range(5, 10)))
    await asyncio.sleep(0.01)
    ops.fsync_permits.release()
    assert await asyncio.wait_for(first, 5) == [0, 1, 2, 3, 4]
    await _fsync_started(ops)  # round 2 began on its own
    assert not second.done()
    ops.fsync_permits.release()
    assert await asyncio.wait_for(second, 5) == [5, 6, 7, 8, 9]
    assert ops.fsyncs == 2
    _close_ungated(log, ops)


async def test_a_cancelled_caller_leaves_the_others_waiting_for_their_round(tmp_path: Path) -> None:
    log, ops = await _log_with_gated_fsyncs(tmp_path)
    append(log, make_batch(1))
    waiting = [asyncio.create_task(log.sync()) for _ in range(3)]
    await _fsync_started(ops)
    waiting[1].cancel()
    ops.fsync_permits.release()
    done = await asyncio.gather(*waiting, return_exceptions=True)
    assert [None if r is None else type(r) for r in done] == [None, asyncio.CancelledError, None]
    ops.fsync_permits = None
    append(log, make_batch(1))
    await asyncio.wait_for(log.sync(), 5)
    log.close()


async def test_callers_all_cancelled_mid_round_start_no_further_round(tmp_path: Path) -> None:
    """The round under way ends as usual; with nobody left waiting, no round follows it, and the next caller gets a
    round of its own."""
    log, ops = await _log_with_gated_fsyncs(tmp_path)
    append(log, make_batch(1))
    first = [asyncio.create_task(log.sync()) for _ in range(2)]
    await _fsync_started(ops)
    append(log, make_batch(1))  # not covered by the round under way
    later = asyncio.create_task(log.sync())
    await asyncio.sleep(0.01)
    for task in (*first, later):
        task.cancel()
    ops.fsync_permits.release()
    await asyncio.gather(*first, later, return_exceptions=True)
    assert not await asyncio.to_thread(ops.fsync_entered.acquire, True, 0.1)  # no round for the cancelled caller
    assert ops.fsyncs == 1
    ops.fsync_permits.release()
    await asyncio.wait_for(log.sync(), 5)  # the append nobody waited for is synced by the next caller's round
    assert ops.fsyncs == 2
    _close_ungated(log, ops)


async def test_callers_of_a_rounds_task_cancelled_before_it_ran_are_cancelled_and_the_next_sync_works(
    tmp_path: Path,
) -> None:
    """A task cancelled before its first step never runs its body: its end (a done callback) still ends its callers'
    waits instead of leaving them, and every later caller, waiting for ever."""
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(), file_ops=FailingOps())
    await log.sync()
    append(log, make_batch(1))
    caller = asyncio.create_task(log.sync())
    await asyncio.sleep(0)  # the caller listed its wait and made the rounds task, which has not run yet
    rounds = log._sync_task
    assert rounds is not None
    rounds.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(caller, 5)
    append(log, make_batch(1))
    await asyncio.wait_for(log.sync(), 5)
    log.close()


def test_a_sync_left_pending_by_a_closed_loop_is_taken_over_by_the_next_loop(tmp_path: Path) -> None:
    """A server run in a thread closes its loop with whatever was pending; the log's next caller, on another loop,
    starts rounds of its own rather than waiting on a task that will never run again."""
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(), file_ops=FailingOps())
    first = asyncio.new_event_loop()
    append(log, make_batch(1))
    abandoned = first.create_task(log.sync())
    first.run_until_complete(asyncio.sleep(0))  # the caller waits and the rounds task is made, on `first`
    first.close()
    assert not abandoned.done()
    append(log, make_batch(1))
    asyncio.run(asyncio.wait_for(log.sync(), 5))
    log.close()


async def test_a_failed_round_fails_every_caller_still_waiting(tmp_path: Path) -> None:
    """Those covered by the round and those that appended while it ran: the log stops for writes either way."""
    log, ops = await _log_with_gated_fsyncs(tmp_path)
    ops.fail_next_fsync = True
    append(log, make_batch(1))
    covered = asyncio.create_task(log.sync())
    await _fsync_started(ops)
    append(log, make_batch(1))
    later = asyncio.create_task(log.sync())
    await asyncio.sleep(0.01)
    ops.fsync_permits.release()
    for waiter in (covered, later):
        with pytest.raises(StorageError, match="Input/output error"):
            await asyncio.wait_for(waiter, 5)
    with pytest.raises(StorageError, match="refuses writes since an fsync failed"):
        await log.sync()
    _close_ungated(log, ops)


async def test_fsync_off_never_calls_fsync(tmp_path: Path) -> None:
    ops = FailingOps()
    log = PartitionLog.open(tmp_path / "t-0", CONFIG, file_ops=ops, fsync=False)
    fill(log, 100)
    await log.sync()
    log.close()
    assert ops.fsyncs == 0


def test_storage_error_names_the_path_on_open(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(StorageError, match="file"):
        PartitionLog.open(tmp_path / "file" / "t-0", CONFIG)


def test_recovery_cuts_a_torn_tail_and_says_so(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    directory = tmp_path / "t-0"
    log = PartitionLog.open(directory, CONFIG)
    appended = fill(log, 10)
    size = log.size_bytes
    log.close()
    torn = bytes(make_batch(3))[:-5]
    with (directory / f"{0:020d}.log").open("ab") as segment:
        segment.write(torn)
    caplog.set_level(logging.WARNING, logger="kafkalite.storage")
    log = PartitionLog.open(directory, CONFIG)
    assert (log.log_end_offset, log.size_bytes) == (appended[-1][1] + 1, size)
    assert f"{0:020d}.log at position {size}: {len(torn)} bytes dropped (truncated batch" in caplog.text
    log.close()


def test_roll_by_time_survives_reopen(tmp_path: Path) -> None:
    config = LogConfig(segment_ms=100)
    log = PartitionLog.open(tmp_path / "t-0", config)
    append(log, make_batch(1, timestamp=1_000))
    log.close()
    log = PartitionLog.open(tmp_path / "t-0", config)
    append(log, make_batch(1, timestamp=1_050))
    assert log.segment_count == 1
    append(log, make_batch(1, timestamp=1_101))  # measured from the first batch, read back on reopen
    assert log.segment_count == 2
    log.close()


def test_close_leaves_marker_and_recovery_point_open_removes_the_marker(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = PartitionLog.open(directory, CONFIG)
    fill(log, 100)
    end = log.log_end_offset
    log.close()
    assert (directory / "clean-shutdown").exists()
    assert (directory / "recovery-point").read_text() == f"{end}\n"
    log = PartitionLog.open(directory, CONFIG)
    assert not (directory / "clean-shutdown").exists()  # a crash from here on must not look clean
    log.close()


async def test_a_roll_flushes_the_rolled_segment_then_moves_the_recovery_point(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    ops = FailingOps()
    log = PartitionLog.open(directory, CONFIG, file_ops=ops)
    fsyncs_after_open = ops.fsyncs
    while log.segment_count == 1:
        fill(log, 1)
    rolled_at = log.log_end_offset - 1  # the batch that rolled is the only one in the new segment
    assert not (directory / "recovery-point").exists()  # a new log's recovery point is 0 without writing it
    for _ in range(200):
        if (directory / "recovery-point").exists() and (directory / "recovery-point").read_text() == f"{rolled_at}\n":
            break
        await asyncio.sleep(0.01)
    assert (directory / "recovery-point").read_text() == f"{rolled_at}\n"
    assert ops.fsyncs - fsyncs_after_open >= 4  # .log, .index, .timeindex of the rolled segment, then the temp file
    log.close()


async def test_checkpointed_waits_for_the_flush_of_the_rolled_segments_that_a_cleaning_needs(tmp_path: Path) -> None:
    """A cleaning rewrites only segments below the recovery point, which a worker thread moves after flushing each
    rolled segment: `checkpointed` waits for that flush, so a cleaning asked for right after a write reaches every
    closed segment."""
    ops = FailingOps()
    ops.fsync_gate = threading.Event()  # the roll's flush waits here
    now_ms = 1_000_000  # after every record `fill` writes
    log = PartitionLog.open(tmp_path / "t-0", replace(CONFIG, compact=True), file_ops=ops)
    try:
        while log.segment_count < 3:
            fill(log, 1)
        assert log.cleaning_stats(now_ms) is None  # nothing is flushed yet, so nothing may be cleaned
        waiting = asyncio.create_task(log.checkpointed())
        await asyncio.sleep(0.05)
        assert not waiting.done()
        ops.fsync_gate.set()
        await asyncio.wait_for(waiting, 5)
        stats = log.cleaning_stats(now_ms)
        assert stats is not None
        assert stats.cleanable_segments == 2
    finally:
        ops.fsync_gate.set()
        log.close()


async def test_a_segment_rolled_while_a_checkpoint_runs_is_flushed_by_it_before_the_recovery_point_passes_it(
    tmp_path: Path,
) -> None:
    """The checkpoint task takes the segments rolled so far, and those that roll while it flushes them stay queued
    for its next pass (the compiled build once dropped them, moving the recovery point past unflushed files)."""
    ops = FailingOps()
    ops.fsync_gate = threading.Event()
    directory = tmp_path / "t-0"
    log = PartitionLog.open(directory, CONFIG, file_ops=ops)
    try:
        while log.segment_count < 2:
            fill(log, 1)
        await _fsync_started(ops)  # the first checkpoint is flushing the first segment
        while log.segment_count < 3:
            fill(log, 1)  # the second rolls meanwhile
        ops.fsync_gate.set()
        await asyncio.wait_for(log.checkpointed(), 5)
        active_base = max(int(path.stem) for path in directory.glob("*.log"))
        assert (directory / "recovery-point").read_text() == f"{active_base}\n"
    finally:
        ops.fsync_gate.set()
        log.close()


class FirstFlushHeldOps(FileOps):
    """Holds the fsync of the first segment's `.index` (a roll checkpoint's) until `release` is set (then fails it
    when `held_fails`), and fails the fsync of the file named `failing` once."""

    def __init__(self, *, held_fails: bool = False) -> None:
        self.release = threading.Event()
        self.held = threading.Event()
        self.held_fails = held_fails
        self.failing: str | None = None

    def fsync(self, fd: int) -> None:
        name = os.readlink(f"/proc/self/fd/{fd}").rsplit("/", 1)[-1]
        if name == "00000000000000000000.index":
            self.held.set()
            self.release.wait(5)
            if self.held_fails:
                raise OSError(5, "Input/output error")
        if name == self.failing:
            self.failing = None
            raise OSError(5, "Input/output error")
        super().fsync(fd)


async def test_a_checkpoint_under_way_writes_no_recovery_point_once_a_sync_round_failed(tmp_path: Path) -> None:
    """A sync round's fsync fails while a checkpoint flushes an earlier segment, with another segment queued behind
    it: the checkpoint must not go on to fsync that one (which could succeed over the hole) and move the recovery
    point past it."""
    ops = FirstFlushHeldOps()
    directory = tmp_path / "t-0"
    log = PartitionLog.open(directory, CONFIG, file_ops=ops)
    try:
        while log.segment_count < 2:
            fill(log, 1)
        assert await asyncio.to_thread(ops.held.wait, 5)  # the checkpoint of the first segment is under way
        while log.segment_count < 3:
            fill(log, 1)
        ops.failing = sorted(path.name for path in directory.glob("*.log"))[1]  # the segment queued behind it
        with pytest.raises(StorageError, match="Input/output error"):
            await log.sync()
        ops.release.set()
        for _ in range(100):  # the checkpoint goes on in its thread: give it a second to write what it would
            await asyncio.sleep(0.01)
            if (directory / "recovery-point").exists():
                break
        assert not (directory / "recovery-point").exists()
    finally:
        ops.release.set()
        log.close()
    assert not (directory / "recovery-point").exists()
    assert not (directory / "clean-shutdown").exists()


async def test_a_round_and_a_checkpoint_failing_together_count_twice_and_the_log_says_once_why_it_stopped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A sync round's fsync fails while a roll checkpoint's fsync is under way, and that one fails too: both count
    in `/metrics`, writes stay refused with the first failure, and the ERROR line comes once (the checkpoint's
    failure was once taken for a failed recovery-point write, and not counted)."""
    caplog.set_level(logging.ERROR, logger="kafkalite.storage")
    ops = FirstFlushHeldOps(held_fails=True)
    directory = tmp_path / "t-0"
    log = PartitionLog.open(directory, CONFIG, file_ops=ops)
    log.sync_stats = SyncStats()
    try:
        while log.segment_count < 2:
            fill(log, 1)
        assert await asyncio.to_thread(ops.held.wait, 5)  # the checkpoint of the first segment is under way
        active = max(path.name for path in directory.glob("*.log"))
        ops.failing = active
        with pytest.raises(StorageError, match="Input/output error"):
            await log.sync()
        checkpoint = log._checkpoint_task  # `checkpointed` returns at once for a stopped log: wait for the task
        assert checkpoint is not None
        ops.release.set()
        await asyncio.wait_for(asyncio.shield(checkpoint), 5)
        assert log.sync_stats.failures == 2
        with pytest.raises(StorageError, match=active):  # the round's failure, the first
            append(log, make_batch(1))
        assert caplog.text.count("refuses writes from now on") == 1
        assert "recovery point stays" not in caplog.text
    finally:
        ops.release.set()
        log.close()


async def test_a_checkpoint_whose_fsync_fails_stops_the_log_and_a_stopped_log_flushes_nothing_more(
    tmp_path: Path,
) -> None:
    """The roll's flush fails as a sync round can: the pages may be gone, so the log stops for writes (a later fsync
    could succeed over the hole), `checkpointed` returns rather than waiting for a recovery point that stays, and
    neither it nor `close` fsyncs again or writes a recovery point past the hole."""
    ops = FailingOps()
    directory = tmp_path / "t-0"
    log = PartitionLog.open(directory, replace(CONFIG, compact=True), file_ops=ops)
    fill(log, 1)
    await log.sync()
    ops.fail_next_fsync = True
    while log.segment_count < 2:
        fill(log, 1)
    await asyncio.wait_for(log.checkpointed(), 5)
    with pytest.raises(StorageError, match="refuses writes since an fsync failed"):
        append(log, make_batch(1))
    assert log.cleaning_stats(1_000_000) is None  # the rolled segment never became cleanable
    fsyncs = ops.fsyncs
    await asyncio.wait_for(log.checkpointed(), 5)
    log.close()
    assert ops.fsyncs == fsyncs
    assert not (directory / "recovery-point").exists()
    assert not (directory / "clean-shutdown").exists()


async def test_a_failed_checkpoint_fsync_is_counted_with_the_failed_sync_rounds(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`/metrics` counts every fsync failure that stopped a log (kafkalite_log_flush_failures), a roll's too, and the
    log says it stopped (the compiled build once raised a TypeError in the checkpoint task instead)."""
    caplog.set_level(logging.ERROR, logger="kafkalite.storage")
    ops = FailingOps()
    log = PartitionLog.open(tmp_path / "t-0", CONFIG, file_ops=ops)
    log.sync_stats = SyncStats()
    try:
        ops.fail_next_fsync = True
        while log.segment_count < 2:
            fill(log, 1)
        await asyncio.wait_for(log.checkpointed(), 5)
        assert log.sync_stats.failures == 1
        assert log.sync_stats.rounds == 0
        # The fsync thread records the failure as it sees it, so `checkpointed` may return before the checkpoint task
        # has stopped the log and said so.
        task = log._checkpoint_task
        if task is not None:
            await asyncio.wait_for(asyncio.shield(task), 5)
        assert "refuses writes from now on" in caplog.text
    finally:
        log.close()


class FailsAnotherFsyncDuringCloseOps(FileOps):
    """While `close` fsyncs the directory, another thread's fsync of the log fails (as a sync round's or a roll
    checkpoint's worker thread can, still running when the broker closes the log)."""

    def __init__(self) -> None:
        self.log: PartitionLog | None = None
        self.failing_fd: int | None = None
        self.other_failed = False

    def fsync(self, fd: int) -> None:
        if fd == self.failing_fd:
            raise OSError(5, "Input/output error")
        super().fsync(fd)

    def fsync_directory(self, directory: Path) -> None:
        log = self.log
        if log is not None and not self.other_failed:
            self.other_failed = True
            self.failing_fd = os.open(log.directory, os.O_RDONLY)
            path = log.directory

            def other_thread() -> None:
                with contextlib.suppress(StorageError):
                    log._fsync_descriptors([(self.failing_fd or -1, path)], sync_directory=False)

            worker = threading.Thread(target=other_thread)
            worker.start()
            worker.join()
            self.failing_fd = None  # closed by the other thread: the number may be reused
        super().fsync_directory(directory)


def test_close_writes_no_marker_when_another_fsync_of_the_log_fails_while_it_flushes(tmp_path: Path) -> None:
    """`close` checks for a failed fsync again once its own flush is done: one failing in another thread meanwhile
    may have dropped pages that close's fsync then reported as written."""
    ops = FailsAnotherFsyncDuringCloseOps()
    directory = tmp_path / "t-0"
    log = PartitionLog.open(directory, CONFIG, file_ops=ops)
    fill(log, 3)
    ops.log = log
    log.close()
    assert ops.other_failed  # the other thread's fsync ran, and failed, during close
    assert not (directory / "clean-shutdown").exists()
    assert not (directory / "recovery-point").exists()


def test_unclean_open_checks_every_batch_at_or_above_the_recovery_point(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A hole before the last index entry of an unflushed segment is found: the index is no proof after power loss."""
    directory = tmp_path / "t-0"
    log = PartitionLog.open(directory, CONFIG)
    fill(log, 300)
    log.close()
    logs = segment_files(directory, ".log")
    damaged = logs[-2]
    index = damaged.with_suffix(".index").read_bytes()
    assert len(index) >= 16
    hole_at = struct.unpack(">ii", index[-8:])[1] - 10  # inside the batch before the last index entry
    data = bytearray(damaged.read_bytes())
    data[hole_at : hole_at + 5] = bytes(5)
    damaged.write_bytes(data)

    (directory / "recovery-point").write_text(f"{int(damaged.stem)}\n")  # this segment and the next never flushed
    (directory / "clean-shutdown").unlink()
    caplog.set_level(logging.WARNING, logger="kafkalite.storage")
    log = PartitionLog.open(directory, CONFIG)
    kept = read_batches(damaged.read_bytes())
    assert log.log_end_offset == kept[-1][1].last_offset + 1
    assert kept[-1][0] + kept[-1][1].size <= hole_at
    assert log.segment_count == len(logs) - 1  # the segment after the cut is gone
    assert "recovery cut" in caplog.text
    assert "deleting every later segment" in caplog.text
    assert (directory / "recovery-point").read_text() == f"{log.log_end_offset}\n"
    log.close()


def test_pwritev_finishes_a_short_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A vectored write the kernel cut short (a full disk can) is completed, so the parts land back to back."""
    real_pwritev = os.pwritev

    def first_part_and_three_bytes(fd: int, parts: Sequence[bytes | memoryview], position: int) -> int:
        return real_pwritev(fd, [parts[0], bytes(parts[1])[:3]], position)

    monkeypatch.setattr(os, "pwritev", first_part_and_three_bytes)
    fd = os.open(tmp_path / "file", os.O_RDWR | os.O_CREAT)
    try:
        FileOps().pwritev(fd, (b"12345678", memoryview(b"abcdefghij")), 4)
        assert os.pread(fd, 100, 0) == b"\0\0\0\x0012345678abcdefghij"
    finally:
        os.close(fd)


class CountingOps(FileOps):
    """Counts `pread` calls: how many system calls a read makes."""

    def __init__(self) -> None:
        self.preads = 0

    def pread(self, fd: int, size: int, position: int) -> bytes:
        self.preads += 1
        return super().pread(fd, size, position)


def file_records_bytes(records: FileRecords | bytes) -> bytes:
    if isinstance(records, bytes):
        return records
    try:
        return os.pread(records.fd, records.size, records.position)
    finally:
        records.close()


@pytest.mark.parametrize("interval", [1, 1_000, 1 << 20])  # an entry per batch, the default's scale, none after 0
def test_reads_find_the_batch_and_stop_at_a_batch_end_whatever_the_scan_reads(tmp_path: Path, interval: int) -> None:
    """The scan from an index entry reads `SCAN_CHUNK_BYTES` at a time: batches straddling its chunks, scans longer
    than one chunk and answers larger than it are read exactly as the file holds them."""
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(index_interval_bytes=interval), file_ops=CountingOps())
    appended = fill(log, 700)
    whole = (tmp_path / "t-0" / f"{0:020d}.log").read_bytes()
    assert len(whole) > 5 * SCAN_CHUNK_BYTES
    batches = read_batches(whole)
    starts = {header.base_offset: (position, header) for position, header in batches}
    for base, last in appended[::7] + appended[-3:]:
        for offset in (base, last):
            position, header = starts[base]
            for max_bytes in (1, 3 * header.size, 40_000, 1 << 20):
                bound = position + max(max_bytes, header.size)
                end = max(p + h.size for p, h in batches if position <= p and p + h.size <= bound)
                expected = whole[position:end]
                assert log.read(offset, max_bytes) == expected, (offset, max_bytes)
                assert file_records_bytes(log.read_file_records(offset, max_bytes)) == expected, (offset, max_bytes)
    log.close()


def test_a_read_near_the_log_end_is_one_system_call(tmp_path: Path) -> None:
    """A consumer that keeps up reads the last few batches: the segment remembers where they are, so one `pread`
    finds the batch and holds the answer, however far back the last index entry is (256 KiB here: a scan from it
    would read 16 KiB chunks)."""
    ops = CountingOps()
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(index_interval_bytes=1 << 18), file_ops=ops)
    appended = [append(log, make_batch(1, value_size=100, tag=n)) for n in range(2_000)]
    for base, _ in appended[-20:]:
        ops.preads = 0
        answer = log.read(base, 1 << 20)
        assert read_batches(answer)[0][1].base_offset == base
        assert ops.preads == 1
        ops.preads = 0
        assert file_records_bytes(log.read_file_records(base, 1 << 20)) == answer
        assert ops.preads == 1
    log.close()


def test_reads_after_a_truncation_find_the_batches_appended_since(tmp_path: Path) -> None:
    """The positions a segment remembers for its last batches are dropped with the batches a truncation cuts: the
    same offsets, appended again with other sizes, are read from where they are now."""
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(), file_ops=CountingOps())
    appended = [append(log, make_batch(2, value_size=40, tag=n)) for n in range(60)]
    cut_at = appended[5][0]
    log.truncate_to(cut_at)
    again = [append(log, make_batch(2, value_size=300 + n, tag=100 + n)) for n in range(10)]
    assert again[0][0] == cut_at
    for base, last in appended[:5] + again:
        for offset in (base, last):
            (_, header), *_ = read_batches(log.read(offset, 1))
            assert (header.base_offset, header.last_offset) == (base, last)
            assert len(log.read(offset, 1)) == header.size
    log.close()


@pytest.mark.parametrize("active", [True, False], ids=["remembered", "scanned"])
def test_a_segment_with_gaps_and_large_batches_finds_what_a_header_walk_finds(tmp_path: Path, active: bool) -> None:
    """As the cleaner writes them (offsets kept, gaps between batches, the first above the segment's base), with
    batches larger than a scan's chunk: every offset, from below the base to past the end, finds the first batch whose
    last offset is at or above it, whether the segment still remembers its batches or must scan."""
    segment = Segment.create(tmp_path, 100, FileOps(), now_ms=0)
    segment.gaps_allowed = True
    next_offset = 103
    for n in range(300):
        batch = make_batch(1 + n % 3, value_size=25_000 if n % 50 == 7 else 60 + n % 200, tag=n)
        struct.pack_into(">q", batch, 0, next_offset)
        last = next_offset + read_batches(batch)[0][1].last_offset_delta
        segment.append(batch, last, 1_000 + n, 4096, now_ms=0)
        next_offset = last + 1 + (n % 4 == 0) * (n % 7)  # a gap after one batch in four
    if not active:
        segment.become_inactive()
    stored = [header for _, header in read_batches((tmp_path / f"{100:020d}.log").read_bytes())]
    assert max(header.size for header in stored) > SCAN_CHUNK_BYTES
    for offset in range(95, next_offset + 3):
        holding = next((h for h in stored if h.base_offset + h.last_offset_delta >= offset), None)
        found = segment.find_batch(offset)
        assert (None if found is None else found[1].base_offset) == (None if holding is None else holding.base_offset)
        if holding is not None:
            assert read_batches(segment.read(offset, 1))[0][1].base_offset == holding.base_offset
    segment.close()


def test_a_failed_fsync_is_recorded_before_the_other_files_of_its_round_are_synced(tmp_path: Path) -> None:
    """A round and a checkpoint may fsync duplicates of one open file, and the kernel reports a write-back error through
    it once: the side that saw it must have recorded it before the other side's fsync can return and be trusted."""

    class FirstFails(FileOps):
        def __init__(self) -> None:
            self.log: PartitionLog | None = None
            self.calls = 0
            self.recorded_when_second_ran: list[bool] = []

        def fsync(self, fd: int) -> None:
            self.calls += 1
            if self.calls == 1:
                raise OSError(5, "Input/output error")
            assert self.log is not None
            self.recorded_when_second_ran.append(self.log._fsync_failure is not None)
            super().fsync(fd)

    ops = FirstFails()
    log = PartitionLog.open(tmp_path / "t-0", CONFIG, file_ops=ops, fsync=False)
    try:
        ops.log = log
        active = log._segments[-1]
        fds = [(active.open_log_for_flush(), active.log_path), (active.open_log_for_flush(), active.log_path)]
        with pytest.raises(StorageError, match="Input/output error"):
            log._fsync_descriptors(fds, sync_directory=False)
        assert ops.recorded_when_second_ran == [True]
        with pytest.raises(StorageError, match="refuses writes"):
            fill(log, 1)
    finally:
        log.close()
