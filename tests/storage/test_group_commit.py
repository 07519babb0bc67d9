"""`group_commit`: fsync jobs run by one thread in batches, large batches in parallel chunks, each awaiter woken
only after its own job."""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from pathlib import Path

import pytest

from kafkalite.protocol.records import read_header
from kafkalite.storage import LogConfig, PartitionLog
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


pytestmark = pytest.mark.timeout(60)
