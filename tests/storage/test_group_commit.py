"""`group_commit`: fsync jobs run by one thread in batches, the jobs on one filesystem under one `syncfs`, large
batches in parallel chunks, each awaiter woken only after its own job."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import gc
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kafkalite.errors import StorageError
from kafkalite.protocol.records import read_header
from kafkalite.storage import LogConfig, PartitionLog, filesystem_sync, group_commit
from kafkalite.storage.file_ops import FileOps
from kafkalite.storage.group_commit import JOBS_PER_THREAD, run_fsync_job

from .logkit import make_batch


async def test_the_jobs_of_one_turn_run_one_after_another_in_the_fsync_thread() -> None:
    running = threading.Lock()
    overlapped: list[bool] = []
    threads: set[str] = set()

    def job() -> None:
        threads.add(threading.current_thread().name)
        overlapped.append(not running.acquire(blocking=False))
        time.sleep(0.002)
        running.release()

    await asyncio.gather(*(run_fsync_job(job) for _ in range(JOBS_PER_THREAD)))
    assert threads == {"kafkalite-fsync"}
    assert overlapped == [False] * JOBS_PER_THREAD


async def test_a_batch_larger_than_one_thread_takes_runs_its_chunks_in_parallel() -> None:
    met = threading.Barrier(2, timeout=5)  # passes only if the first job of two chunks run at the same time
    done: list[int] = []

    def job(index: int) -> None:
        if index in (0, JOBS_PER_THREAD):
            met.wait()
        done.append(index)

    await asyncio.gather(*(run_fsync_job(functools.partial(job, i)) for i in range(2 * JOBS_PER_THREAD + 3)))
    assert sorted(done) == list(range(2 * JOBS_PER_THREAD + 3))


async def test_a_failing_job_fails_only_its_own_awaiter() -> None:
    def bad() -> None:
        raise OSError("disk gone")

    results = await asyncio.gather(run_fsync_job(bad), run_fsync_job(lambda: None), return_exceptions=True)
    assert isinstance(results[0], OSError)
    assert results[1] is None


async def test_no_awaiter_resumes_before_its_job_returned() -> None:
    finished: list[bool] = []

    def slow() -> None:
        time.sleep(0.05)
        finished.append(True)

    await run_fsync_job(slow)
    assert finished == [True]


async def test_jobs_handed_over_while_a_batch_runs_form_the_next_batch() -> None:
    release = threading.Event()
    order: list[str] = []

    def first() -> None:
        release.wait(5)
        order.append("first")

    running = asyncio.ensure_future(run_fsync_job(first))
    await asyncio.sleep(0.05)  # `first` is running in the thread
    later = [asyncio.ensure_future(run_fsync_job(functools.partial(order.append, f"later-{n}"))) for n in range(3)]
    await asyncio.sleep(0.05)
    assert order == []  # the later jobs wait for the batch under way, they do not start beside it
    release.set()
    await asyncio.gather(running, *later)
    assert order == ["first", "later-0", "later-1", "later-2"]


def test_jobs_of_two_loops_each_complete_on_their_own_loop() -> None:
    seen: dict[str, int] = {}

    def on_loop(name: str) -> None:
        async def submit() -> None:
            loop_thread = threading.get_ident()
            await asyncio.gather(*(run_fsync_job(lambda: time.sleep(0.001)) for _ in range(5)))
            assert threading.get_ident() == loop_thread
            seen[name] = 5

        asyncio.run(submit())

    threads = [threading.Thread(target=on_loop, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert seen == {"a": 5, "b": 5}


async def test_eight_partition_logs_sync_in_one_batch(tmp_path: Path) -> None:
    logs = [PartitionLog.open(tmp_path / f"t-{n}", LogConfig()) for n in range(8)]
    try:
        await asyncio.gather(*(log.sync() for log in logs))  # the opening round
        for log in logs:
            batch = make_batch(3)
            log.append(batch, read_header(batch))
        await asyncio.gather(*(log.sync() for log in logs))
        for log in logs:
            assert log._synced_sequence == log._write_sequence
    finally:
        for log in logs:
            log.close()


class SharedJob:
    """A job `group_commit` may cover with one filesystem sync: it notes what happened to it in `seen`."""

    def __init__(
        self, name: str, key: tuple[object, int] | None, seen: list[str], *, sync: BaseException | bool = True
    ) -> None:
        self.name, self.key, self.seen, self.sync = name, key, seen, sync

    def __call__(self) -> None:
        self.seen.append(f"alone {self.name}")

    def filesystem_key(self) -> tuple[object, int] | None:
        return self.key

    def sync_filesystem(self) -> bool:
        self.seen.append(f"syncfs {self.key}")
        if isinstance(self.sync, BaseException):
            raise self.sync
        return self.sync

    def covered(self, error: BaseException | None) -> None:
        self.seen.append(f"covered {self.name}")
        if error is not None:
            raise RuntimeError(f"{self.name}: {error}")


async def test_jobs_on_one_filesystem_share_one_sync_and_the_rest_run_alone() -> None:
    seen: list[str] = []
    jobs = [
        SharedJob("a1", ("scope", 1), seen),
        SharedJob("b1", ("scope", 2), seen),  # alone on its filesystem: its own fsyncs
        SharedJob("a2", ("scope", 1), seen),
        SharedJob("n", None, seen),  # its file calls cannot sync a filesystem
        SharedJob("a3", ("scope", 1), seen),
    ]
    await asyncio.gather(*(run_fsync_job(job) for job in jobs), run_fsync_job(lambda: seen.append("plain")))
    assert seen == ["syncfs ('scope', 1)", "covered a1", "covered a2", "covered a3", "alone b1", "alone n", "plain"]


@pytest.mark.parametrize("failure", [OSError(5, "Input/output error"), MemoryError("no room")])
async def test_a_failed_filesystem_sync_fails_every_job_it_was_to_cover_and_no_other(failure: BaseException) -> None:
    seen: list[str] = []
    covered = [SharedJob(f"a{n}", ("scope", 1), seen, sync=failure) for n in range(3)]
    other = SharedJob("b", ("scope", 2), seen)
    results = await asyncio.gather(*(run_fsync_job(job) for job in [*covered, other]), return_exceptions=True)
    assert [str(result) for result in results[:3]] == [f"a{n}: {failure}" for n in range(3)]
    assert results[3] is None
    assert seen.count("syncfs ('scope', 1)") == 1
    assert "alone b" in seen


async def test_jobs_whose_filesystem_sync_is_not_available_run_alone() -> None:
    seen: list[str] = []
    jobs = [SharedJob(f"a{n}", ("scope", 1), seen, sync=False) for n in range(3)]
    await asyncio.gather(*(run_fsync_job(job) for job in jobs))
    assert seen == ["syncfs ('scope', 1)", "alone a0", "alone a1", "alone a2"]


async def test_a_job_that_cannot_name_its_filesystem_runs_alone() -> None:
    class Unnamed(SharedJob):
        def filesystem_key(self) -> tuple[object, int] | None:
            raise ValueError("no device")

    seen: list[str] = []
    await asyncio.gather(run_fsync_job(Unnamed("u", None, seen)), run_fsync_job(lambda: seen.append("plain")))
    assert seen == ["alone u", "plain"]


class CountingOps(FileOps):
    """The real calls, counted: `fsync`s by file name, and filesystem syncs; `check_written` fails for the files named
    in `unwritten` (a write-back error that another log's descriptor reported to `syncfs`)."""

    def __init__(self) -> None:
        self.fsyncs: list[str] = []
        self.filesystem_syncs = 0
        self.fail_filesystem_sync = False
        self.unwritten: set[Path] = set()

    def fsync(self, fd: int) -> None:
        self.fsyncs.append(os.readlink(f"/proc/self/fd/{fd}").rsplit("/", 1)[-1])
        super().fsync(fd)

    def sync_filesystem(self, fd: int) -> None:
        self.filesystem_syncs += 1
        if self.fail_filesystem_sync:
            raise OSError(5, "Input/output error")
        super().sync_filesystem(fd)

    def check_written(self, fd: int) -> None:
        if Path(os.readlink(f"/proc/self/fd/{fd}")).parent in self.unwritten:
            raise OSError(5, "Input/output error")
        super().check_written(fd)


def _syncfs_here() -> bool:
    if not Path("/proc/self/fd").is_dir():
        return False
    fd = os.open(tempfile.gettempdir(), os.O_RDONLY)
    try:
        return FileOps().device_for_syncfs(fd) is not None
    finally:
        os.close(fd)


needs_syncfs = pytest.mark.skipif(
    not _syncfs_here(), reason="syncfs stands in for fdatasync on Linux 5.17+ and local block filesystems only"
)


async def _append_to_each(logs: list[PartitionLog]) -> None:
    for log in logs:
        batch = make_batch(3)
        log.append(batch, read_header(batch))


@contextlib.asynccontextmanager
async def logs_written_since_sync(tmp_path: Path, ops: FileOps, count: int) -> AsyncIterator[list[PartitionLog]]:
    """`count` logs on `ops`, past their opening round, each with an append no round has covered yet."""
    logs = [PartitionLog.open(tmp_path / f"t-{n}", LogConfig(), file_ops=ops) for n in range(count)]
    try:
        await asyncio.gather(*(log.sync() for log in logs))
        await _append_to_each(logs)
        yield logs
    finally:
        for log in logs:
            log.close()


@needs_syncfs
async def test_the_rounds_of_eight_logs_in_one_batch_take_one_filesystem_sync_and_no_fsync(tmp_path: Path) -> None:
    ops = CountingOps()
    async with logs_written_since_sync(tmp_path, ops, 8) as logs:
        ops.fsyncs.clear()
        before = ops.filesystem_syncs
        await asyncio.gather(*(log.sync() for log in logs))
        assert ops.filesystem_syncs == before + 1
        assert ops.fsyncs == []
        assert all(log._synced_sequence == log._write_sequence for log in logs)
        await _append_to_each(logs[:1])  # one log alone in its batch: its own fdatasync
        await logs[0].sync()
        assert ops.filesystem_syncs == before + 1
        assert ops.fsyncs == ["00000000000000000000.log"]


@needs_syncfs
async def test_a_failed_filesystem_sync_stops_every_log_it_covered(tmp_path: Path) -> None:
    ops = CountingOps()
    async with logs_written_since_sync(tmp_path, ops, 3) as logs:
        ops.fail_filesystem_sync = True
        results = await asyncio.gather(*(log.sync() for log in logs), return_exceptions=True)
        assert all(isinstance(result, StorageError) and "syncfs" in str(result) for result in results), results
        for log in logs:
            with pytest.raises(StorageError, match="refuses writes"):
                await _append_to_each([log])


@needs_syncfs
async def test_a_write_back_error_of_one_file_fails_its_own_log_after_a_filesystem_sync(tmp_path: Path) -> None:
    ops = CountingOps()
    async with logs_written_since_sync(tmp_path, ops, 3) as logs:
        ops.unwritten.add(tmp_path / "t-1")
        before = ops.filesystem_syncs
        results = await asyncio.gather(*(log.sync() for log in logs), return_exceptions=True)
        assert ops.filesystem_syncs == before + 1
        assert results[0] is None
        assert results[2] is None
        assert isinstance(results[1], StorageError)
        assert "write-back of" in str(results[1])
        with pytest.raises(StorageError, match="refuses writes"):
            await _append_to_each([logs[1]])
        await _append_to_each([logs[0], logs[2]])  # the others go on


@needs_syncfs
async def test_rounds_run_their_own_fsyncs_where_the_kernel_refuses_syncfs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(fd: int) -> None:
        raise filesystem_sync.SyncfsUnavailable(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(filesystem_sync, "sync_filesystem", refused)
    ops = CountingOps()
    async with logs_written_since_sync(tmp_path, ops, 3) as logs:
        ops.fsyncs.clear()
        await asyncio.gather(*(log.sync() for log in logs))
        assert ops.fsyncs == ["00000000000000000000.log"] * 3
        assert all(log._synced_sequence == log._write_sequence for log in logs)


def test_a_file_ops_that_injects_fsync_faults_keeps_its_fsyncs(tmp_path: Path) -> None:
    class FailingFsync(FileOps):
        def fsync(self, fd: int) -> None:
            raise OSError(5, "Input/output error")

    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        assert FailingFsync().device_for_syncfs(fd) is None
    finally:
        os.close(fd)


def test_a_batch_whose_loop_closed_is_dropped_and_the_thread_serves_on() -> None:
    loop = asyncio.new_event_loop()
    release = threading.Event()

    def job() -> None:
        release.wait(5)

    async def submit() -> None:
        pending = asyncio.ensure_future(run_fsync_job(job))
        await asyncio.sleep(0.01)  # the batch is handed to the thread
        pending.cancel()

    loop.run_until_complete(submit())
    loop.close()
    release.set()  # the job finishes after its loop is gone: nothing escapes the thread

    async def after() -> bool:
        ran: list[bool] = []
        await asyncio.wait_for(run_fsync_job(lambda: ran.append(True)), 5)
        return ran == [True]

    assert asyncio.run(after())


async def test_a_batch_whose_helpers_cannot_start_runs_its_chunks_in_the_fsync_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Refusing:
        def submit(self, *args: Any) -> None:
            raise RuntimeError("cannot schedule new futures after interpreter shutdown")

    monkeypatch.setattr(group_commit, "_helper_pool", lambda state: Refusing())
    ran: list[int] = []
    jobs = [functools.partial(ran.append, n) for n in range(3 * JOBS_PER_THREAD)]
    await asyncio.wait_for(asyncio.gather(*(run_fsync_job(job) for job in jobs)), 10)
    assert sorted(ran) == list(range(3 * JOBS_PER_THREAD))


async def test_a_batch_that_fails_outside_its_jobs_fails_its_awaiters_instead_of_leaving_them_waiting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(state: Any, handed: Any) -> None:
        raise MemoryError("no room to run the batch")

    with monkeypatch.context() as patched:
        patched.setattr(group_commit, "_run_batch", broken)
        results = await asyncio.wait_for(
            asyncio.gather(run_fsync_job(lambda: None), run_fsync_job(lambda: None), return_exceptions=True), 10
        )
    assert all(isinstance(result, MemoryError) for result in results)
    ran: list[bool] = []
    await asyncio.wait_for(run_fsync_job(lambda: ran.append(True)), 10)  # the thread serves on
    assert ran == [True]


def test_a_loop_that_ran_fsync_jobs_is_not_kept_alive() -> None:
    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

    async def once() -> None:
        loops.append(weakref.ref(asyncio.get_running_loop()))
        await run_fsync_job(lambda: None)

    for _ in range(3):
        asyncio.run(once())
    deadline = time.monotonic() + 5  # the fsync thread lets go of its last batch just after completing it
    while gc.collect() >= 0 and any(ref() is not None for ref in loops) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [ref() for ref in loops] == [None, None, None]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_runs_large_batches_with_threads_of_its_own() -> None:
    async def batch() -> None:
        await asyncio.wait_for(asyncio.gather(*(run_fsync_job(lambda: None) for _ in range(3 * JOBS_PER_THREAD))), 5)

    asyncio.run(batch())  # the parent's fsync thread and helpers exist
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if its own batch completes
        signal.alarm(10)
        try:
            asyncio.run(batch())
        except BaseException:
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_jobs_handed_over_are_finished_before_the_interpreter_exits(tmp_path: Path) -> None:
    marker = tmp_path / "synced"
    script = f"""
import asyncio, pathlib, time
from kafkalite.storage.group_commit import run_fsync_job

def slow():
    time.sleep(0.5)
    pathlib.Path({str(marker)!r}).write_text("done")

async def main():
    job = asyncio.ensure_future(run_fsync_job(slow))
    await asyncio.sleep(0.05)  # handed over to the fsync thread, then the program ends without waiting for it
    job.cancel()

asyncio.run(main())
"""
    subprocess.run([sys.executable, "-c", script], check=True, timeout=30)
    assert marker.read_text() == "done"


pytestmark = pytest.mark.timeout(60)
