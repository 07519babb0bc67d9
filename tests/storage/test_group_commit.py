"""`group_commit`: fsync jobs run by one thread in batches, large batches in parallel chunks, each awaiter woken
only after its own job."""

from __future__ import annotations

import asyncio
import functools
import gc
import os
import signal
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import pytest

from kafkalite.protocol.records import read_header
from kafkalite.storage import LogConfig, PartitionLog, group_commit
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
